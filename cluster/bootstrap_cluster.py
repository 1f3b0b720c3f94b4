"""`cluster.kind: bootstrap`, observer mode: a cluster known only by its bootstrap
address, which kafka-trial may not fault. The workloads run and the checks judge as
on any kind; faults come from elsewhere (a rolling upgrade, a maintenance window, the
team's own chaos tool) and are marked on the timeline with `kafka-trial mark`.

It implements the observing half of ClusterControl; every fault verb refuses, and
spec validation refuses the fault packages before a run (harness/spec.py)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kafka_trial.cluster.control import PartitionState
from kafka_trial.cluster.observe import Observer
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.contracts.errors import TrialError


class ObserverOnly(RuntimeError):
    """A fault verb on a cluster that kafka-trial only observes."""


def _refuse(*_: Any, **__: Any) -> Any:
    raise ObserverOnly("cluster.kind bootstrap is observed, never faulted, by kafka-trial")


@dataclass
class MetadataNodes:
    """The NodeProbe of a cluster seen only through its metadata: the ids it reports,
    and nothing of the processes behind them."""

    observe: Observer | None = None
    _ids: list[int] = field(default_factory=list)

    def ids(self) -> list[int]:
        return list(self._ids)

    def direct_address(self, node: int) -> str | None:
        return None

    def running(self, node: int) -> bool | None:
        return None

    def failure(self, node: int) -> str | None:
        return None

    def quorum_state(self, node: int) -> str | None:
        return None


@dataclass
class BootstrapCluster:
    spec: ClusterSpec
    address: str
    client_config: dict[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))

    def __post_init__(self) -> None:
        self.probe = MetadataNodes()
        self.observe = Observer(self.probe, 1, lambda: self.address, self.client_config)

    @property
    def node_ids(self) -> list[int]:
        return self.probe.ids()

    @property
    def brokers(self) -> dict[int, None]:
        # Nothing to heal or start: the teardown's heal-all is for faults kafka-trial made.
        return {}

    @property
    def client_lanes(self) -> int:
        return 1

    @property
    def bootstrap(self) -> str:
        return self.address

    def bootstrap_for(self, lane: int) -> str:
        return self.address

    def describe(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "kind": "bootstrap", "bootstrap": [self.address]}

    def start(self) -> None:
        """The address answers with the cluster's brokers, or one line saying it does not."""
        self.probe._ids = answering_brokers(self.address, self.client_config)

    def await_registered(self, timeout_s: float) -> None:
        return None  # the cluster is the user's: whatever registered is the cluster

    def create_topic(self, topic: TopicSpec) -> None:
        self.observe.create_topic(topic)

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        return self.observe.await_in_sync(topic, timeout_s)

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        return self.observe.partitions(topic, timeout_s)

    def active_controller(self) -> int | None:
        return None  # clients cannot ask a KRaft cluster for it

    def admin(self) -> AdminClient:
        return self.observe.admin()

    def delete_topics(self, names: Sequence[str], timeout_s: float = 30) -> None:
        self.observe.delete_topics(names, timeout_s)

    def engine_alive(self) -> bool:
        return True

    def collect_logs(self, dest: Path, since: float | None = None) -> None:
        return None  # the brokers' logs are the operator's, out of reach

    def heal_all(self) -> None:
        return None

    def teardown(self) -> None:
        self.observe.close()

    kill_node = stop_node = start_node = pause_node = resume_node = _refuse
    wipe_node = corrupt_segment = lose_unfsynced = fill_disk = free_disk = _refuse
    set_clock = strobe_clock = cut = uncut = add_toxic = remove_toxic = _refuse
    elect_leader = _refuse


def answering_brokers(
    address: str, client_config: dict[str, Any], timeout_s: float = 10
) -> list[int]:
    """The broker ids the cluster at `address` reports, or a one-line TrialError."""
    admin = AdminClient(
        {"bootstrap.servers": address, "socket.timeout.ms": 5000, "log_level": 0, **client_config}
    )
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(timeout=5)
            if md.brokers:
                return sorted(md.brokers)
        except KafkaException as e:
            last = str(e.args[0]) if e.args else str(e)
        time.sleep(1)
    raise TrialError(
        f"the bootstrap address {address} does not answer ({last[:200]})",
        "check --bootstrap HOST:PORT, and client.security settings if the cluster needs them",
    )
