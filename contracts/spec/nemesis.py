"""Settings of the nemesis: which fault packages, how long, against which targets."""

from __future__ import annotations

from typing import Literal

from kafka_trial.contracts.schedule import Step
from kafka_trial.contracts.settings import Frozen
from kafka_trial.contracts.spec.owners import run_owner_checks
from pydantic import Field, model_validator

# The config's words for a fault's targets and a partition's topology: the defaults
# need them here, and nemesis/targets.py and nemesis/topologies.py implement each.
TARGET_ROLES = (
    "random",
    "leader",
    "followers",
    "controller",
    "txn-coordinator",
    "group-coordinator",
    "minority",
    "majority",
    "all",
)
PARTITION_TOPOLOGIES = (
    "isolate-random",
    "isolate-leader",
    "isolate-controller",
    "isolate-txn-coordinator",
    "isolate-group-coordinator",
    "halves",
    "majorities-ring",
    "bridge",
    "one-way",
)
# `partition`'s rotation unless the spec names one: the coordinators' isolations need a
# run whose clients hold transactional or group ids, and a schedule's picks must draw
# the same topologies as before they were added.
DEFAULT_TOPOLOGIES = tuple(t for t in PARTITION_TOPOLOGIES if not t.endswith("-coordinator"))


class DegradeSpec(Frozen):
    """The toxic that `degrade` and `slow-follower` add (Toxiproxy's attribute names)."""

    type: str = "latency"
    attributes: dict[str, int] = Field(default_factory=lambda: {"latency": 15000, "jitter": 0})
    stream: Literal["upstream", "downstream"] = "upstream"
    links: Literal["client", "follower-replication"] = "client"

    @model_validator(mode="after")
    def _owners(self) -> DegradeSpec:
        return run_owner_checks(self, "nemesis")  # the toxic's name (the nemesis catalog's)


MIN_STROBE_MS = 4000


class ClockSpec(Frozen):
    """What `clock` does to a broker's wall clock: a bump by each offset in turn, held
    until the heal, or with `strobe_ms` a flip between the offset and true every
    `strobe_ms`, for the fault's duration."""

    offsets_s: tuple[int, ...] = Field((120, -120), min_length=1)
    strobe_ms: int = Field(0, ge=0, description="0: a bump; else the strobe's period")

    @model_validator(mode="after")
    def _strobe_slower_than_the_cache(self) -> ClockSpec:
        # libfaketime (cache duration 1, docker/kafka/entrypoint.sh) was measured to
        # read its offset file every 2 s in the brokers' JVMs: a strobe of 1000 ms
        # showed one of its two values for 12 s on end, and one of 2500 ms skipped a
        # flip. Only a value held for two reads is sure to be seen.
        if 0 < self.strobe_ms < MIN_STROBE_MS:
            raise ValueError(
                f"nemesis.clock.strobe_ms={self.strobe_ms} is below {MIN_STROBE_MS}: the "
                "brokers' libfaketime reads its offset every 2 s, so a faster strobe hides "
                f"flips from the JVM; use {MIN_STROBE_MS} or more"
            )
        return self


MAX_HOLD_MS = 1000


PacketKind = Literal["loss", "duplicate", "rate", "reorder", "corrupt"]


class PacketSpec(Frozen):
    """What `packet` does to the packets the targeted brokers send (Docker kind: rules,
    a qdisc, or a userspace queue in each one's network namespace)."""

    kind: PacketKind = Field(
        "loss",
        description="drop a share, clone a share to its peer, a token-bucket rate, hold "
        "a share back so later packets overtake it, or flip one bit in a share's TCP "
        "payload (checksum recomputed, so Kafka sees it)",
    )
    kinds: tuple[PacketKind, ...] = Field(
        (),
        description="several kinds in one run: each packet fault takes one of these by "
        "its pick (the seed's choice); empty: `kind` every time",
    )
    probability: float = Field(
        0.2, gt=0, le=1, description="loss, duplicate, reorder, corrupt: the share hit"
    )
    kbit: int = Field(
        256, ge=8, description="rate: the node's egress (scope link: to its peer), kbit/s"
    )
    delay_ms: int = Field(
        20,
        description=f"reorder: how long each packet of the share is held, 1 to {MAX_HOLD_MS} ms",
    )
    scope: Literal["node", "link"] = Field(
        "node",
        description="node: everything a targeted broker sends; link: only what it sends to "
        "one peer broker, the pick's choice (rules matching the peer's address; rate: an htb "
        "class a u32 filter on it classifies into)",
    )

    def kind_for(self, pick: int) -> PacketKind:
        """The kind of the fault step with this pick."""
        return self.kinds[pick % len(self.kinds)] if self.kinds else self.kind

    @model_validator(mode="after")
    def _hold(self) -> PacketSpec:
        # Checked here rather than by Field bounds, so the message says what to do.
        if not 1 <= self.delay_ms <= MAX_HOLD_MS:
            raise ValueError(
                f"nemesis.packet.delay_ms={self.delay_ms} is outside 1..{MAX_HOLD_MS}: reorder "
                "holds each queued packet that long, and a longer hold is a stall, not a "
                f"reordering; use 1 to {MAX_HOLD_MS}, e.g. the default 20"
            )
        return self


