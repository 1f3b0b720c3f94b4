"""Settings of the client workloads: producers, transactions, consumers, copiers, the
application on trial, drain."""

from __future__ import annotations

import re
from typing import Any, Literal

from kafka_trial.contracts.app_contract import Guarantee
from kafka_trial.contracts.settings import Frozen
from pydantic import Field, field_validator, model_validator

# Enough ops in flight per client for the default rate through a slow spell (10
# values each; a produce round trip is a few ms on loopback, more under a fault).
DEFAULT_PROCESSES = 32

# Set by the workload for each client: a user's value would break the history's
# account of which client sent what.
_HARNESS_OWNED = frozenset(
    {"bootstrap.servers", "transactional.id", "transaction.timeout.ms", "logger", "log_level"}
)


class ProducerSpec(Frozen):
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
    partition_keys: bool = Field(
        False,
        description="send each value to its partition (value mod partitions) with the key "
        "str(partition), so an application that keeps keys sends one input partition's "
        "outputs to one output partition (on for runs with an app)",
    )
    transactional: bool = Field(False, description="each op is one transaction (f=txn)")
    txn_partitions: int = Field(3, ge=1, description="partitions each transaction writes")
    abort_fraction: float = Field(0.0, ge=0, le=1, description="transactions aborted on purpose")
    txn_delay_ms: int = Field(0, ge=0, description="pause inside each transaction")
    abort_in_flight: bool = Field(
        False,
        description="a deliberate abort does not wait for the transaction's sends: it "
        "aborts (after txn_delay_ms) with produce requests still on their way, the "
        "window of KAFKA-17754",
    )
    transaction_timeout_ms: int = Field(60000, ge=1000)
    abort_after_error: bool = Field(
        False,
        description="after any error in a transaction (its commit's too) that is not "
        "fatal, not only one that requires an abort, try abort_transaction and go on "
        "(Jepsen's Kafka recipe); the op is `fail` only if the abort returned, else `info`",
    )
    own_process: bool = Field(
        False,
        description="each transactional client runs in a process of its own, which the "
        "client-pause fault can freeze as a GC pause would; its ops are recorded by the "
        "harness as always (transactional only)",
    )
    clients: int = Field(
        3, ge=1, le=64, description="producer clients (librdkafka instances), one lane each"
    )
    processes_per_client: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="logical processes sharing each client, one op outstanding each, so "
        f"librdkafka batches and pipelines their sends (default {DEFAULT_PROCESSES}; 1 for "
        "transactional producers, which run one transaction at a time)",
    )
    # Offered, not achieved: faults stall writes, and a default run (the safe preset's
    # faults) acknowledged about 64% of what was offered.
    target_rate: int | None = Field(
        15000,
        ge=1,
        description="values per second offered by all producers together; null: as fast "
        "as the clients go",
    )
    batch: int = Field(10, ge=1, le=10000, description="values sent per send op")
    crash_fraction: float = Field(
        0.0,
        ge=0,
        le=1,
        description="ops during which the client crashes, sends in flight (a crash ends "
        "every op of the client: the chance per op started is this over processes_per_client)",
    )
    resend_unacked: bool = Field(
        False,
        description="after a restart the application re-sends what its last op left "
        "unknown (claim C9)",
    )
    txn_poll: bool = Field(
        False, description="each transaction reads its own partitions before it ends"
    )
    librdkafka: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="further librdkafka producer settings, e.g. {socket.max.fails: 0}; "
        "a key that a setting above owns is refused",
    )

    @model_validator(mode="before")
    @classmethod
    def _workers_is_clients(cls, data: object) -> object:
        # `producer.workers` was this setting's name before clients were pipelined.
        if isinstance(data, dict) and "workers" in data and "clients" not in data:
            data = {("clients" if k == "workers" else k): v for k, v in data.items()}
        return data

    def processes(self) -> int:
        """Logical processes per client, the default resolved."""
        if self.processes_per_client is not None:
            return self.processes_per_client
        return 1 if self.transactional else DEFAULT_PROCESSES

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_written(cls, v: object) -> object:
        # `acks: 1` unquoted in YAML is an int; Kafka's own configs take it either way.
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

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
        if self.transactional and self.processes() > 1:
            raise ValueError(
                "a transactional client runs one transaction at a time; "
                "set producer.processes_per_client=1 or leave it out"
            )
        if self.keyed and self.partition_keys:
            raise ValueError(
                "producer.keyed lets the partitioner choose from the key, producer."
                "partition_keys keys each value by its partition; set one of them"
            )
        if self.own_process and not self.transactional:
            raise ValueError("own_process needs producer.transactional=true")
        if self.txn_poll and not self.transactional:
            raise ValueError("txn_poll needs producer.transactional=true")
        if self.abort_in_flight and not self.abort_fraction:
            raise ValueError(
                "abort_in_flight needs deliberate aborts: set producer.abort_fraction "
                "(and producer.transactional=true)"
            )
        if self.idempotence and self.max_in_flight > 5:
            raise ValueError(
                "idempotence allows at most 5 in-flight requests; lower producer.max_in_flight"
            )
        owned = sorted(set(self.librdkafka) & (set(self._owned_config()) | _HARNESS_OWNED))
        if owned:
            raise ValueError(
                f"producer.librdkafka sets {', '.join(owned)}, which kafka-trial sets "
                "itself; remove it there (most have a producer setting of their own, "
                "e.g. producer.linger_ms for linger.ms)"
            )
        return self

    def client_config(self) -> dict[str, Any]:
        return {**self.librdkafka, **self._owned_config()}

    def _owned_config(self) -> dict[str, Any]:
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


