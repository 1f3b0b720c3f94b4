"""Looking at Kafka from the host: the admin client, metadata, partitions and their
ISR, broker registration, and the active KRaft controller.

The harness reaches brokers over the client links, which client faults (degrade,
client-partition) break on purpose; metadata then falls back to each broker on its
own, through one cached admin client per broker.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConfigResource, NewTopic
from docker.errors import APIError, NotFound
from kafka_trial.cluster.brokers import Broker
from kafka_trial.cluster.control import PartitionState
from kafka_trial.cluster.naming import QUORUM_STATE
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log


def _quiet_logger() -> logging.Logger:
    lg = logging.getLogger("kafka-trial.librdkafka")
    lg.addHandler(logging.NullHandler())
    lg.propagate = False
    return lg


def _new_admin(bootstrap: str, timeout_ms: int, extra: dict[str, Any]) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "socket.timeout.ms": timeout_ms,
            "log_level": 0,
            "logger": _quiet_logger(),
            **extra,
        }
    )


class NodeProbe(Protocol):
    """What observing needs of the nodes beyond the admin API, whatever the cluster's
    kind: a node's own client address, whether its process runs, why it ended, and
    its quorum-state file."""

    def ids(self) -> list[int]: ...

    def direct_address(self, node: int) -> str | None: ...

    def running(self, node: int) -> bool | None:
        """True or False as seen on the node; None where the kind cannot see it."""
        ...

    def failure(self, node: int) -> str | None: ...

    def quorum_state(self, node: int) -> str | None: ...


@dataclass
class DockerNodes:
    """The Docker kind's nodes: containers, read through the engine."""

    brokers: dict[int, Broker]

    def ids(self) -> list[int]:
        return sorted(self.brokers)

    def direct_address(self, node: int) -> str | None:
        return f"127.0.0.1:{self.brokers[node].client_ports[0]}"

    def running(self, node: int) -> bool | None:
        return self.brokers[node].status() == "running"

    def failure(self, node: int) -> str | None:
        b = self.brokers[node]
        if b.status() not in ("exited", "dead", "removed"):
            return None
        tail = b.container.logs(tail=15).decode(errors="replace").strip().splitlines()
        last = next(
            (ln for ln in reversed(tail) if "ERROR" in ln or "Exception" in ln),
            tail[-1] if tail else "(no output)",
        )
        return f"broker {b.node_id} exited: {last[:300]}"

    def quorum_state(self, node: int) -> str | None:
        try:
            res = self.brokers[node].exec_running(["cat", QUORUM_STATE])
        except (APIError, NotFound):
            return None
        if res is None or res.exit_code != 0:
            return None
        return res.output.decode(errors="replace")


