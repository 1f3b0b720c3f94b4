"""Fault packages: a fault, the heal that undoes it, targets chosen when it starts.

A package's fault returns the state its heal needs (which brokers it hit), so a
heal undoes exactly what was done. Healing everything is separate and always
possible: `Cluster.heal_all`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import ElectionType, KafkaException, TopicPartition

from harness.cluster import Cluster
from harness.spec import RunSpec
from nemesis.recorder import NemesisRecorder


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


@dataclass
class KillLeader:
    """SIGKILL the leader of the target partition; the heal starts it again."""

    cluster: Cluster
    rec: NemesisRecorder
    topic: str
    partition: int
    name: str = "kill-leader"
    _killed: tuple[int, ...] = ()

    def fault(self, pick: int) -> dict[str, Any] | None:
        def act() -> dict[str, Any]:
            leader = self.cluster.leader_of(self.topic, self.partition)
            if leader is None:
                raise RuntimeError(f"no leader known for {self.topic}/{self.partition}")
            self.cluster.brokers[leader].kill()
            self._killed = (leader,)
            return {"brokers": [leader]}

        self.rec.do(
            "kill", {"target": "leader", "topic": self.topic, "partition": self.partition}, act
        )
        return None

    def heal(self) -> None:
        killed, self._killed = self._killed, ()
        if killed:

            def act() -> dict[str, Any]:
                for b in killed:
                    self.cluster.brokers[b].start()
                return {}

            self.rec.do("start", {"brokers": list(killed)}, act)


@dataclass
class IsolateBroker:
    """Cut every replication and quorum link to and from one broker."""

    cluster: Cluster
    rec: NemesisRecorder
    mode: str = "drop"
    name: str = "isolate-broker"
    _isolated: tuple[int, ...] = ()

    def fault(self, pick: int) -> dict[str, Any] | None:
        nodes = self.cluster.node_ids
        target = nodes[pick % len(nodes)]

        def act() -> dict[str, Any]:
            for other in nodes:
                if other != target:
                    for link in self.cluster.peer_links(target, other):
                        link.cut(self.mode)  # type: ignore[arg-type]
            self._isolated = (target,)
            return {"brokers": [target]}

        self.rec.do(
            "partition", {"topology": "isolate", "isolated": [target], "mode": self.mode}, act
        )
        return None

    def heal(self) -> None:
        isolated, self._isolated = self._isolated, ()
        if isolated:

            def act() -> dict[str, Any]:
                for target in isolated:
                    for other in self.cluster.node_ids:
                        if other != target:
                            for link in self.cluster.peer_links(target, other):
                                link.heal()
                return {"brokers": list(isolated)}

            self.rec.do("heal", {"topology": "isolate", "isolated": list(isolated)}, act)


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
                cl.link(f, leader, "internal").heal()
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


def build_packages(spec: RunSpec, cluster: Cluster, rec: NemesisRecorder) -> list[Package]:
    n = spec.nemesis
    out: list[Package] = []
    for name in n.faults:
        if name == "kill-leader":
            out.append(KillLeader(cluster, rec, spec.topic.name, n.target_partition))
        elif name == "isolate-broker":
            out.append(IsolateBroker(cluster, rec))
        elif name == "unclean-failover":
            out.append(
                UncleanFailover(cluster, rec, spec.topic.name, n.target_partition, n.fault_s)
            )
    return out
