"""Fault packages: a fault, what undoes it, and targets chosen when it starts.

A package holds no state and records nothing. Its `fault(ctl, pick)` yields the
steps of the fault, each a history op to record and an action on the cluster's
intent-level verbs; an action returns what it hit and, as data, how to undo it
(`Heal`); those records are in steps.py. The nemesis (core.py) records the steps
and holds what is outstanding, so several faults of one package can be outstanding.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from kafka_trial.cluster.control import ClusterControl, CutMode, LinkId
from kafka_trial.cluster.segments import CorruptMode
from kafka_trial.cluster.toxiproxy import Toxic
from kafka_trial.contracts.app_contract import APPS, AppInstance
from kafka_trial.contracts.client_processes import CLIENTS, process_state
from kafka_trial.nemesis import topologies
from kafka_trial.nemesis.catalog import PACKAGES
from kafka_trial.nemesis.failover import LastReplicaStanding, UncleanFailover
from kafka_trial.nemesis.hijack import HijackTxn
from kafka_trial.nemesis.membership import RemoveBroker, VoterChange
from kafka_trial.nemesis.packets import PacketFault
from kafka_trial.nemesis.reconfigure import PreferredElection, Reassign, RollingRestart
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.nemesis.steps import LOST_PATHS, Done, Heal, Package, Step, Undo, wait_until
from kafka_trial.nemesis.targets import NoTarget, aim

_PROCESS_VERBS = {"kill": "kill_node", "stop": "stop_node", "pause": "pause_node"}
# The catalog names each package's heal op; for these it is also the undo's verb.
_PROCESS_HEAL = {k: h for k in _PROCESS_VERBS if (h := PACKAGES[k].heal_op) is not None}


def _aimed(role: str, topic: str, partition: int) -> dict[str, Any]:
    """The invoke value of a fault aimed by role at a partition's brokers."""
    return {"target": role, "topic": topic, "partition": partition}


def _note(seen: dict[str, Any], key: object, found: object) -> None:
    """What a verb read back on the node it acted on (cluster.kind ssh: the pid and
    its state, the rules in the chain); the Docker kind's verbs return None."""
    if isinstance(found, dict):
        seen.setdefault(str(key), []).append(found)


