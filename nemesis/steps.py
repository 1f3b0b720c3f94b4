"""The records a fault is made of: the steps the nemesis records, what an action did,
and how to undo it, as data; and the one function that carries out an undo."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from kafka_trial.cluster import throttle
from kafka_trial.cluster.control import ClusterControl, LinkId, membership
from kafka_trial.contracts.app_contract import APPS
from kafka_trial.contracts.client_processes import CLIENTS

# Files a power-loss op names per broker, of those it dropped data of (a broker
# holds a few per partition: segment, indexes, checkpoints).
LOST_PATHS = 12


@dataclass(frozen=True)
class Undo:
    """One action that takes back part of a fault."""

    verb: Literal[
        "start",
        "resume",
        "uncut",
        "remove-toxic",
        "free-disk",
        "reset-clock",
        "resume-client",
        "resume-app",
        "uncut-app",
        "clear-packets",
        "add-voter",
        "add-broker",
        "unthrottle",
        "await-move",
    ]
    node: int | None = None
    link: LinkId | None = None
    toxic: str | None = None
    client: int | None = None  # a client process's pid
    # An instance of the application on trial, by index: a restart after the fault
    # replaces its process or container, and the heal acts on whichever runs then.
    app: int | None = None
    # Where partitions go, (topic, partition, replicas): a decommissioned broker's back,
    # or a reassignment's to the replicas it was asked to move them to.
    replicas: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    # A reassignment's throttle: the topic its replica lists are on, the brokers its
    # rates are on.
    topic: str | None = None
    nodes: tuple[int, ...] = ()
    # A reassignment awaited: when (time.monotonic) it was asked for, and how long after
    # that its heal waits for it at most; its duration counts from the request too.
    timeout_s: float = 0.0
    since: float = 0.0


@dataclass(frozen=True)
class Heal:
    """How to undo a fault: the heal op to record (f, value, what its completion adds)
    and the actions."""

    f: str
    value: dict[str, Any]
    result: dict[str, Any]
    undo: tuple[Undo, ...]


@dataclass(frozen=True)
class Done:
    """What an action did: merged into the op's ok completion; `heal` if it needs one."""

    result: dict[str, Any]
    heal: Heal | None = None


class Unfinished(RuntimeError):
    """An action that stopped short and left something in force: its op completes
    `info` with the message, and `heal` stays outstanding as a finished step's would."""

    def __init__(self, message: str, heal: Heal | None = None) -> None:
        super().__init__(message)
        self.heal = heal


@dataclass(frozen=True)
class Step:
    """One recorded op of a fault. If its action raises, the op completes `info`; with
    `needed`, the fault's later steps are skipped (nothing to continue from)."""

    f: str
    value: dict[str, Any]
    act: Callable[[], Done]
    needed: bool = True


class Package(Protocol):
    name: str

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]: ...


