"""The cluster's settings: brokers, images, ports, and the topics a run creates."""

from __future__ import annotations

from typing import Any, Literal

from kafka_trial.contracts.settings import Frozen
from pydantic import Field, field_validator, model_validator

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


# A broker in a trial lives for seconds to minutes between kills, on a machine its
# clients and the analysis share; C2's compiles rarely pay back in that time
# (docs/findings.md, "The brokers' JVM compiles with C1 only"). Kafka's behaviour
# does not change with it, only how fast its code runs.
BROKER_JVM_OPTS = "-XX:TieredStopAtLevel=1"


# KRaft without ZooKeeper is production-ready from 3.3 (KIP-833); the Docker kind's
# brokers run only KRaft, so an older version cannot start here at all.
MIN_KRAFT_VERSION = (3, 3)

# KIP-853: a quorum whose voters change while it runs (controller.quorum.bootstrap.
# servers, kafka-storage format --initial-controllers, Admin.addRaftVoter).
MIN_DYNAMIC_QUORUM = (3, 9)


class ClusterSpec(Frozen):
    kind: Literal["docker", "ssh", "bootstrap"] = Field(
        "docker",
        description="docker: a cluster kafka-trial builds; ssh: the user's nodes, from an "
        "inventory (--inventory); bootstrap: observer mode, only an address (--bootstrap)",
    )
    inventory: str | None = Field(None, description="cluster.kind ssh: the inventory file")
    bootstrap: str | None = Field(
        None,
        pattern=r"^[^,\s]+:\d+(,[^,\s]+:\d+)*$",
        description="cluster.kind bootstrap: HOST:PORT[,HOST:PORT...]",
    )
    keep_topics: bool = Field(
        False,
        description="ssh and bootstrap kinds: keep the run's topics (uniquely named) "
        "instead of deleting them after the run",
    )
    brokers: int = Field(3, ge=1, le=7)
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
    broker_jvm_opts: str = Field(
        BROKER_JVM_OPTS,
        description="each broker's extra JVM options (KAFKA_OPTS, as in the official image); "
        'the default compiles with C1 only, "" leaves the JVM\'s own JIT',
    )
    broker_config: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_BROKER_CONFIG),
        description="broker settings on top of the harness defaults (DEFAULT_BROKER_CONFIG); "
        "a key given here replaces only that default",
    )
    startup_timeout_s: float = Field(180.0, gt=0)
    client_lanes: int = Field(
        1,
        ge=1,
        le=8,
        description="client listeners per broker, each behind its own proxy: worker i uses "
        "lane i mod lanes, so one client can be cut off a broker alone",
    )
    storage: Literal["plain", "writeback"] = Field(
        "plain",
        description="plain: the data directory is a Docker volume, as always. writeback: "
        "kt-lazyfs (lazyfs/) is mounted over it and keeps what was not fsynced in its own "
        "memory, so storage faults (lose-unfsynced, enospc) can act on it; the containers "
        "then get /dev/fuse and CAP_SYS_ADMIN",
    )
    clock: Literal["real", "faketime"] = Field(
        "real",
        description="real: the brokers read the host's clock, as always. faketime: "
        "libfaketime is preloaded into each broker's JVM, its wall clock offset by what "
        "a file in the container says (0 until a clock fault changes it; the monotonic "
        "clock is never faked), so clock faults can act on it",
    )
    quorum: Literal["static", "dynamic"] = Field(
        "static",
        description="static: the controllers are a fixed voter set "
        "(controller.quorum.voters), as always. dynamic: KIP-853's quorum "
        "(controller.quorum.bootstrap.servers, storage formatted with "
        "--initial-controllers; Kafka 3.9+), whose voters can be removed and added while "
        "it runs (the voter-change fault)",
    )
    host_port_base: int | None = Field(
        None,
        ge=1024,
        le=65000,
        description="fixed host ports: clients at BASE+j-1, Toxiproxy APIs at BASE+100+j-1; "
        "unset = free ports chosen by Docker",
    )

    # Setting one broker key must not drop the others: without the short timeouts and
    # replication factors above, faults and transactions behave differently.
    @field_validator("broker_config", mode="before")
    @classmethod
    def _over_defaults(cls, value: object) -> object:
        if isinstance(value, dict):
            return {**DEFAULT_BROKER_CONFIG, **{str(k): str(v) for k, v in value.items()}}
        return value

    @model_validator(mode="after")
    def _kind_has_what_it_needs(self) -> ClusterSpec:
        if self.kind == "ssh" and not self.inventory:
            raise ValueError("cluster.kind ssh needs an inventory; give --inventory nodes.yaml")
        if self.kind == "bootstrap" and not self.bootstrap:
            raise ValueError("cluster.kind bootstrap needs an address; give --bootstrap HOST:PORT")
        if self.kind == "docker" and self.brokers < 3:
            raise ValueError(f"cluster.brokers={self.brokers}: the Docker kind runs 3 to 7 brokers")
        if self.kind != "docker":
            docker_only = {
                "storage": self.storage != "plain",
                "clock": self.clock != "real",
                "client_lanes": self.client_lanes != 1,
                "quorum": self.quorum != "static",
            }
            wrong = [k for k, v in docker_only.items() if v]
            if wrong:
                raise ValueError(
                    f"cluster.{', cluster.'.join(wrong)} need the Docker kind (its filesystem, "
                    f"libfaketime, proxies or storage format); cluster.kind {self.kind} "
                    "cannot: leave them unset"
                )
        if self.kind == "docker" and _too_old(self.kafka_version):
            raise ValueError(
                f"cluster.kafka_version {self.kafka_version} cannot run here: the Docker kind's "
                f"brokers run KRaft only, production-ready from "
                f"{'.'.join(map(str, MIN_KRAFT_VERSION))}; choose --kafka-version 3.9 or 4"
            )
        if self.quorum == "dynamic" and older_than(self.kafka_version, MIN_DYNAMIC_QUORUM):
            raise ValueError(
                f"cluster.quorum dynamic needs KIP-853's dynamic quorum, in Kafka "
                f"{'.'.join(map(str, MIN_DYNAMIC_QUORUM))} and later, and cluster."
                f"kafka_version is {self.kafka_version}; choose --kafka-version 3.9 or 4, "
                "or cluster.quorum: static"
            )
        return self

    @model_validator(mode="after")
    def _writeback_needs_our_image(self) -> ClusterSpec:
        if self.storage == "writeback" and self.kafka_image:
            raise ValueError(
                "cluster.storage writeback needs kafka-trial's own Kafka image, which "
                "carries kt-lazyfs: unset cluster.kafka_image"
            )
        if self.quorum == "dynamic" and self.kafka_image:
            raise ValueError(
                "cluster.quorum dynamic needs kafka-trial's own Kafka image, whose entrypoint "
                "formats storage with --initial-controllers: unset cluster.kafka_image"
            )
        if self.clock == "faketime" and self.kafka_image:
            raise ValueError(
                "cluster.clock faketime needs kafka-trial's own Kafka image, which "
                "carries libfaketime: unset cluster.kafka_image"
            )
        return self


