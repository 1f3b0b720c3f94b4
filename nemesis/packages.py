"""Fault packages: a fault, the heal that undoes it, targets chosen when it starts.

A package's fault returns the state its heal needs (which brokers it hit), so a
heal undoes exactly what was done. Healing everything is separate and always
possible: `Cluster.heal_all`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import ElectionType, KafkaException, TopicPartition

from harness.cluster import Cluster, Link
from harness.spec import RunSpec
from harness.toxiproxy import Toxic
from nemesis import topologies
from nemesis.recorder import NemesisRecorder
from nemesis.targets import resolve


class Package(Protocol):
    name: str

    def fault(self, pick: int) -> dict[str, Any] | None: ...

    def heal(self) -> None: ...


def _wait(cond: Callable[[], bool], timeout_s: float, every_s: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every_s)
    return cond()


PROCESS_HEAL = {"kill": "start", "stop": "start", "pause": "resume"}


@dataclass
class ProcessFault:
    """kill (SIGKILL), stop (SIGTERM), pause (cgroup freezer) or bounce (kill and
    start at once) the brokers a role names; the heal starts or resumes them."""

    kind: str
    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    roles: tuple[str, ...]
    name: str = ""
    _hit: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        self.name = self.name or self.kind

    def fault(self, pick: int) -> dict[str, Any] | None:
        role = self.roles[pick % len(self.roles)]

        def act() -> dict[str, Any]:
            targets = resolve(role, self.cluster, self.topic, self.partition, pick)
            for b in targets:
                broker = self.cluster.brokers[b]
                if self.kind == "kill":
                    broker.kill()
                elif self.kind == "stop":
                    broker.stop()
                elif self.kind == "pause":
                    broker.pause()
                elif self.kind == "bounce":
                    broker.kill()
                    broker.start()
                else:
                    raise ValueError(f"unknown process fault {self.kind}")
            if self.kind != "bounce":
                self._hit = tuple(targets)
            return {"brokers": targets}

        self.rec.do(
            self.kind, {"target": role, "topic": self.topic, "partition": self.partition}, act
        )
        return None

    def heal(self) -> None:
        hit, self._hit = self._hit, ()
        if not hit:
            return

        def act() -> dict[str, Any]:
            for b in hit:
                if self.kind == "pause":
                    self.cluster.brokers[b].resume()
                else:
                    self.cluster.brokers[b].start()
            return {}

        self.rec.do(PROCESS_HEAL[self.kind], {"brokers": list(hit)}, act)


@dataclass
class WipeData:
    """Kill the targeted brokers, delete their data directory (log segments and KRaft
    metadata alike), and start them again with empty storage: the KIP-903 class of
    failure. The heal is the restart itself; nothing can bring the data back."""

    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    roles: tuple[str, ...]
    name: str = "wipe"

    def fault(self, pick: int) -> dict[str, Any] | None:
        role = self.roles[pick % len(self.roles)]

        def act() -> dict[str, Any]:
            targets = resolve(role, self.cluster, self.topic, self.partition, pick)
            for b in targets:
                self.cluster.wipe_data(b)
            return {"brokers": targets}

        self.rec.do("wipe", {"target": role, "topic": self.topic, "partition": self.partition}, act)
        return None

    def heal(self) -> None:
        return None


@dataclass
class PartitionFault:
    """Cut broker-to-broker links (replication and quorum) along a topology."""

    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    topologies: tuple[str, ...]
    mode: str = "drop"
    name: str = "partition"
    _cuts: tuple[tuple[int, int, str], ...] = ()

    def fault(self, pick: int) -> dict[str, Any] | None:
        topology = self.topologies[pick % len(self.topologies)]
        rng = random.Random(pick)

        def act() -> dict[str, Any]:
            nodes = sorted(self.cluster.node_ids)
            base, _, role = topology.partition("-")
            isolated: list[int] = []
            if base == "isolate":
                (target,) = resolve(
                    role or "random", self.cluster, self.topic, self.partition, pick
                )[:1]
                grudge = topologies.build("isolate", nodes, rng, target)
                isolated = [target]
            else:
                grudge = topologies.build(topology, nodes, rng)
            # Reject mode cannot be one-way: a disabled proxy refuses both directions.
            one_way = any(
                n in grudge.get(m, ()) and m not in grudge.get(n, ()) for n in nodes for m in nodes
            )
            mode = "drop" if one_way else self.mode
            cuts = topologies.directed_cuts(grudge)
            for src, dst, stream in cuts:
                for kind in ("internal", "controller"):
                    link = self.cluster.link(src, dst, kind)  # type: ignore[arg-type]
                    link.cut(mode, (stream,))  # type: ignore[arg-type]
            self._cuts = tuple(cuts)
            hit = sorted({n for n, g in grudge.items() if g})
            result: dict[str, Any] = {
                "brokers": hit,
                "mode": mode,
                "grudge": {str(k): sorted(v) for k, v in grudge.items() if v},
            }
            if isolated:
                result["isolated"] = isolated
            return result

        self.rec.do("partition", {"topology": topology, "mode": self.mode}, act)
        return None

    def heal(self) -> None:
        cuts, self._cuts = self._cuts, ()
        if not cuts:
            return

        def act() -> dict[str, Any]:
            for src, dst in sorted({(s, d) for s, d, _ in cuts}):
                for kind in ("internal", "controller"):
                    self.cluster.link(src, dst, kind).uncut()  # type: ignore[arg-type]
            return {"brokers": sorted({n for c in cuts for n in c[:2]})}

        self.rec.do("heal", {"links": len(cuts)}, act)


@dataclass
class ClientPartition:
    """Cut host clients off from the brokers a role names: every client, or (with
    several client lanes, `scope="one"`) a single client's lane."""

    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    roles: tuple[str, ...]
    mode: str = "drop"
    scope: str = "all"
    name: str = "client-partition"
    _cut: tuple[Link, ...] = ()

    def fault(self, pick: int) -> dict[str, Any] | None:
        role = self.roles[pick % len(self.roles)]
        n_lanes = self.cluster.spec.client_lanes
        lanes = [pick % n_lanes] if self.scope == "one" else list(range(n_lanes))

        def act() -> dict[str, Any]:
            targets = resolve(role, self.cluster, self.topic, self.partition, pick)
            links = [self.cluster.link(None, b, "client", k) for b in targets for k in lanes]
            for link in links:
                link.cut(self.mode)  # type: ignore[arg-type]
            self._cut = tuple(links)
            return {"brokers": targets, "lanes": lanes}

        self.rec.do(
            "client-partition", {"target": role, "mode": self.mode, "scope": self.scope}, act
        )
        return None

    def heal(self) -> None:
        cut, self._cut = self._cut, ()
        if cut:

            def act() -> dict[str, Any]:
                for link in cut:
                    link.uncut()
                return {
                    "brokers": sorted({lk.dst for lk in cut}),
                    "lanes": sorted({lk.lane for lk in cut}),
                }

            self.rec.do("client-heal", {}, act)


