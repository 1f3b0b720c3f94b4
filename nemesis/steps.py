"""The records a fault is made of: the steps the nemesis records, what an action did,
and how to undo it, as data; and the one function that carries out an undo."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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
    ]
    node: int | None = None
    link: LinkId | None = None
    toxic: str | None = None
    client: int | None = None  # a client process's pid
    # An instance of the application on trial, by index: a restart after the fault
    # replaces its process or container, and the heal acts on whichever runs then.
    app: int | None = None
    # Where a decommissioned broker's partitions go back to: (topic, partition, replicas).
    replicas: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    # A reassignment's throttle: the topic its replica lists are on, the brokers its
    # rates are on.
    topic: str | None = None
    nodes: tuple[int, ...] = ()


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
    `unthrottled`: per topic, the throttle's configs read back once deleted, {})."""
    freed: dict[str, Any] = {}
    thawed: dict[str, str] = {}
    clock: dict[str, Any] = {}
    clients: dict[str, str] = {}
    apps: dict[str, Any] = {}
    packets: dict[str, Any] = {}
    added: dict[str, Any] = {}
    unthrottled: dict[str, Any] = {}
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
        else:
            raise ValueError(f"malformed undo action {u}")
    return (
        ({"freed": freed} if freed else {})
        | ({"clock": clock} if clock else {})
        | ({"resumed": clients} if clients else {})
        | ({"thawed": thawed} if thawed else {})
        | ({"apps": apps} if apps else {})
        | ({"packets": packets} if packets else {})
        | ({"added": added} if added else {})
        | ({"unthrottled": unthrottled} if unthrottled else {})
    )


def unthrottle(ctl: ClusterControl, topic: str, brokers: list[int]) -> dict[str, Any]:
    """A reassignment's throttle deleted and read back: {} once every config is gone.
    Raises while one is still there, so no heal claims a throttle gone that is not."""
    ctl.clear_throttle(topic, brokers)
    left = ctl.throttle_configs(topic, brokers)
    if left:
        raise RuntimeError(f"the throttle on {topic} is still set after its removal: {left}")
    return left


def wait_until(cond: Callable[[], bool], timeout_s: float, every_s: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every_s)
    return cond()
