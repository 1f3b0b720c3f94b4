"""The reassignment verbs of `control.ClusterControl` for any cluster whose brokers
kafka-trial reaches as a client: the move through kafka-trial's Java admin tool (the
Python client has no reassignment API) and the replication throttle through the
Admin API's configs. The Docker and SSH kinds share them; only how each finds the
tool differs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient
from kafka_trial.cluster import throttle
from kafka_trial.cluster.admin_tool import AdminTool


@dataclass(frozen=True)
class Reassignment:
    bootstrap: Callable[[], str]
    admin: Callable[[], AdminClient]
    tool: Callable[[], AdminTool]

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        order = ",".join(str(r) for r in replicas)
        self.tool().call(self.bootstrap(), "reassign", topic, str(partition), order)

    def reassignments(self, topic: str) -> dict[int, dict[str, list[int]]]:
        found = self.tool().call(self.bootstrap(), "reassignments", topic)
        return {int(p): r for p, r in found.items()}

    def set_throttle(
        self, topic: str, rate: int, brokers: list[int], leader: str, follower: str
    ) -> None:
        throttle.set_throttle(self.admin(), topic, rate, brokers, leader, follower)

    def clear_throttle(self, topic: str, brokers: list[int]) -> None:
        throttle.clear_throttle(self.admin(), topic, brokers)

    def throttle_configs(self, topic: str, brokers: list[int]) -> dict[str, dict[str, str]]:
        return throttle.throttle_configs(self.admin(), topic, brokers)


class Reassigns:
    """ClusterControl's reassignment verbs for a cluster kind that holds its
    `Reassignment` as `moves`."""

    moves: Reassignment

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        self.moves.reassign(topic, partition, replicas)

    def reassignments(self, topic: str) -> dict[int, dict[str, list[int]]]:
        return self.moves.reassignments(topic)

    def set_throttle(
        self, topic: str, rate: int, brokers: list[int], leader: str, follower: str
    ) -> None:
        self.moves.set_throttle(topic, rate, brokers, leader, follower)

    def clear_throttle(self, topic: str, brokers: list[int]) -> None:
        self.moves.clear_throttle(topic, brokers)

    def throttle_configs(self, topic: str, brokers: list[int]) -> dict[str, dict[str, str]]:
        return self.moves.throttle_configs(topic, brokers)
