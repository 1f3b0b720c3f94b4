"""Faults that are sequences around a lone leader: claims C2/C5 (it takes writes,
dies, and an out-of-sync follower is elected uncleanly), and KIP-966's "last replica
standing" (it loses power while it is the ISR's only member)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from kafka_trial.cluster.control import ClusterControl, LinkId, PartitionState
from kafka_trial.nemesis.steps import LOST_PATHS, Done, Heal, Step, Undo, wait_until


@dataclass(frozen=True)
class UncleanFailover:
    """Claims C2/C5 as one fault: the leader keeps taking writes alone, then dies,
    and an out-of-sync follower is elected.

    1. cut the followers' replication links to the leader (the leader still
       reaches the controller, so it shrinks the ISR to itself);
    2. hold while clients write to the lone leader;
    3. kill the leader, restore the links, and elect a follower uncleanly.
    The heal restarts the old leader, which truncates to the new one.
    """

    topic: str
    partition: int
    hold_s: float
    name: str = "unclean-failover"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        tp = {"topic": self.topic, "partition": self.partition}
        seen: dict[str, Any] = {}  # what earlier steps found, for the later ones
        yield from _lone_leader(ctl, self.topic, self.partition, seen)
        leader = seen["leader"]
        time.sleep(self.hold_s)  # the writes the leader alone acknowledges

        def kill() -> Done:
            ctl.kill_node(leader)
            heal = Heal("start", {"brokers": [leader]}, {}, (Undo("start", node=leader),))
            return Done({"brokers": [leader]}, heal)

        yield Step("kill", {"target": "leader", **tp}, kill, needed=False)

        def heal_links() -> Done:
            for f in seen["followers"]:
                ctl.uncut(LinkId(f, leader, "internal"))
            return Done({"brokers": seen["followers"]})

        yield Step("heal", {"topology": "followers-from-leader"}, heal_links, needed=False)

        def elect() -> Done:
            return Done({"leader": _elect_unclean(ctl, self.topic, self.partition, leader)})

        yield Step("elect-unclean", tp, elect, needed=False)


@dataclass(frozen=True)
class LastReplicaStanding:
    """KIP-966's "last replica standing": the ISR shrinks to the leader, which then
    loses power (every write it had not fsynced gone) while the followers, which hold
    what it acknowledged, are out of the ISR.

    1. cut the followers' replication links to the leader, and wait until the ISR is
       the leader alone; clients keep writing;
    2. power-loss of the leader (kt-lazyfs drops what it had not fsynced);
    3. restore the followers' links;
    4. wait up to `hold_s` for another replica to lead, and record who leads then
       (none, or the dead leader: the partition waits for its last ISR member).
       Unclean election stays as the topic sets it.
    The heal starts the old leader. Without Eligible Leader Replicas (Kafka 3.9) only
    that leader may lead again, on what it fsynced; with them (4.x) a follower that
    left the ISR below min.insync.replicas is eligible.
    """

    topic: str
    partition: int
    hold_s: float
    name: str = "last-replica-power-loss"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        tp = {"topic": self.topic, "partition": self.partition}
        seen: dict[str, Any] = {}
        yield from _lone_leader(ctl, self.topic, self.partition, seen)
        leader = seen["leader"]

        def power_loss() -> Done:
            answer = ctl.lose_unfsynced([leader])[leader]
            if "error" in answer:
                raise RuntimeError(f"the leader did not lose power: {answer['error']}")
            lost = {k: answer.get(k, 0) for k in ("files", "bytes")}
            lost["paths"] = answer.get("paths", [])[:LOST_PATHS]
            heal = Heal("start", {"brokers": [leader]}, {}, (Undo("start", node=leader),))
            return Done({"brokers": [leader], "lost": {str(leader): lost}}, heal)

        yield Step("power-loss", {"target": "leader", **tp}, power_loss, needed=False)

        def heal_links() -> Done:
            for f in seen["followers"]:
                ctl.uncut(LinkId(f, leader, "internal"))
            return Done({"brokers": seen["followers"]})

        yield Step("heal", {"topology": "followers-from-leader"}, heal_links, needed=False)

        def await_leader() -> Done:
            def state() -> PartitionState | None:
                try:
                    return ctl.partitions(self.topic).get(self.partition)
                except KafkaException:
                    return None

            # The dead leader is named until the controller fences it (its session
            # times out): wait for another, and say how long it took, or that none came.
            t0 = time.monotonic()
            wait_until(
                lambda: (st := state()) is not None and st.leader not in (None, leader), self.hold_s
            )
            st = state()
            got = st.leader if st else None
            elected = got is not None and got != leader
            result: dict[str, Any] = {
                "leader": got,
                "isr": list(st.isr) if st else None,
                "old_leader": leader,
                "elected": elected,
            }
            if elected:
                result["elected_after_s"] = round(time.monotonic() - t0, 1)
            return Done(result)

        yield Step("await-leader", tp, await_leader, needed=False)


def _lone_leader(
    ctl: ClusterControl, topic: str, partition: int, seen: dict[str, Any]
) -> Iterator[Step]:
    """The first steps of both sequences: cut the followers' replication links to the
    leader (the leader still reaches the controller, so it shrinks the ISR), then wait
    until the ISR is the leader alone. `seen` gets the leader and the followers. The
    links are restored by a later step of the sequence, or by the run's heal-all if
    it stops before (a fault leaves at most one heal: the leader's restart)."""
    tp = {"topic": topic, "partition": partition}

    def cut() -> Done:
        st = ctl.partitions(topic)[partition]
        if st.leader is None:
            raise RuntimeError("partition has no leader")
        followers = [r for r in st.replicas if r != st.leader]
        for f in followers:
            ctl.cut(LinkId(f, st.leader, "internal"), "drop")
        seen.update(leader=st.leader, followers=followers)
        return Done({"brokers": followers, "leader": st.leader})

    yield Step("partition", {"topology": "followers-from-leader", **tp, "mode": "drop"}, cut)

    def shrunk() -> Done:
        alone = (seen["leader"],)
        ok = wait_until(lambda: _isr(ctl, topic, partition) == alone, 60)
        isr = _isr(ctl, topic, partition)
        if not ok:
            raise RuntimeError(f"ISR did not shrink to the leader alone (isr={isr})")
        return Done({"isr": list(isr or ())})

    yield Step("await-isr-shrink", tp, shrunk, needed=False)


def _isr(ctl: ClusterControl, topic: str, partition: int) -> tuple[int, ...] | None:
    try:
        st = ctl.partitions(topic).get(partition)
    except KafkaException:
        return None
    return tuple(sorted(st.isr)) if st else None


def _elect_unclean(ctl: ClusterControl, topic: str, partition: int, dead: int) -> int:
    """Ask the controller for an unclean election until a live replica leads."""
    deadline = time.monotonic() + 60
    last = ""
    while time.monotonic() < deadline:
        try:
            ctl.elect_leader(topic, partition, unclean=True)
        except KafkaException as e:
            last = str(e)
        try:
            st = ctl.partitions(topic).get(partition)
        except KafkaException:
            st = None
        if st is not None and st.leader is not None and st.leader != dead:
            return st.leader
        time.sleep(1)
    raise RuntimeError(f"no unclean election happened within 60s ({last})")