def _per_broker(f: str, verb: str, brokers: list[int]) -> Heal:
    """A heal op `f` that undoes the fault broker by broker with `verb`."""
    return Heal(
        f,
        {"brokers": list(brokers)},
        {},
        tuple(Undo(verb, node=b) for b in brokers),  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class ProcessFault:
    """kill (SIGKILL), stop (SIGTERM), pause (cgroup freezer) or bounce (kill and
    start at once) the brokers a role names; the heal starts or resumes them."""

    kind: Literal["kill", "stop", "pause", "bounce"]
    topic: str
    partition: int
    roles: tuple[str, ...]
    name: str = ""

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            seen: dict[str, Any] = {}
            for b in targets:
                if self.kind == "bounce":
                    _note(seen, b, ctl.kill_node(b))
                    ctl.start_node(b)
                else:
                    _note(seen, b, getattr(ctl, _PROCESS_VERBS[self.kind])(b))
            result = {"brokers": targets, **a.record()} | ({"seen": seen} if seen else {})
            if self.kind == "bounce":
                return Done(result)
            verb = _PROCESS_HEAL[self.kind]
            heal = _per_broker(verb, verb, targets)
            # Nothing hit (a role with no brokers), nothing to heal: no heal op.
            return Done(result, heal if targets else None)

        yield Step(self.kind, _aimed(role, self.topic, self.partition), act)


@dataclass(frozen=True)
class WipeData:
    """Kill the targeted brokers, delete their data directory (log segments and KRaft
    metadata alike), and start them again with empty storage: the KIP-903 class of
    failure. The restart is the heal; nothing can bring the data back."""

    topic: str
    partition: int
    roles: tuple[str, ...]
    name: str = "wipe"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            for b in targets:
                ctl.wipe_node(b)
            return Done({"brokers": targets, **a.record()})

        yield Step("wipe", _aimed(role, self.topic, self.partition), act)


@dataclass(frozen=True)
class PowerLoss:
    """A power failure of the targeted brokers' hosts, all at one instant: each broker
    SIGKILLed and every file on its write-back filesystem (kt-lazyfs) back at its last
    fsync. Kafka fsyncs no produced record by default, so what the brokers had only in
    the page cache is gone, on every replica that lost power (claim C14). The heal
    starts them on what was fsynced.

    The completion records, per broker, what was dropped (files and bytes); a broker
    it could not crash (paused, plain storage) is named with the reason, and if none
    crashed the fault did nothing and completes `info`."""

    topic: str
    partition: int
    roles: tuple[str, ...]
    name: str = "power-loss"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            if not targets:
                return Done({"brokers": []})
            answers = ctl.lose_unfsynced(targets)
            down = [b for b in targets if "error" not in answers[b]]
            failed = {str(b): answers[b]["error"] for b in targets if b not in down}
            if not down:
                raise RuntimeError(f"no broker lost power: {failed}")
            lost = {
                str(b): {
                    "files": answers[b].get("files", 0),
                    "bytes": answers[b].get("bytes", 0),
                    "paths": answers[b].get("paths", [])[:LOST_PATHS],
                }
                for b in down
            }
            result: dict[str, Any] = {
                "brokers": down,
                **a.record(),
                "lost": lost,
                "lost_bytes": sum(v["bytes"] for v in lost.values()),
            }
            if failed:
                result["not_crashed"] = failed
            return Done(result, _per_broker("start", "start", down))

        yield Step("power-loss", _aimed(role, self.topic, self.partition), act)


@dataclass(frozen=True)
class DiskFull:
    """The targeted brokers' disks full: every write to their data directory fails
    with ENOSPC (kt-lazyfs), until the heal. Kafka takes a log directory whose write
    failed offline, and a broker with no log directory left halts. The heal's
    completion says, per broker, how many writes and bytes were refused and whether
    it had halted (then it is started again)."""

    topic: str
    partition: int
    roles: tuple[str, ...]
    name: str = "disk-full"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            full: list[int] = []
            seen: dict[str, Any] = {}
            try:
                for b in targets:
                    _note(seen, b, ctl.fill_disk(b))
                    full.append(b)
            except Exception:
                for b in full:  # nothing half-done stays behind an info op
                    ctl.free_disk(b)
                raise
            heal = _per_broker("disk-free", "free-disk", full) if full else None
            result = {"brokers": full, **a.record()} | ({"seen": seen} if seen else {})
            return Done(result, heal)

        yield Step("disk-full", _aimed(role, self.topic, self.partition), act)


@dataclass(frozen=True)
class Corrupt:
    """Bit rot or a torn write on the targeted brokers' disks (Jepsen's
    `jepsen.nemesis.file`): each broker killed, the tail of its active segment of the
    partition bit-flipped or truncated (the modes alternate by the schedule's pick),
    and started again, so it recovers from the damaged log. The completion names, per
    broker, the file, the damaged byte range and the offsets of the batches hit, as
    read back from the file; a broker with nothing to corrupt is named with the
    reason, and if none was corrupted the op completes `info`."""

    topic: str
    partition: int
    roles: tuple[str, ...]
    modes: tuple[CorruptMode, ...]
    name: str = "corrupt"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]
        mode = self.modes[pick % len(self.modes)]

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            if not targets:
                return Done({"brokers": []})
            hit: dict[str, Any] = {}
            missed: dict[str, str] = {}
            for b in targets:
                ctl.kill_node(b)
            try:
                for b in targets:
                    got = ctl.corrupt_segment(b, self.topic, self.partition, mode, pick + b)
                    if "error" in got:
                        missed[str(b)] = got["error"]
                    else:
                        hit[str(b)] = got
            finally:
                for b in targets:  # nothing stays down behind a failed corruption
                    ctl.start_node(b)
            if not hit:
                raise RuntimeError(f"nothing corrupted: {missed}")
            result: dict[str, Any] = {
                "brokers": sorted(int(b) for b in hit),
                **a.record(),
                "corrupted": hit,
            }
            if missed:
                result["not_corrupted"] = missed
            return Done(result)

        value = {**_aimed(role, self.topic, self.partition), "mode": mode}
        yield Step("corrupt", value, act)


# A clock fault that measures less than this of what it asked did not take effect.
CLOCK_TOLERANCE_S = 2.0


