"""The intent-level verbs the layers above act through: kill a node, cut a link, add
a toxic, elect a leader, look at partitions.

`Cluster` (Docker + Toxiproxy) implements them; a fake in the tests implements the
same protocol in memory, so the nemesis can be unit-tested in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from kafka_trial.cluster.segments import CorruptMode
from kafka_trial.cluster.toxiproxy import Toxic

LinkKind = Literal["internal", "controller", "client"]
CutMode = Literal["drop", "reject"]
Stream = Literal["upstream", "downstream"]
BOTH_STREAMS: tuple[Stream, ...] = ("upstream", "downstream")


@dataclass(frozen=True)
class LinkId:
    """The connections `src` opens to `dst` (src None: the host's clients, on `lane`)."""

    src: int | None
    dst: int
    kind: LinkKind
    lane: int = 0

    def label(self) -> str:
        return f"{self.src}->{self.dst}:{self.kind}"


@dataclass(frozen=True)
class PartitionState:
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ClusterControl(Protocol):
    """A fault verb returns None, or (cluster.kind ssh) what it read back on the node:
    the faults record that in their completions. One that did not take effect raises."""

    @property
    def node_ids(self) -> list[int]: ...

    @property
    def client_lanes(self) -> int: ...

    # observation
    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]: ...

    def active_controller(self) -> int | None: ...

    def await_registered(self, timeout_s: float) -> None: ...

    def await_in_sync(self, topic: str, timeout_s: float) -> bool: ...

    # processes
    def kill_node(self, node: int) -> dict[str, Any] | None: ...

    def stop_node(self, node: int) -> dict[str, Any] | None: ...

    def start_node(self, node: int) -> str | None:
        """Start a stopped broker, or resume a paused one: None, or the freezer file
        it thawed when the engine could not unpause it (cluster/freezer.py)."""

    def pause_node(self, node: int) -> dict[str, Any] | None: ...

    def resume_node(self, node: int) -> str | None:
        """Resume a paused broker; what it returns is as for start_node."""

    def wipe_node(self, node: int) -> None: ...

    def corrupt_segment(
        self, node: int, topic: str, partition: int, mode: CorruptMode, seed: int
    ) -> dict[str, Any]:
        """On a node that is down, a seeded bit flip in, or truncation of, the tail of
        its active segment of topic-partition, read back: `file`, `mode`, `bytes` (the
        damaged range), `offsets` (of the batches hit), sizes; or `error` if it holds
        no data of that partition."""
        ...

    # clocks (cluster.clock = faketime)
    def set_clock(self, node: int, offset_s: int) -> dict[str, Any]:
        """The node's broker reads its wall clock `offset_s` off from now on (0: true),
        measured in its process: `asked_s`, `offset_s` (what Kafka stamps minus the
        host's clock), `rtt_ms` (the measurement's round trip)."""
        ...

    def strobe_clock(
        self, node: int, offset_s: int, period_ms: int, duration_s: float
    ) -> dict[str, Any]:
        """The node's wall clock flips between `offset_s` and true every `period_ms`
        for `duration_s` (or until set_clock); sampled: `min_s` and `max_s` measured."""
        ...

    # storage (cluster.storage = writeback)
    def lose_unfsynced(self, nodes: list[int]) -> dict[int, dict[str, Any]]:
        """A power failure of the nodes, together: each broker SIGKILLed and its files
        back at their last fsync. Per node, what was dropped (`files`, `bytes`,
        `paths`), or `error` for a node it could not crash; the crashed stay down."""
        ...

    def fill_disk(self, node: int) -> dict[str, Any] | None:
        """Every write to the node's data directory fails with ENOSPC from now on."""
        ...

    def free_disk(self, node: int) -> dict[str, Any]:
        """Writes succeed again: `refused_writes` and `refused_bytes` while it was
        full, and `halted` if the broker had stopped over it (it is started again)."""
        ...

    # links
    def cut(
        self, link: LinkId, mode: CutMode = "drop", streams: tuple[Stream, ...] = ...
    ) -> dict[str, Any] | None:
        """Drop (black hole) or reject what flows on a link; `streams` narrows a drop
        to one direction: upstream is what src sends, downstream what dst answers."""
        ...

    def uncut(self, link: LinkId) -> None:
        """Undo `cut` only: toxics other faults put on the link stay."""
        ...

    def add_toxic(self, link: LinkId, toxic: Toxic) -> dict[str, Any] | None: ...

    def remove_toxic(self, link: LinkId, name: str) -> None: ...

    # leadership
    def elect_leader(self, topic: str, partition: int, unclean: bool) -> None:
        """Ask the controller for one election; raises if it refuses."""
        ...

    # packets (the Docker kind: rules in a node's network namespace)
    def add_packet_fault(
        self,
        node: int,
        kind: str,
        probability: float,
        kbit: int,
        delay_ms: int = 20,
        seed: int = 0,
        peer: int | None = None,
    ) -> dict[str, Any]:
        """Lose, duplicate, reorder (hold for `delay_ms`) or corrupt (a seeded bit
        flip) a share of the packets the node sends, or rate-limit them; returns what
        was read back (the rules, the qdisc, the helper bound). With `peer`, one link:
        only what the node sends to that broker (`dst`, its address, and `read_back`,
        the destination match as the kernel shows it). Raises if not made."""
        ...

    def clear_packet_faults(self, node: int) -> dict[str, Any]:
        """Every packet rule, qdisc and helper of the node gone; what they matched
        and did."""
        ...

    # assignment
    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        """Ask the controller to move the partition's replicas (in this order: the
        first is the preferred leader); raises if it refuses."""
        ...

    def reassignments(self, topic: str) -> dict[int, dict[str, list[int]]]:
        """The topic's partitions being reassigned now: replicas, adding, removing."""
        ...

    def set_throttle(
        self, topic: str, rate: int, brokers: list[int], leader: str, follower: str
    ) -> None:
        """A replication throttle as `kafka-reassign-partitions.sh --throttle` sets one:
        each broker's leader.replication.throttled.rate and
        follower.replication.throttled.rate to `rate` bytes/s, and the topic's
        leader.replication.throttled.replicas to `leader` and
        follower.replication.throttled.replicas to `follower` ("partition:broker,...").
        Raises if a config was refused."""
        ...

    def clear_throttle(self, topic: str, brokers: list[int]) -> None:
        """Those four configs deleted, as the tool's --verify does once the move is done."""
        ...

    def throttle_configs(self, topic: str, brokers: list[int]) -> dict[str, dict[str, str]]:
        """The throttle's configs as the cluster describes them, those set only:
        `brokers` (broker id -> name -> value) and `topic` (name -> value), each left
        out when empty, so {} is no throttle."""
        ...

    def heal_all(self) -> dict[str, Any] | None:
        """Every link whole, every toxic gone, every node running; what it did beyond
        that, for the heal-all's record (None or {}: nothing)."""
        ...


