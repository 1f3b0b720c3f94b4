"""The one frozen config object that describes a whole run (Jepsen's test map).

It is saved as RUN_DIR/spec.json; `analyze` and `report` read it back from there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import TrialError

ANOMALY_TYPES = (
    "lost-write",
    "unseen",
    "vanished-read",
    "duplicate",
    "inconsistent-offsets",
    "unexpected",
    "aborted-read",
    "reorder",
    "int-nonmonotonic-send",
    "torn-txn",
    "precommitted-read",
    "nonmonotonic-poll",
    "int-nonmonotonic-poll",
    "poll-skip",
    "int-poll-skip",
    "group-missed",
    "group-redelivered",
    "eos-output-lost",
    "eos-output-duplicate",
)

NEMESIS_PACKAGES = (
    "kill",
    "stop",
    "pause",
    "bounce",
    "partition",
    "client-partition",
    "degrade",
    "slow-follower",
    "wipe",
    "kill-leader",
    "isolate-broker",
    "unclean-failover",
)
TARGET_ROLES = ("random", "leader", "followers", "controller", "minority", "majority", "all")
PARTITION_TOPOLOGIES = (
    "isolate-random",
    "isolate-leader",
    "isolate-controller",
    "halves",
    "majorities-ring",
    "bridge",
    "one-way",
)
TOXICS = ("latency", "bandwidth", "slicer", "reset_peer", "limit_data", "slow_close", "timeout")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# Shorter timeouts than Kafka's defaults so that faults show their effect within
# seconds instead of minutes; every one can be overridden per run.
DEFAULT_BROKER_CONFIG: dict[str, str] = {
    "replica.lag.time.max.ms": "10000",
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "auto.create.topics.enable": "false",
}


class ClusterSpec(_Frozen):
    brokers: int = Field(3, ge=3, le=7)
    kafka_version: str = Field(
        "4",
        pattern=r"^\d+(\.\d+){0,2}$",
        description="exact version (4.1.1) or a prefix (4, 3.9): newest that resolves",
    )
    kafka_image: str | None = Field(
        None, description="use this image instead of building one (apache/kafka contract)"
    )
    jre_base_image: str | None = Field(
        None, description="base image with a Java 17+ runtime; built from Debian if unset"
    )
    toxiproxy_version: str = "2.12.0"
    broker_heap: str = "512m"
    broker_config: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_BROKER_CONFIG))
    startup_timeout_s: float = Field(180.0, gt=0)
    client_lanes: int = Field(
        1,
        ge=1,
        le=8,
        description="client listeners per broker, each behind its own proxy: worker i uses "
        "lane i mod lanes, so one client can be cut off a broker alone",
    )
    host_port_base: int | None = Field(
        None,
        ge=1024,
        le=65000,
        description="fixed host ports: clients at BASE+j-1, Toxiproxy APIs at BASE+100+j-1; "
        "unset = free ports chosen by Docker",
    )


class TopicSpec(_Frozen):
    name: str = Field("trial", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    partitions: int = Field(3, ge=1, le=1000)
    replication_factor: int = Field(3, ge=1)
    min_insync_replicas: int = Field(2, ge=1)
    unclean_leader_election: bool = False


class ProducerSpec(_Frozen):
    acks: Literal["0", "1", "all"] = "all"
    idempotence: bool = True
    retries: int = Field(2147483647, ge=0)
    max_in_flight: int = Field(5, ge=1)
    delivery_timeout_ms: int = Field(30000, ge=1000)
    request_timeout_ms: int = Field(5000, ge=100)
    linger_ms: int = Field(5, ge=0)
    batch_size: int = Field(16384, ge=1)
    compression_type: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    keyed: bool = Field(False, description="send with a key and let the default partitioner choose")
    transactional: bool = Field(False, description="each op is one transaction (f=txn)")
    txn_partitions: int = Field(3, ge=1, description="partitions each transaction writes")
    abort_fraction: float = Field(0.0, ge=0, le=1, description="transactions aborted on purpose")
    txn_delay_ms: int = Field(0, ge=0, description="pause inside each transaction")
    transaction_timeout_ms: int = Field(60000, ge=1000)
    workers: int = Field(3, ge=1, le=64)
    batch: int = Field(10, ge=1, le=10000, description="values sent per send op")
    crash_fraction: float = Field(
        0.0, ge=0, le=1, description="ops during which the client crashes, sends in flight"
    )
    resend_unacked: bool = Field(
        False,
        description="after a restart the application re-sends what its last op left "
        "unknown (claim C9)",
    )
    txn_poll: bool = Field(
        False, description="each transaction reads its own partitions before it ends"
    )

    @model_validator(mode="after")
    def _idempotence_needs(self) -> ProducerSpec:
        if self.transactional and not self.idempotence:
            raise ValueError("transactions require idempotence; set producer.idempotence=true")
        if self.transactional and self.delivery_timeout_ms > self.transaction_timeout_ms:
            raise ValueError(
                "delivery_timeout_ms must not exceed transaction_timeout_ms (librdkafka rule)"
            )
        if self.idempotence and self.acks != "all":
            raise ValueError(
                "idempotence requires acks=all; set producer.acks=all or idempotence=false"
            )
        if self.txn_poll and not self.transactional:
            raise ValueError("txn_poll needs producer.transactional=true")
        if self.idempotence and self.max_in_flight > 5:
            raise ValueError(
                "idempotence allows at most 5 in-flight requests; lower producer.max_in_flight"
            )
        return self

    def client_config(self) -> dict[str, Any]:
        return {
            "acks": self.acks,
            "enable.idempotence": self.idempotence,
            "retries": self.retries,
            "max.in.flight.requests.per.connection": self.max_in_flight,
            "delivery.timeout.ms": self.delivery_timeout_ms,
            "request.timeout.ms": self.request_timeout_ms,
            "linger.ms": self.linger_ms,
            "batch.size": self.batch_size,
            "compression.type": self.compression_type,
        }


class ConsumerSpec(_Frozen):
    """Consumers that poll during the fault phase.

    assign: every partition from the start, no group, no commits.
    subscribe: one consumer group; each poll's records are "processed" (a history
    op) and offsets committed in the chosen style; workers crash at the chosen point.
    """

    workers: int = Field(0, ge=0, le=32)
    isolation_level: Literal["read_committed", "read_uncommitted"] = "read_committed"
    batch: int = Field(500, ge=1, le=100000, description="records per poll op at most")
    mode: Literal["assign", "subscribe"] = "assign"
    commit: Literal["auto", "after-process", "before-process"] = "after-process"
    crash_fraction: float = Field(0.0, ge=0, le=1, description="polls followed by a crash")
    crash_point: Literal["before-process", "before-commit"] = Field(
        "before-process",
        description="before-process: records polled (and, by style, committed) but not "
        "processed; before-commit: processed but not committed",
    )
    session_timeout_ms: int = Field(10000, ge=1000)
    max_poll_interval_ms: int = Field(300000, ge=1000)
    leave_fraction: float = Field(
        0.0, ge=0, le=1, description="polls after which the member leaves the group"
    )
    rejoin_after_s: float = Field(3.0, ge=0, description="how long a member stays away")
    stall_fraction: float = Field(
        0.0,
        ge=0,
        le=1,
        description="processed polls followed by a stall past max.poll.interval.ms, "
        "before the commit (claim C18)",
    )

    @model_validator(mode="after")
    def _group_only(self) -> ConsumerSpec:
        if self.mode == "assign" and (
            self.crash_fraction or self.leave_fraction or self.stall_fraction
        ):
            raise ValueError("crashes, leaves and stalls need a group; set consumer.mode=subscribe")
        if self.max_poll_interval_ms < self.session_timeout_ms:
            raise ValueError("max_poll_interval_ms must be >= session_timeout_ms (librdkafka rule)")
        return self

    @property
    def stall_s(self) -> float:
        return self.max_poll_interval_ms / 1000 + 3


class CopierSpec(_Frozen):
    """Consume-transform-produce copiers from the topic to TOPIC-out, exactly once."""

    workers: int = Field(0, ge=0, le=8)
    crash_fraction: float = Field(0.0, ge=0, le=1, description="copies that crash before commit")
    batch: int = Field(50, ge=1, le=10000)


class DegradeSpec(_Frozen):
    """The toxic that `degrade` and `slow-follower` add (Toxiproxy's attribute names)."""

    type: str = "latency"
    attributes: dict[str, int] = Field(default_factory=lambda: {"latency": 15000, "jitter": 0})
    stream: Literal["upstream", "downstream"] = "upstream"
    links: Literal["client", "follower-replication"] = "client"

    @model_validator(mode="after")
    def _known(self) -> DegradeSpec:
        if self.type not in TOXICS:
            raise ValueError(f"unknown toxic {self.type}; choose from {', '.join(TOXICS)}")
        return self


class NemesisSpec(_Frozen):
    faults: tuple[str, ...] = ("kill-leader", "isolate-broker")
    fault_s: float = Field(8.0, gt=0, description="how long each fault lasts before its heal")
    quiet_s: float = Field(6.0, ge=0, description="healthy time between faults")
    target_partition: int = Field(0, ge=0)
    targets: tuple[str, ...] = Field(
        ("random", "leader", "controller"), description="roles process faults pick from"
    )
    topologies: tuple[str, ...] = Field(PARTITION_TOPOLOGIES, description="for `partition`")
    partition_mode: Literal["drop", "reject"] = "drop"
    client_scope: Literal["all", "one"] = Field(
        "all", description="client-partition cuts every client, or one client's lane"
    )
    degrade: DegradeSpec = DegradeSpec()

    @model_validator(mode="after")
    def _known(self) -> NemesisSpec:
        for field_name, values, known in (
            ("nemesis", self.faults, NEMESIS_PACKAGES),
            ("target role", self.targets, TARGET_ROLES),
            ("topology", self.topologies, PARTITION_TOPOLOGIES),
        ):
            unknown = [v for v in values if v not in known]
            if unknown:
                raise ValueError(
                    f"unknown {field_name} {', '.join(unknown)}; choose from {', '.join(known)}"
                )
        if not self.targets or not self.topologies:
            raise ValueError("nemesis.targets and nemesis.topologies must not be empty")
        return self


class DrainSpec(_Frozen):
    timeout_s: float = Field(90.0, gt=0)
    settle_s: float = Field(5.0, gt=0, description="stop a partition at its end after this")


class CheckSpec(_Frozen):
    allowed: tuple[str, ...] = ()
    spark_master: str = "local[*]"

    @model_validator(mode="after")
    def _known(self) -> CheckSpec:
        unknown = [a for a in self.allowed if a not in ANOMALY_TYPES]
        if unknown:
            raise ValueError(
                f"unknown anomaly type {', '.join(unknown)}; choose from {', '.join(ANOMALY_TYPES)}"
            )
        return self


class RunSpec(_Frozen):
    name: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    seed: int = 0
    duration_s: float = Field(60.0, gt=0, description="length of the fault phase")
    runs_dir: str = "runs"
    cluster: ClusterSpec = ClusterSpec()
    topic: TopicSpec = TopicSpec()
    producer: ProducerSpec = ProducerSpec()
    consumer: ConsumerSpec = ConsumerSpec()
    copier: CopierSpec = CopierSpec()
    nemesis: NemesisSpec = NemesisSpec()
    drain: DrainSpec = DrainSpec()
    check: CheckSpec = CheckSpec()

    @model_validator(mode="after")
    def _fits_cluster(self) -> RunSpec:
        if self.topic.replication_factor > self.cluster.brokers:
            raise ValueError(
                f"topic.replication_factor={self.topic.replication_factor} exceeds "
                f"cluster.brokers={self.cluster.brokers}; lower it or add brokers"
            )
        if self.topic.min_insync_replicas > self.topic.replication_factor:
            raise ValueError("topic.min_insync_replicas exceeds topic.replication_factor")
        if self.nemesis.target_partition >= self.topic.partitions:
            raise ValueError("nemesis.target_partition must be below topic.partitions")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def build_spec(data: dict[str, Any], source: str = "config") -> RunSpec:
    """Validate raw config; a bad value becomes one line naming the field and the fix."""
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        msg = first["msg"].removeprefix("Value error, ")
        raise TrialError(
            f"bad {source} value at {where}: {msg}",
            f"correct {where} in the config file or its command-line flag",
        ) from None


def load_spec(
    path: str | Path | None,
    overrides: dict[str, Any] | None = None,
    base: dict[str, Any] | None = None,
) -> RunSpec:
    """base (a preset) < the config file < overrides (flags)."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise TrialError(f"config file {p} does not exist", "pass an existing YAML/JSON file")
        try:
            loaded = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            first = str(e).splitlines()[0]
            raise TrialError(
                f"config file {p} is not valid YAML/JSON: {first}", "fix its syntax"
            ) from None
        if loaded is not None and not isinstance(loaded, dict):
            raise TrialError(f"config file {p} must hold a mapping", "write key: value pairs")
        data = loaded or {}
    merged = _merge(_merge(base or {}, data), overrides or {})
    return build_spec(merged, source=str(path or "flag"))


def read_saved_spec(run_dir: Path) -> RunSpec:
    p = run_dir / "spec.json"
    if not p.is_file():
        raise TrialError(f"{p} is missing", "point at a directory written by `kafka-trial run`")
    return build_spec(json.loads(p.read_text()), source=str(p))