@dataclass
class Degrade:
    """Add a toxic (latency, bandwidth, slicer, reset_peer, limit_data, slow_close) to a
    set of links: `client` links of targeted brokers, or `follower-replication`, the
    fetch links from the partition's followers to its leader (claim C15)."""

    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    toxic: Toxic
    links: str
    roles: tuple[str, ...]
    name: str = "degrade"
    _applied: tuple[Link, ...] = ()
    _hit: tuple[int, ...] = ()

    def fault(self, pick: int) -> dict[str, Any] | None:
        def act() -> dict[str, Any]:
            cl = self.cluster
            if self.links == "follower-replication":
                st = cl.partitions(self.topic)[self.partition]
                if st.leader is None:
                    raise RuntimeError("partition has no leader")
                followers = [r for r in st.replicas if r != st.leader]
                chosen = [followers[pick % len(followers)]]
                links = [cl.link(f, st.leader, "internal") for f in chosen]
                hit = chosen
            else:
                role = self.roles[pick % len(self.roles)]
                hit = resolve(role, cl, self.topic, self.partition, pick)
                links = [cl.link(None, b, "client") for b in hit]
            for link in links:
                link.add_toxic(self.toxic)
            self._applied = tuple(links)
            self._hit = tuple(hit)
            return {"brokers": hit, "links": [f"{lk.src}->{lk.dst}:{lk.kind}" for lk in links]}

        self.rec.do(
            "degrade",
            {
                "toxic": self.toxic.type,
                "attributes": self.toxic.attributes,
                "stream": self.toxic.stream,
                "links": self.links,
            },
            act,
        )
        return None

    def heal(self) -> None:
        applied, self._applied = self._applied, ()
        if applied:

            def act() -> dict[str, Any]:
                for link in applied:
                    link.toxi.remove_toxic(link.proxy, self.toxic.name)
                return {"brokers": list(self._hit)}

            self.rec.do("restore", {"toxic": self.toxic.type}, act)