class LaneControl(Protocol):
    """A client lane cut off every broker and restored: how an instance of the
    application on trial, which has a lane of its own, is partitioned (app-partition)."""

    def cut_lane(self, lane: int, mode: CutMode = "reject") -> dict[str, Any]:
        """Every broker's proxy of the lane cut, read back: `lane`, `brokers`, `mode`."""
        ...

    def restore_lane(self, lane: int) -> dict[str, Any]:
        """The lane's proxies whole again (cut toxics gone, enabled), read back."""
        ...


class Refused(RuntimeError):
    """A membership change the cluster refused before asking anyone: nothing changed
    (a static quorum's voter set, say)."""


@dataclass(frozen=True)
class Quorum:
    """The KRaft metadata quorum as its leader describes it: each voter and observer
    by node id, with the id of its metadata log directory (KIP-853's voter key)."""

    leader: int | None
    voters: dict[int, str]
    observers: dict[int, str]
    # The metadata log's high watermark and each voter's log end offset as the leader
    # last heard it (-1: not yet); empty where the tool did not say.
    high_watermark: int | None = None
    log_ends: dict[int, int] = field(default_factory=dict)

    def caught_up(self) -> bool:
        """Every voter holds the metadata log up to the high watermark."""
        hw = self.high_watermark
        return (
            hw is not None
            and set(self.log_ends) == set(self.voters)
            and all(e >= hw for e in self.log_ends.values())
        )


@runtime_checkable
class MembershipControl(Protocol):
    """Who is in the cluster: the controllers' voter set and the brokers' registrations,
    changed as an operator changes them (KIP-853's dynamic quorum, a decommission).
    The Docker kind has these verbs; a fault on a cluster without them is `info`."""

    def quorum(self, within_s: float | None = None) -> Quorum:
        """The quorum as its leader describes it; raises if no broker answers (within
        `within_s`, where given)."""
        ...

    def remove_voter(self, node: int, directory_id: str) -> None:
        """Ask the quorum to remove the voter; raises if it refuses (`Refused` where
        nothing was asked: a static quorum always is). Its controller keeps running,
        as an observer."""
        ...

    def add_voter(self, node: int, timeout_s: float = 60) -> dict[str, Any]:
        """The node's controller a voter again, by the directory id its storage holds;
        waits until the quorum lists it: `voter`, `directory_id`, `voters`, `took_s`.
        Raises if it is not a voter within the timeout."""
        ...

    def placement(self) -> dict[str, dict[int, PartitionState]]:
        """Every topic's partitions (internal topics too), as the metadata shows them."""
        ...

    def move_replicas(self, moves: dict[tuple[str, int], list[int]]) -> None:
        """One reassignment request for all of them: (topic, partition) -> replicas."""
        ...

    def registered_brokers(self) -> dict[int, bool | None]:
        """Registered broker -> whether it is fenced (None: the cluster cannot list
        fenced brokers, so only unfenced ones are listed)."""
        ...

    def unregister_broker(self, node: int) -> None: ...

    def add_broker(
        self, node: int, replicas: dict[tuple[str, int], list[int]], timeout_s: float = 120
    ) -> dict[str, Any]:
        """A fresh broker as `node`: empty storage, formatted and started; waits until it
        registered, then moves `replicas` back where they were and waits for them in
        sync: `broker`, `registered_after_s`, `restored`, `in_sync`. Raises if it
        never registered."""
        ...


def membership(ctl: object) -> MembershipControl:
    """The cluster's membership verbs, or why it has none."""
    if not isinstance(ctl, MembershipControl):
        raise RuntimeError(f"{type(ctl).__name__} cannot change the cluster's membership")
    return ctl