def apply_undo(ctl: ClusterControl, undo: tuple[Undo, ...]) -> dict[str, Any]:
    """Carry out the actions; what they found, for the heal's completion (`freed`:
    per node, what a full disk refused; `clock`: per node, the offset measured after
    the reset; `resumed`: per client pid, the kernel's state of it after SIGCONT;
    `thawed`: per node, the freezer file written when the engine could not unpause
    the broker, cluster/freezer.py; `apps`: per app instance, what it showed once
    resumed or reconnected, or "gone" when no instance of that index is registered;
    `packets`: per node, how many packets its rules matched before they went;
    `added`: per node, the voter or fresh broker added back, as read back;
    `unthrottled`: per topic, the throttle's configs read back once deleted, {};
    `settled`: per `topic/partition` a reassignment moved, its replicas and ISR as last
    read, and `took_s` since it was asked for). A reassignment not done in time raises
    `Unfinished` with where it stopped, once every other action ran: its throttle goes
    however the move ends, and the move is left to finish, nothing outstanding."""
    freed: dict[str, Any] = {}
    thawed: dict[str, str] = {}
    clock: dict[str, Any] = {}
    clients: dict[str, str] = {}
    apps: dict[str, Any] = {}
    packets: dict[str, Any] = {}
    added: dict[str, Any] = {}
    unthrottled: dict[str, Any] = {}
    settled: dict[str, Any] = {}
    for u in undo:
        if u.verb in ("start", "resume") and u.node is not None:
            how = ctl.start_node(u.node) if u.verb == "start" else ctl.resume_node(u.node)
            if how is not None:
                thawed[str(u.node)] = how
        elif u.verb == "uncut" and u.link is not None:
            ctl.uncut(u.link)
        elif u.verb == "remove-toxic" and u.link is not None and u.toxic is not None:
            ctl.remove_toxic(u.link, u.toxic)
        elif u.verb == "free-disk" and u.node is not None:
            freed[str(u.node)] = ctl.free_disk(u.node)
        elif u.verb == "reset-clock" and u.node is not None:
            clock[str(u.node)] = ctl.set_clock(u.node, 0)
        elif u.verb == "resume-client" and u.client is not None:
            clients[str(u.client)] = CLIENTS.resume(u.client) or "gone"
        elif u.verb == "resume-app" and u.app is not None:
            apps[str(u.app)] = APPS.resume(u.app) or "gone"
        elif u.verb == "uncut-app" and u.app is not None:
            apps[str(u.app)] = APPS.uncut(u.app) or "gone"
        elif u.verb == "clear-packets" and u.node is not None:
            packets[str(u.node)] = ctl.clear_packet_faults(u.node)
        elif u.verb == "add-voter" and u.node is not None:
            added[str(u.node)] = membership(ctl).add_voter(u.node)
        elif u.verb == "add-broker" and u.node is not None:
            back = {(t, p): list(r) for t, p, r in u.replicas}
            added[str(u.node)] = membership(ctl).add_broker(u.node, back)
        elif u.verb == "unthrottle" and u.topic is not None:
            unthrottled[u.topic] = unthrottle(ctl, u.topic, list(u.nodes))
        elif u.verb == "await-move" and u.replicas:
            settled |= {f"{t}/{p}": await_move(ctl, t, p, list(r), u) for t, p, r in u.replicas}
        else:
            raise ValueError(f"malformed undo action {u}")
    if stalled := {k: v for k, v in settled.items() if "took_s" not in v}:
        removed = f"; throttle removed, read back gone: {unthrottled}" if unthrottled else ""
        raise Unfinished(f"reassignment not done in time, left to finish: {stalled}{removed}")
    return (
        ({"freed": freed} if freed else {})
        | ({"clock": clock} if clock else {})
        | ({"resumed": clients} if clients else {})
        | ({"thawed": thawed} if thawed else {})
        | ({"apps": apps} if apps else {})
        | ({"packets": packets} if packets else {})
        | ({"added": added} if added else {})
        | ({"unthrottled": unthrottled} if unthrottled else {})
        | ({"settled": settled} if settled else {})
    )


# How long a deleted throttle may still read back (the cluster layer says why).
THROTTLE_GONE_S = throttle.GONE_S


def unthrottle(ctl: ClusterControl, topic: str, brokers: list[int]) -> dict[str, Any]:
    """A reassignment's throttle deleted and read back: {} once every config is gone.
    Raises while one is still there `THROTTLE_GONE_S` on, so no heal claims a
    throttle gone that is not."""
    ctl.clear_throttle(topic, brokers)
    left: list[dict[str, Any]] = []

    def gone() -> bool:
        left[:] = [ctl.throttle_configs(topic, brokers)]
        return not left[0]

    if not wait_until(gone, THROTTLE_GONE_S):
        raise RuntimeError(
            f"the throttle on {topic} is still set {THROTTLE_GONE_S:.0f} s after its "
            f"removal: {left[0]}"
        )
    return left[0]


def await_move(
    ctl: ClusterControl, topic: str, partition: int, target: list[int], u: Undo
) -> dict[str, Any]:
    """Wait, until `u.timeout_s` after the request, for a reassignment to be done: the
    partition on `target`, all of it in sync, the controller moving it no more. Never
    raises (a look that fails, a broker killed or a leader moving, is a look that saw
    nothing): what undoes the rest of the fault runs however this ends. Its replicas
    and ISR as last read, `took_s` since it was asked for once done, else
    `in_progress`: the replicas the controller was still adding and removing."""
    seen: dict[str, Any] = {"replicas": None, "isr": None}

    def done() -> bool:
        try:
            now = ctl.partitions(topic).get(partition)
            going = ctl.reassignments(topic).get(partition)
        except Exception as e:  # no answer this time: asked again
            seen["error"] = f"{type(e).__name__}: {e}"[:200]
            return False
        seen.pop("error", None)
        seen.update(
            replicas=list(now.replicas) if now else None, isr=list(now.isr) if now else None
        )
        seen["in_progress"] = going or {}
        return (
            now is not None
            and list(now.replicas) == target
            and set(now.isr) == set(target)
            and not going
        )

    # Counted from the request, so a heal tried again after a failed one looks once
    # more, and does not wait all over again for a move left to finish.
    left_s = max(0.0, u.since + u.timeout_s - time.monotonic())
    if wait_until(done, left_s, every_s=1.0):
        seen.pop("in_progress", None)
        return seen | {"took_s": round(time.monotonic() - u.since, 2)}
    return seen


def wait_until(cond: Callable[[], bool], timeout_s: float, every_s: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every_s)
    return cond()