@dataclass
class UncleanFailover:
    """Claims C2/C5 as one fault: the leader keeps taking writes alone, then dies,
    and an out-of-sync follower is elected.

    1. cut the followers' replication links to the leader (the leader still
       reaches the controller, so it shrinks the ISR to itself);
    2. hold while clients write to the lone leader;
    3. kill the leader, restore the links, and elect a follower uncleanly.
    The heal restarts the old leader, which truncates to the new one.
    """

    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    hold_s: float
    name: str = "unclean-failover"
    _killed: tuple[int, ...] = ()

    def fault(self, pick: int) -> dict[str, Any] | None:
        cl = self.cluster
        state: dict[str, Any] = {}

        def cut() -> dict[str, Any]:
            st = cl.partitions(self.topic)[self.partition]
            if st.leader is None:
                raise RuntimeError("partition has no leader")
            followers = [r for r in st.replicas if r != st.leader]
            for f in followers:
                cl.link(f, st.leader, "internal").cut("drop")
            state.update(leader=st.leader, followers=followers)
            return {"brokers": followers, "leader": st.leader}

        if not self.rec.do(
            "partition",
            {
                "topology": "followers-from-leader",
                "topic": self.topic,
                "partition": self.partition,
                "mode": "drop",
            },
            cut,
        ):
            return None
        leader = state["leader"]

        def shrunk() -> dict[str, Any]:
            ok = _wait(lambda: _isr(cl, self.topic, self.partition) == (leader,), 60)
            isr = _isr(cl, self.topic, self.partition)
            if not ok:
                raise RuntimeError(f"ISR did not shrink to the leader alone (isr={isr})")
            return {"isr": list(isr or ())}

        self.rec.do("await-isr-shrink", {"topic": self.topic, "partition": self.partition}, shrunk)
        time.sleep(self.hold_s)  # the writes the leader alone acknowledges

        def kill() -> dict[str, Any]:
            cl.brokers[leader].kill()
            self._killed = (leader,)
            return {"brokers": [leader]}

        self.rec.do(
            "kill", {"target": "leader", "topic": self.topic, "partition": self.partition}, kill
        )

        def heal_links() -> dict[str, Any]:
            for f in state["followers"]:
                cl.link(f, leader, "internal").uncut()
            return {"brokers": state["followers"]}

        self.rec.do("heal", {"topology": "followers-from-leader"}, heal_links)

        def elect() -> dict[str, Any]:
            return {"leader": _elect_unclean(cl, self.topic, self.partition, leader)}

        self.rec.do("elect-unclean", {"topic": self.topic, "partition": self.partition}, elect)
        return None

    def heal(self) -> None:
        killed, self._killed = self._killed, ()
        if killed:

            def act() -> dict[str, Any]:
                for b in killed:
                    self.cluster.brokers[b].start()
                return {}

            self.rec.do("start", {"brokers": list(killed)}, act)


def _isr(cl: Cluster, topic: str, partition: int) -> tuple[int, ...] | None:
    try:
        st = cl.partitions(topic).get(partition)
    except KafkaException:
        return None
    return tuple(sorted(st.isr)) if st else None


def _elect_unclean(cl: Cluster, topic: str, partition: int, dead: int) -> int:
    """Ask the controller for an unclean election until a live replica leads."""
    deadline = time.monotonic() + 60
    last = ""
    while time.monotonic() < deadline:
        try:
            fut = cl.admin().elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, partition)])
            fut.result(15)
        except KafkaException as e:
            last = str(e)
        leader = cl.leader_of(topic, partition)
        if leader is not None and leader != dead:
            return leader
        time.sleep(1)
    raise RuntimeError(f"no unclean election happened within 60s ({last})")


def build_package(name: str, spec: RunSpec, cluster: Cluster, rec: NemesisRecorder) -> Package:
    n = spec.nemesis
    t, p = spec.topic.name, n.target_partition
    if name in ("kill", "stop", "pause", "bounce"):
        return ProcessFault(name, cluster, rec, t, p, n.targets)
    if name == "kill-leader":
        return ProcessFault("kill", cluster, rec, t, p, ("leader",), name=name)
    if name == "isolate-broker":
        return PartitionFault(cluster, rec, t, p, ("isolate-random",), n.partition_mode, name)
    if name == "partition":
        return PartitionFault(cluster, rec, t, p, n.topologies, n.partition_mode)
    if name == "client-partition":
        return ClientPartition(cluster, rec, t, p, n.targets, n.partition_mode, n.client_scope)
    if name in ("degrade", "slow-follower"):
        d = n.degrade
        toxic = Toxic(f"kt-{d.type}", d.type, d.stream, dict(d.attributes))
        links = "follower-replication" if name == "slow-follower" else d.links
        return Degrade(cluster, rec, t, p, toxic, links, n.targets, name=name)
    if name == "wipe":
        return WipeData(cluster, rec, t, p, n.targets)
    if name == "unclean-failover":
        return UncleanFailover(cluster, rec, t, p, n.fault_s)
    raise ValueError(f"unknown nemesis package {name}")


def build_packages(spec: RunSpec, cluster: Cluster, rec: NemesisRecorder) -> list[Package]:
    return [build_package(name, spec, cluster, rec) for name in spec.nemesis.faults]