@dataclass(frozen=True)
class ClockFault:
    """The targeted brokers' wall clocks off, as their JVMs read them (libfaketime):
    bumped by an offset (the offsets in turn, by the schedule's pick) until the heal,
    or strobed between it and true for `duration_s`. The monotonic clock stays true.

    The completion gives, per broker, the offset measured in the broker's process
    (a LogAppendTime stamp, cluster/clocks.py); a broker whose measured clock is not
    within CLOCK_TOLERANCE_S of what was asked is named as missed, and if none took
    it the op completes `info`. The heal sets each clock true and measures it."""

    topic: str
    partition: int
    roles: tuple[str, ...]
    offsets_s: tuple[int, ...]
    strobe_ms: int
    duration_s: float
    name: str = "clock"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]
        offset = self.offsets_s[pick % len(self.offsets_s)]

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            took: dict[str, Any] = {}
            missed: dict[str, Any] = {}
            for b in targets:
                if self.strobe_ms:
                    got = ctl.strobe_clock(b, offset, self.strobe_ms, self.duration_s)
                    ok = abs(got["max_s" if offset > 0 else "min_s"] - offset) <= CLOCK_TOLERANCE_S
                else:
                    got = ctl.set_clock(b, offset)
                    ok = abs(got["offset_s"] - offset) <= CLOCK_TOLERANCE_S
                (took if ok else missed)[str(b)] = got
            if not took:
                for b in targets:  # whatever part of it they did take
                    ctl.set_clock(b, 0)
                raise RuntimeError(f"no broker's clock took the offset: {missed}")
            # The heal sets every target true, a missed one too: it may show it later.
            heal = _per_broker("clock-reset", "reset-clock", targets)
            result: dict[str, Any] = {
                "brokers": sorted(int(b) for b in took),
                **a.record(),
                "clock": took,
            }
            if missed:
                result["missed"] = missed
            return Done(result, heal)

        value = {**_aimed(role, self.topic, self.partition), "offset_s": offset}
        if self.strobe_ms:
            value["strobe_ms"] = self.strobe_ms
        yield Step("clock", value, act)


def _uncut_pairs(pairs: list[tuple[int, int]]) -> tuple[Undo, ...]:
    return tuple(
        Undo("uncut", link=LinkId(src, dst, kind))  # type: ignore[arg-type]
        for src, dst in pairs
        for kind in ("internal", "controller")
    )


@dataclass(frozen=True)
class PartitionFault:
    """Cut broker-to-broker links (replication and quorum) along a topology."""

    topic: str
    partition: int
    topologies: tuple[str, ...]
    mode: CutMode = "drop"
    name: str = "partition"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        topology = self.topologies[pick % len(self.topologies)]
        rng = random.Random(pick)

        def act() -> Done:
            nodes = sorted(ctl.node_ids)
            base, _, role = topology.partition("-")
            isolated: list[int] = []
            chosen: dict[str, Any] = {}
            if base == "isolate":
                a = aim(role or "random", ctl, self.topic, self.partition, pick)
                (target,) = a.brokers[:1]
                grudge = topologies.build("isolate", nodes, rng, target)
                isolated, chosen = [target], a.record()
            else:
                grudge = topologies.build(topology, nodes, rng)
            # Reject mode cannot be one-way: a disabled proxy refuses both directions.
            one_way = any(
                n in grudge.get(m, ()) and m not in grudge.get(n, ()) for n in nodes for m in nodes
            )
            mode: CutMode = "drop" if one_way else self.mode
            cuts = topologies.directed_cuts(grudge)
            seen: dict[str, Any] = {}
            for src, dst, stream in cuts:
                for kind in ("internal", "controller"):
                    link = LinkId(src, dst, kind)  # type: ignore[arg-type]
                    _note(seen, link.label(), ctl.cut(link, mode, (stream,)))  # type: ignore[arg-type]
            result: dict[str, Any] = {
                "brokers": sorted({n for n, g in grudge.items() if g}),
                "mode": mode,
                "grudge": {str(k): sorted(v) for k, v in grudge.items() if v},
            } | ({"seen": seen} if seen else {})
            if isolated:
                result |= {"isolated": isolated, **chosen}
            heal = Heal(
                "heal",
                {"links": len(cuts)},
                {"brokers": sorted({n for c in cuts for n in c[:2]})},
                _uncut_pairs(sorted({(s, d) for s, d, _ in cuts})),
            )
            return Done(result, heal if cuts else None)

        yield Step("partition", {"topology": topology, "mode": self.mode}, act)