@dataclass
class Observer:
    nodes: NodeProbe
    expected_brokers: int
    bootstrap: Callable[[], str]
    # Client settings every admin client takes too (security: SASL, SSL).
    client_config: dict[str, Any] = field(default_factory=dict)
    _admin: AdminClient | None = field(default=None, init=False)
    # One direct client per broker, kept: a fresh client per failed lookup would
    # pay a new connection (and its timeouts) every time a client link is faulted.
    _direct: dict[int, AdminClient] = field(default_factory=dict, init=False)

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = _new_admin(self.bootstrap(), 5000, self.client_config)
        return self._admin

    def delete_topics(self, names: Sequence[str], timeout_s: float = 30) -> None:
        """Best effort: a warm cluster sheds a finished run's topics, so their replicas
        stop fetching while the next run's faults strike; a user's cluster gets its run
        topics back. A topic never made is no failure; any other is said, not raised."""
        if not names:
            return
        futures = self.admin().delete_topics(list(names), operation_timeout=timeout_s)
        for name, fut in futures.items():
            try:
                fut.result(timeout_s)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    log(f"could not delete topic {name}: {e}")
            except Exception as e:  # the next run uses other names; a user's cluster keeps it
                log(f"could not delete topic {name}: {e}")

    def close(self) -> None:
        self._admin = None
        self._direct.clear()

    def metadata(self, topic: str | None, timeout_s: float) -> ClusterMetadata:
        try:
            return self.admin().list_topics(topic, timeout=timeout_s)
        except KafkaException as first:
            for j in self.nodes.ids():
                address = self.nodes.direct_address(j)
                if address is None:
                    continue
                if j not in self._direct:
                    self._direct[j] = _new_admin(address, 3000, self.client_config)
                try:
                    return self._direct[j].list_topics(topic, timeout=3)
                except KafkaException:
                    continue
            raise first

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        return partition_states(self.metadata(topic, timeout_s), topic)

    def leader_of(self, topic: str, partition: int) -> int | None:
        try:
            return self.partitions(topic).get(partition, PartitionState(None, (), ())).leader
        except KafkaException:
            return None

    def in_sync(self, topic: str) -> bool:
        try:
            parts = self.partitions(topic)
        except KafkaException:
            return False
        return bool(parts) and all(
            s.leader is not None and set(s.isr) == set(s.replicas) for s in parts.values()
        )

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.in_sync(topic):
                return True
            time.sleep(0.5)
        return False

    def _broker_failure(self) -> str | None:
        for j in self.nodes.ids():
            failure = self.nodes.failure(j)
            if failure:
                return failure
        return None

    def await_registered(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            failure = self._broker_failure()
            if failure:
                raise TrialError(failure, "read logs/kafka-N.log in the run directory")
            try:
                md = self.admin().list_topics(timeout=5)
                if len(md.brokers) == self.expected_brokers:
                    return
                last = f"{len(md.brokers)} of {self.expected_brokers} brokers registered"
            except KafkaException as e:
                last = str(e)
            time.sleep(1)
        raise TrialError(
            f"brokers did not all register within {timeout_s:.0f}s ({last})",
            "read logs/kafka-N.log in the run directory, or raise cluster.startup_timeout_s",
        )

    def active_controller(self) -> int | None:
        """The KRaft quorum leader, from the quorum-state file of every running node.

        Clients cannot ask for it (brokers report a random broker as "controller" in
        KRaft), but each node persists its view of the leader and epoch there; the
        highest epoch wins.
        """
        best: tuple[int, int] | None = None
        for j in self.nodes.ids():
            text = self.nodes.quorum_state(j)
            if text is None:
                continue
            try:
                st = json.loads(text)
            except ValueError:
                continue
            leader, epoch = int(st.get("leaderId", -1)), int(st.get("leaderEpoch", -1))
            if leader >= 0 and (best is None or epoch > best[1]):
                best = (leader, epoch)
        return None if best is None else best[0]

    # --- administration ---------------------------------------------------------

    def create_topic(self, topic: TopicSpec) -> None:
        config = {
            "min.insync.replicas": str(topic.min_insync_replicas),
            "unclean.leader.election.enable": str(topic.unclean_leader_election).lower(),
        }
        for key, value in (
            ("flush.messages", topic.flush_messages),
            ("retention.ms", topic.retention_ms),
            ("segment.ms", topic.segment_ms),
        ):
            if value is not None:
                config[key] = str(value)
        # librdkafka can drop a request in flight while it swaps its bootstrap
        # connections for the brokers it learned (_DESTROY_BROKER): that, and a
        # transport error, are retried; a repeat that finds the topic is success.
        transient = {KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._TIMED_OUT}
        for attempt in range(3):
            fut = self.admin().create_topics(
                [NewTopic(topic.name, topic.partitions, topic.replication_factor, config=config)],
                operation_timeout=30,
            )
            try:
                fut[topic.name].result(60)
                return
            except KafkaException as e:
                code = e.args[0].code()
                if attempt and code == KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if code not in transient or attempt == 2:
                    raise TrialError(
                        f"could not create topic {topic.name}: {e}", "check the topic settings"
                    ) from None
                time.sleep(1)

    def set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        res = ConfigResource("topic", topic, set_config=config)
        for fut in self.admin().alter_configs([res]).values():
            fut.result(30)

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> None:
        kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
        self.admin().elect_leaders(kind, [TopicPartition(topic, partition)]).result(15)


def partition_states(md: ClusterMetadata, topic: str) -> dict[int, PartitionState]:
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return {}
    return {
        p.id: PartitionState(p.leader if p.leader >= 0 else None, tuple(p.replicas), tuple(p.isrs))
        for p in t.partitions.values()
    }
