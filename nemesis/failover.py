"""Claims C2/C5 as one fault: the lone leader takes writes, dies, and an
out-of-sync follower is elected uncleanly."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from kafka_trial.cluster.control import ClusterControl, LinkId
from kafka_trial.nemesis.steps import Done, Heal, Step, Undo, wait_until


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

        def cut() -> Done:
            st = ctl.partitions(self.topic)[self.partition]
            if st.leader is None:
                raise RuntimeError("partition has no leader")
            followers = [r for r in st.replicas if r != st.leader]
            for f in followers:
                ctl.cut(LinkId(f, st.leader, "internal"), "drop")
            seen.update(leader=st.leader, followers=followers)
            return Done({"brokers": followers, "leader": st.leader})

        yield Step("partition", {"topology": "followers-from-leader", **tp, "mode": "drop"}, cut)
        leader = seen["leader"]

        def shrunk() -> Done:
            ok = wait_until(lambda: _isr(ctl, self.topic, self.partition) == (leader,), 60)
            isr = _isr(ctl, self.topic, self.partition)
            if not ok:
                raise RuntimeError(f"ISR did not shrink to the leader alone (isr={isr})")
            return Done({"isr": list(isr or ())})

        yield Step("await-isr-shrink", tp, shrunk, needed=False)
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