@dataclass(frozen=True)
class ClientPartition:
    """Cut host clients off from the brokers a role names: every client, or (with
    several client lanes, `scope="one"`) a single client's lane."""

    topic: str
    partition: int
    roles: tuple[str, ...]
    mode: CutMode = "drop"
    scope: str = "all"
    name: str = "client-partition"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]
        n_lanes = ctl.client_lanes
        lanes = [pick % n_lanes] if self.scope == "one" else list(range(n_lanes))

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            links = [LinkId(None, b, "client", k) for b in targets for k in lanes]
            seen: dict[str, Any] = {}
            for link in links:
                _note(seen, link.label(), ctl.cut(link, self.mode))
            heal = Heal(
                "client-heal",
                {},
                {"brokers": sorted(targets), "lanes": sorted(lanes)},
                tuple(Undo("uncut", link=lk) for lk in links),
            )
            result = {"brokers": targets, **a.record(), "lanes": lanes}
            result |= {"seen": seen} if seen else {}
            return Done(result, heal if links else None)

        yield Step(
            "client-partition", {"target": role, "mode": self.mode, "scope": self.scope}, act
        )


@dataclass(frozen=True)
class Degrade:
    """Add a toxic (latency, bandwidth, slicer, reset_peer, limit_data, slow_close) to a
    set of links: `client` links of targeted brokers, or `follower-replication`, the
    fetch link from one of the partition's followers to its leader (claim C15)."""

    topic: str
    partition: int
    toxic: Toxic
    links: str
    roles: tuple[str, ...]
    name: str = "degrade"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        def act() -> Done:
            chosen: dict[str, Any] = {}
            if self.links == "follower-replication":
                st = ctl.partitions(self.topic)[self.partition]
                if st.leader is None:
                    raise RuntimeError("partition has no leader")
                followers = [r for r in st.replicas if r != st.leader]
                hit = [followers[pick % len(followers)]]
                links = [LinkId(f, st.leader, "internal") for f in hit]
            else:
                role = self.roles[pick % len(self.roles)]
                a = aim(role, ctl, self.topic, self.partition, pick)
                hit, chosen = a.brokers, a.record()
                links = [LinkId(None, b, "client") for b in hit]
            seen: dict[str, Any] = {}
            for link in links:
                _note(seen, link.label(), ctl.add_toxic(link, self.toxic))
            heal = Heal(
                "restore",
                {"toxic": self.toxic.type},
                {"brokers": list(hit)},
                tuple(Undo("remove-toxic", link=lk, toxic=self.toxic.name) for lk in links),
            )
            result = {"brokers": hit, **chosen, "links": [lk.label() for lk in links]}
            return Done(result | ({"seen": seen} if seen else {}), heal if links else None)

        value = {
            "toxic": self.toxic.type,
            "attributes": self.toxic.attributes,
            "stream": self.toxic.stream,
            "links": self.links,
        }
        yield Step("degrade", value, act)


@dataclass(frozen=True)
class ClientPause:
    """Freeze one client process (SIGSTOP) as a stop-the-world GC pause would: every
    thread of the application stops at once, librdkafka's too, and its timers run on
    when it wakes. The client is the pick's choice among those running in processes of
    their own (`producer.own_process`). The completion gives the kernel's state of it
    (T: stopped); none to freeze, or one that did not stop: `info`."""

    name: str = "client-pause"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        def act() -> Done:
            live = CLIENTS.live()
            if not live:
                raise NoTarget("no client runs in a process of its own (set producer.own_process)")
            c = random.Random(pick).choice(live)
            doing = c.doing()
            state = CLIENTS.pause(c.pid)
            if state != "T":
                CLIENTS.resume(c.pid)
                raise RuntimeError(f"{c.name} (pid {c.pid}) did not stop: state {state}")
            heal = Heal(
                "client-resume", {"clients": [c.name]}, {}, (Undo("resume-client", client=c.pid),)
            )
            # The call it was in (a commit, a produce...), if any, as the pause hit it.
            frozen = {"name": c.name, "state": state, "in_call": doing}
            return Done({"clients": {str(c.pid): frozen}}, heal)

        yield Step("client-pause", {"target": "client"}, act)