class ConsumerSpec(Frozen):
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


class CopierSpec(Frozen):
    """Consume-transform-produce copiers from the topic to TOPIC-out, exactly once."""

    workers: int = Field(0, ge=0, le=8)
    crash_fraction: float = Field(0.0, ge=0, le=1, description="copies that crash before commit")
    batch: int = Field(50, ge=1, le=10000)
    debug: bool = Field(
        False,
        description="librdkafka's debug log of the copiers' clients into clients.log: the "
        "consumer's cgrp and fetch (the group's OffsetFetch answers and where fetching "
        "starts), the producer's eos (transactions and their offset commits)",
    )


class DrainSpec(Frozen):
    timeout_s: float = Field(90.0, gt=0)
    settle_s: float = Field(5.0, gt=0, description="stop a partition at its end after this")


# What every instance of the application on trial is given, in its environment and as
# {NAME} placeholders in its command: set by the workload, so app.env may not.
APP_ENV_NAMES = (
    "KAFKA_BOOTSTRAP_SERVERS",
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "GROUP_ID",
    "INSTANCE_ID",
)


class AppSpec(Frozen):
    """The user's program on trial, a black box between the run's topic and TOPIC-out
    (docs/apps.md): a command run on the host, or a local image run as containers."""

    command: str | None = Field(
        None,
        min_length=1,
        description="a shell command; {KAFKA_BOOTSTRAP_SERVERS}, {INPUT_TOPIC}, "
        "{OUTPUT_TOPIC}, {GROUP_ID} and {INSTANCE_ID} in it are replaced",
    )
    image: str | None = Field(None, min_length=1, description="a local Docker image")
    instances: int = Field(2, ge=1, le=16, description="copies of the application")
    guarantee: Guarantee | None = Field(
        None,
        description="what the application promises: exactly-once, at-least-once or "
        "at-most-once (--app-guarantee); required with an app",
    )
    per_key_order: bool = Field(
        False, description="the application keeps the order of each input partition's records"
    )
    id_json: str | None = Field(
        None,
        description="the input id is this dotted field path of a JSON value (e.g. meta.id); "
        "default: the whole value is the input's decimal value",
    )
    id_regex: str | None = Field(
        None, description="the input id is the first group of this regex's first match"
    )
    quiet_s: float = Field(10.0, gt=0, description="output quiet this long counts as caught up")
    catch_up_s: float = Field(120.0, gt=0, description="the longest wait for the app to catch up")
    restart_delay_s: float = Field(2.0, ge=0, description="an ended instance restarts after this")
    stop_grace_s: float = Field(10.0, ge=0, description="SIGTERM to SIGKILL at the end")
    start_check_s: float = Field(
        3.0, ge=0, description="an instance that exits this soon after the first start is refused"
    )
    env: dict[str, str] = Field(default_factory=dict, description="further environment")

    @property
    def present(self) -> bool:
        return self.command is not None or self.image is not None

    @field_validator("id_json")
    @classmethod
    def _dotted(cls, v: str | None) -> str | None:
        if v is not None and not all(part.strip() for part in v.split(".")):
            raise ValueError("must be a dotted field path, e.g. id or meta.id")
        return v

    @field_validator("id_regex")
    @classmethod
    def _one_group(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            groups = re.compile(v).groups
        except re.error as e:
            raise ValueError(f"is not a regular expression ({e})") from None
        if groups < 1:
            raise ValueError("needs a capture group around the id, e.g. id=(\\d+)")
        return v

    @model_validator(mode="after")
    def _complete(self) -> AppSpec:
        if self.command is not None and self.image is not None:
            raise ValueError(
                "app.command and app.image are both set; give one (--app-command or --app-image)"
            )
        if self.id_json is not None and self.id_regex is not None:
            raise ValueError("app.id_json and app.id_regex are both set; give one")
        owned = sorted(set(self.env) & set(APP_ENV_NAMES))
        if owned:
            raise ValueError(
                f"app.env sets {', '.join(owned)}, which kafka-trial sets for every instance; "
                "remove it there"
            )
        if self.present and self.guarantee is None:
            raise ValueError(
                "an app needs its declared guarantee: set --app-guarantee (app.guarantee) to "
                "exactly-once, at-least-once or at-most-once"
            )
        return self