def _too_old(version: str) -> bool:
    return older_than(version, MIN_KRAFT_VERSION)


def older_than(version: str, than: tuple[int, ...]) -> bool:
    """Whether every release a version (or a prefix: "3", "4.1") names is before `than`."""
    parts = tuple(int(x) for x in version.split("."))
    return parts[: len(than)] < than[: len(parts)]


class ClientSpec(Frozen):
    """How the harness's clients authenticate to a cluster that asks them to (SASL,
    SSL): librdkafka's own keys, nested by their dots (`client.security.protocol`,
    `client.sasl.mechanism`, `client.ssl.ca.location`). Every client and admin client
    of the run takes them."""

    security: dict[str, Any] = Field(default_factory=dict)
    sasl: dict[str, Any] = Field(default_factory=dict)
    ssl: dict[str, Any] = Field(default_factory=dict)

    def librdkafka(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for top in ("security", "sasl", "ssl"):
            _flatten(getattr(self, top), top, out)
        return out


def _flatten(tree: dict[str, Any], prefix: str, out: dict[str, str]) -> None:
    for k, v in tree.items():
        key = f"{prefix}.{k}"
        if isinstance(v, dict):
            _flatten(v, key, out)
        else:
            out[key] = str(v).lower() if isinstance(v, bool) else str(v)


class TopicSpec(Frozen):
    name: str = Field("trial", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    partitions: int = Field(3, ge=1, le=1000)
    replication_factor: int = Field(3, ge=1)
    min_insync_replicas: int = Field(2, ge=1)
    unclean_leader_election: bool = False
    flush_messages: int | None = Field(
        None,
        ge=1,
        description="the topic's flush.messages: its replicas fsync every this many "
        "records (1: each one before it is acknowledged); unset, Kafka's default, never",
    )
    retention_ms: int | None = Field(
        None,
        ge=1,
        description="the topic's retention.ms: a closed segment whose newest record is "
        "older than this, by the leader's clock, is deleted; unset, Kafka's default (7 days)",
    )
    segment_ms: int | None = Field(
        None,
        ge=1,
        description="the topic's segment.ms: the active segment rolls once it is this old; "
        "unset, Kafka's default (7 days)",
    )