# How long a SIGKILLed instance may take to be seen ended: the kernel ends a killed
# process group at once, and the engine reports a killed container within a second;
# past this the kill did not take.
APP_GONE_S = 5.0
# How long a SIGSTOPped process group may take to show T: stopping is not instant.
APP_STOP_S = 0.5


def _kernel_state(seen: dict[str, Any]) -> str | None:
    """The kernel's state of an instance that is a process (None: a container, or gone)."""
    pid = seen.get("pid")
    return process_state(pid) if isinstance(pid, int) else None


def _who(desc: dict[str, Any]) -> str:
    what = f"pid {desc['pid']}" if "pid" in desc else f"container {desc.get('container')}"
    return f"app instance {desc.get('instance')} ({what})"


def _pick_app(pick: int, exclude_stopped: bool) -> AppInstance:
    """The pick's choice among the running instances. A pause or a SIGTERM skips a
    process already stopped (T): a second SIGSTOP would record a pause that changed
    nothing, and a SIGTERM to a stopped process waits, undelivered, for its SIGCONT."""
    live = APPS.live()
    if exclude_stopped:
        live = [a for a in live if _kernel_state(a.describe()) != "T"]
    if not live:
        raise NoTarget("no instance of the application on trial is running")
    return random.Random(pick).choice(live)


def _app_ends(app: AppInstance, by: str, kill: bool) -> dict[str, Any]:
    """SIGKILL or SIGTERM one instance: what it showed before and after. A kill must
    be seen to end it; a SIGTERM starts a graceful stop, which may take its time."""
    desc = app.describe()
    before = _kernel_state(desc)
    seen = app.kill(by) if kill else app.terminate(by)
    if kill and not wait_until(lambda: not app.running(), APP_GONE_S, 0.05):
        raise RuntimeError(f"{_who(desc)} still runs {APP_GONE_S:.0f} s after SIGKILL")
    out = {**seen, **desc, ("killed" if kill else "terminated"): True}
    if "pid" in desc:
        # What the kernel showed, read here: the process's own account cannot be it.
        out |= {"state": before or "gone", "after": _kernel_state(desc) or "gone"}
    return out


def _app_pause(app: AppInstance) -> Done:
    desc = app.describe()
    before = _kernel_state(desc)
    seen = APPS.pause(app)
    if "pid" in desc:
        wait_until(lambda: _kernel_state(desc) in ("T", None), APP_STOP_S, 0.01)
        state, want = _kernel_state(desc), "T"
        seen = {**seen, "was": before, "state": state}
    else:
        state, want = seen.get("state"), "paused"
    if state != want:
        APPS.resume(app.index)  # nothing half-done stays behind an info op
        raise RuntimeError(f"{_who(desc)} did not stop: state {state}")
    heal = Heal("app-resume", {"instances": [app.index]}, {}, (Undo("resume-app", app=app.index),))
    return Done({**seen, **desc}, heal)


def _app_partition(app: AppInstance) -> Done:
    desc = app.describe()
    try:
        seen = APPS.cut(app)
    except Exception:
        app.uncut()  # the links it did cut come back before the op ends info
        raise
    heal = Heal("app-heal", {"instances": [app.index]}, {}, (Undo("uncut-app", app=app.index),))
    return Done({**seen, **desc}, heal)


@dataclass(frozen=True)
class AppFault:
    """A fault on one instance of the application on trial (workloads' `app`), the
    pick's choice among those running: `kill` (SIGKILL of its process group, or its
    container killed), `restart` (SIGTERM, or `docker stop`: graceful), both restarted
    by the app's supervisor; `pause` (SIGSTOP, or `docker pause`) until the heal
    resumes it; `partition` (the proxies of its client lane disabled) until the heal.

    The completion names the instance (`instance`, and `pid` or `container`) and the
    state it showed: the kernel's, read from /proc, for a process; the engine's for a
    container. No instance running, or an effect not seen (still running after the
    kill, not stopped after the pause): the op completes `info`."""

    kind: Literal["kill", "pause", "restart", "partition"]
    name: str

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        def act() -> Done:
            app = _pick_app(pick, exclude_stopped=self.kind in ("pause", "restart"))
            if self.kind in ("kill", "restart"):
                return Done(_app_ends(app, self.name, kill=self.kind == "kill"))
            return _app_pause(app) if self.kind == "pause" else _app_partition(app)

        yield Step(self.name, {"target": "app"}, act)