class ReassignSpec(Frozen):
    """How `reassign` moves its partition: unthrottled, or with a replication throttle as
    `kafka-reassign-partitions.sh --throttle` sets one, removed once the move is done."""

    throttle_bytes: int = Field(
        0,
        description="the replication throttle, bytes/s, on the brokers the move involves "
        "(leader.replication.throttled.rate, follower.replication.throttled.rate); 0: none",
    )

    @model_validator(mode="after")
    def _rate(self) -> ReassignSpec:
        # Checked here rather than by Field bounds, so the message says what to do.
        if self.throttle_bytes < 0:
            raise ValueError(
                f"nemesis.reassign.throttle_bytes={self.throttle_bytes} is negative: it is a "
                "replication rate in bytes/s; use 0 for an unthrottled move, or a rate such "
                "as 1048576 (1 MiB/s)"
            )
        return self


class NemesisSpec(Frozen):
    faults: tuple[str, ...] = ("kill-leader", "isolate-broker")
    fault_s: float = Field(
        8.0, gt=0, allow_inf_nan=False, description="how long each fault lasts before its heal"
    )
    quiet_s: float = Field(
        6.0, ge=0, allow_inf_nan=False, description="healthy time between faults"
    )
    target_partition: int = Field(0, ge=0)
    targets: tuple[str, ...] = Field(
        ("random", "leader", "controller"), description="roles process faults pick from"
    )
    topologies: tuple[str, ...] = Field(DEFAULT_TOPOLOGIES, description="for `partition`")
    partition_mode: Literal["drop", "reject"] = "drop"
    client_scope: Literal["all", "one"] = Field(
        "all", description="client-partition cuts every client, or one client's lane"
    )
    degrade: DegradeSpec = Field(default_factory=DegradeSpec)
    clock: ClockSpec = ClockSpec()
    packet: PacketSpec = PacketSpec()
    reassign: ReassignSpec = ReassignSpec()
    steps: tuple[Step, ...] = Field(
        (),
        description="a fault schedule replayed as written (`kafka-trial shrink` writes "
        "one); empty: drawn from the seed",
    )
    corrupt_modes: tuple[Literal["bitflip", "truncate"], ...] = Field(
        ("bitflip", "truncate"),
        min_length=1,
        description="what `corrupt` does, in turn: flip 8 bits, or cut the file, in the "
        "last 64 KiB of the active segment",
    )

    @model_validator(mode="after")
    def _known(self) -> NemesisSpec:
        for field_name, values, known in (
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

    @model_validator(mode="after")
    def _steps_pair_up(self) -> NemesisSpec:
        """A written schedule names only the spec's packages, and heals each fault it
        starts: a fault left standing would outlive the fault phase unrecorded."""
        open_: dict[str, int] = {}
        for s in sorted(self.steps, key=lambda s: s.at_s):
            if s.package not in self.faults:
                raise ValueError(
                    f"nemesis.steps names {s.package}, which nemesis.faults does not; "
                    "add it to nemesis.faults or drop its steps"
                )
            open_[s.package] = open_.get(s.package, 0) + (1 if s.action == "fault" else -1)
            if open_[s.package] < 0:
                raise ValueError(
                    f"nemesis.steps heals {s.package} at {s.at_s:g} s before any fault of it"
                )
        if unhealed := [p for p, n in open_.items() if n]:
            raise ValueError(
                f"nemesis.steps never heals {', '.join(unhealed)}; give each fault a heal step"
            )
        return self

    @model_validator(mode="after")
    def _owners(self) -> NemesisSpec:
        return run_owner_checks(self, "nemesis")  # the packages' names (the nemesis catalog's)