def _process(kind: str) -> Callable[[NemesisSpec, str], Package]:
    return lambda n, t: ProcessFault(kind, t, n.target_partition, n.targets, kind)  # type: ignore[arg-type]


def _degrade(links: str | None, name: str) -> Callable[[NemesisSpec, str], Package]:
    def build(n: NemesisSpec, t: str) -> Package:
        d = n.degrade
        toxic = Toxic(f"kt-{d.type}", d.type, d.stream, dict(d.attributes))  # type: ignore[arg-type]
        return Degrade(t, n.target_partition, toxic, links or d.links, n.targets, name)

    return build


BUILDERS: dict[str, Callable[[NemesisSpec, str], Package]] = {
    "kill": _process("kill"),
    "stop": _process("stop"),
    "pause": _process("pause"),
    "bounce": _process("bounce"),
    "kill-leader": lambda n, t: ProcessFault(
        "kill", t, n.target_partition, ("leader",), "kill-leader"
    ),
    "partition": lambda n, t: PartitionFault(t, n.target_partition, n.topologies, n.partition_mode),
    "isolate-broker": lambda n, t: PartitionFault(
        t, n.target_partition, ("isolate-random",), n.partition_mode, "isolate-broker"
    ),
    "client-partition": lambda n, t: ClientPartition(
        t, n.target_partition, n.targets, n.partition_mode, n.client_scope
    ),
    "client-pause": lambda n, t: ClientPause(),
    "hijack-txn": lambda n, t: HijackTxn(),
    "fence-txn-id": lambda n, t: HijackTxn(name="fence-txn-id"),
    "degrade": _degrade(None, "degrade"),
    "slow-follower": _degrade("follower-replication", "slow-follower"),
    "wipe": lambda n, t: WipeData(t, n.target_partition, n.targets),
    "power-loss": lambda n, t: PowerLoss(t, n.target_partition, n.targets),
    "disk-full": lambda n, t: DiskFull(t, n.target_partition, n.targets),
    "clock": lambda n, t: ClockFault(
        t, n.target_partition, n.targets, n.clock.offsets_s, n.clock.strobe_ms, n.fault_s
    ),
    "corrupt": lambda n, t: Corrupt(t, n.target_partition, n.targets, n.corrupt_modes),
    "packet": lambda n, t: PacketFault(t, n.target_partition, n.targets, n.packet),
    "rolling-restart": lambda n, t: RollingRestart(t),
    "preferred-election": lambda n, t: PreferredElection(t),
    "reassign": lambda n, t: Reassign(
        t, n.target_partition, throttle_bytes=n.reassign.throttle_bytes
    ),
    "voter-change": lambda n, t: VoterChange(),
    "remove-broker": lambda n, t: RemoveBroker(),
    "unclean-failover": lambda n, t: UncleanFailover(t, n.target_partition, n.fault_s),
    "last-replica-power-loss": lambda n, t: LastReplicaStanding(t, n.target_partition, n.fault_s),
    "app-kill": lambda n, t: AppFault("kill", "app-kill"),
    "app-pause": lambda n, t: AppFault("pause", "app-pause"),
    "app-restart": lambda n, t: AppFault("restart", "app-restart"),
    "app-partition": lambda n, t: AppFault("partition", "app-partition"),
}
# Each catalog entry (PackageInfo) has exactly one builder, keyed by its name: they
# are apart only because the builders need NemesisSpec, whose validation imports the
# catalog. A builder without an entry, or an entry without one, is a bug to catch at
# import, not mid-run.
if set(BUILDERS) != set(PACKAGES):
    raise ImportError(f"nemesis builders and catalog disagree: {set(BUILDERS) ^ set(PACKAGES)}")


def build_package(name: str, settings: NemesisSpec, topic: str) -> Package:
    if name not in BUILDERS:
        raise ValueError(f"unknown nemesis package {name}; choose from {', '.join(PACKAGES)}")
    return BUILDERS[name](settings, topic)
