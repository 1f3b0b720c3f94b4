"""Faults that change who is in the cluster, as operators do: a controller voter
removed from the KRaft quorum and added back (KIP-853), and a broker decommissioned
(its replicas moved off, stopped, unregistered) and a fresh one added in its place.
Each verifies its change by reading the cluster back and records what it found; one
whose change did not show completes `info`, and its heal is guaranteed: the nemesis
keeps it outstanding until it succeeds, and a heal-all adds every voter back."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_trial.cluster.control import (
    ClusterControl,
    MembershipControl,
    PartitionState,
    Quorum,
    Refused,
    membership,
)
from kafka_trial.nemesis.steps import Done, Heal, Step, Undo, Unfinished, wait_until


class NotChanged(RuntimeError):
    """The membership change did not take effect, or not in time: the reason says what
    the cluster showed."""


def _quorum_or_none(m: MembershipControl, within_s: float) -> Quorum | None:
    """The quorum, or None while it cannot answer (a removed leader resigns, and the
    others elect a new one)."""
    try:
        return m.quorum(within_s)
    except RuntimeError:
        return None


@dataclass(frozen=True)
class VoterChange:
    """One controller removed from the KRaft voter set (Admin.removeRaftVoter), as an
    operator retires a controller: the quorum leader on even picks, another voter (the
    pick's choice) on odd ones. Its controller keeps running, as an observer: it
    fetches the metadata log and votes no more, so the quorum's majority is counted
    over one voter fewer. The completion records the voter set before and after as
    the quorum's leader described it, and whether the removed node is an observer
    now (and `asked_error`, when the request itself failed but the quorum shows the
    change all the same); a removal the quorum does not show within `settle_s`
    completes `info` with its add-back still outstanding (the change may yet
    commit). The heal adds it back by its directory id and waits until it is a
    voter again and every voter holds the metadata log up to the high watermark."""

    settle_s: float = 30.0
    name: str = "voter-change"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        side = "leader" if pick % 2 == 0 else "follower"
        yield Step("voter-remove", {"target": f"quorum-{side}"}, lambda: self._remove(ctl, pick))

    def _remove(self, ctl: ClusterControl, pick: int) -> Done:
        m = membership(ctl)
        before = m.quorum()
        if len(before.voters) < 2:
            raise NotChanged(f"the quorum has one voter ({sorted(before.voters)}): none to spare")
        others = sorted(v for v in before.voters if v != before.leader)
        if pick % 2 == 0 and before.leader in before.voters:
            node = before.leader
        else:
            node = random.Random(pick).choice(others)
        directory = before.voters[node]
        # Once asked, the removal's fate is the quorum's: a VotersRecord the leader
        # appended takes effect at once and may commit after an error or a timeout
        # here (its new majority cut off, say), so from here on the add-back stays
        # outstanding whatever this step finds.
        heal = Heal("voter-add", {"voter": node}, {}, (Undo("add-voter", node=node),))
        asked_error: str | None = None
        try:
            m.remove_voter(node, directory)
        except Refused:
            raise  # nothing was asked: nothing to add back
        except RuntimeError as e:
            # The quorum decides, not the answer: the admin call can time out just
            # before the change commits (seen on 4.4.0 with the new majority cut off).
            asked_error = str(e)
        seen: list[Quorum] = []
        deadline = time.monotonic() + self.settle_s

        def gone() -> bool:
            # Each look bounded by what is left of settle_s: a quorum that cannot
            # answer (no leader inside a partition) cost up to 27 s a look, and the
            # wait ran to 100 s of a 30 s settle.
            q = _quorum_or_none(m, deadline - time.monotonic())
            if q is not None:
                seen.append(q)
            return q is not None and node not in q.voters

        if not wait_until(gone, self.settle_s, every_s=1.0):
            last = sorted(seen[-1].voters) if seen else "no answer"
            how = f"ended in an error ({asked_error})" if asked_error else "was accepted"
            raise Unfinished(
                f"node {node} still a voter {self.settle_s:.0f} s after its removal {how} "
                f"(voters {last})",
                heal,
            )
        after = seen[-1]
        return Done(
            ({"asked_error": asked_error} if asked_error else {})
            | {
                "voter": node,
                "directory_id": directory,
                "was_leader": node == before.leader,
                "before": sorted(before.voters),
                "after": sorted(after.voters),
                "leader_before": before.leader,
                "leader_after": after.leader,
                "observer": node in after.observers,
            },
            heal,
        )


Moves = dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]


def plan_moves(
    placement: dict[str, dict[int, PartitionState]], broker: int, live: list[int], pick: int
) -> Moves:
    """Where each partition with a replica on `broker` goes: that replica to a live
    broker that holds none of it (the pick's choice), or, where every live broker
    holds one already, nowhere (one replica fewer until the heal puts it back)."""
    rng = random.Random(pick)
    out: Moves = {}
    for topic in sorted(placement):
        for p, st in sorted(placement[topic].items()):
            if broker not in st.replicas:
                continue
            spare = [b for b in sorted(live) if b != broker and b not in st.replicas]
            if spare:
                to = rng.choice(spare)
                target = tuple(to if r == broker else r for r in st.replicas)
            else:
                target = tuple(r for r in st.replicas if r != broker)
            out[(topic, p)] = (st.replicas, target)
    return out


def _placed(m: MembershipControl, moves: Moves) -> list[str]:
    """The moved partitions not yet where they were moved, in sync."""
    now = m.placement()
    pending = []
    for (t, p), (_, target) in sorted(moves.items()):
        st = now.get(t, {}).get(p)
        if st is None or st.replicas != target or set(st.isr) != set(target):
            pending.append(f"{t}/{p}")
    return pending


def _held_by(m: MembershipControl, broker: int) -> list[str]:
    return [
        f"{t}/{p}"
        for t, parts in sorted(m.placement().items())
        for p, st in sorted(parts.items())
        if broker in st.replicas
    ]


@dataclass(frozen=True)
class RemoveBroker:
    """A broker decommissioned while clients write, as an operator retires one: every
    replica it holds, of every topic, moved off (to a broker that holds none of that
    partition where there is one, else dropped: one replica fewer), the broker stopped
    (SIGTERM) and unregistered (Admin.unregisterBroker). Verified: it is gone from the
    registered brokers (fenced ones too, where Kafka lists them) and holds no replica.
    The completion records what moved where; a move not done within `settle_s`, or a
    broker still registered after `unregister_s` or holding a replica, completes
    `info` (a stopped broker is started again, its replicas moved back, first). The
    heal adds a fresh broker with the old id: its storage emptied and formatted,
    started, registered, and the moved replicas moved back."""

    settle_s: float = 120.0
    unregister_s: float = 30.0
    name: str = "remove-broker"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        yield Step("remove-broker", {"target": "random"}, lambda: self._remove(ctl, pick))

    def _remove(self, ctl: ClusterControl, pick: int) -> Done:
        m = membership(ctl)
        live = sorted(b for b, fenced in m.registered_brokers().items() if fenced is not True)
        if len(live) < 2:
            raise NotChanged(f"one live broker ({live}): no broker to move its replicas to")
        broker = random.Random(pick).choice(live)
        moves = plan_moves(m.placement(), broker, live, pick)
        lost = [f"{t}/{p}" for (t, p), (_, to) in sorted(moves.items()) if not to]
        if lost:
            raise NotChanged(f"broker {broker} holds the only replica of {lost}")
        t0 = time.monotonic()
        m.move_replicas({k: list(to) for k, (_, to) in moves.items()})
        pending = [f"{t}/{p}" for t, p in sorted(moves)]

        def moved() -> bool:
            try:
                pending[:] = _placed(m, moves)
            except Exception:  # no metadata this time (a leader moving): asked again
                return False
            return not pending

        if not wait_until(moved, self.settle_s, every_s=1.0):
            raise NotChanged(
                f"{len(pending)} partitions not off broker {broker} within "
                f"{self.settle_s:.0f} s: {pending[:10]}; the reassignments are left to finish"
            )
        moved_s = round(time.monotonic() - t0, 2)
        back = {k: list(frm) for k, (frm, _) in moves.items()}
        ctl.stop_node(broker)
        try:
            registered = self._unregister(m, broker)
        except Exception:
            # Nothing stays down or moved behind an info op: the broker, with its data,
            # rejoins and gets its replicas back.
            ctl.start_node(broker)
            with contextlib.suppress(RuntimeError):
                m.move_replicas(back)
            raise
        undo = Undo("add-broker", node=broker, replicas=_as_undo(back))
        return Done(
            {
                "broker": broker,
                "moved": {
                    f"{t}/{p}": {"from": list(frm), "to": list(to)}
                    for (t, p), (frm, to) in sorted(moves.items())
                },
                "moved_s": moved_s,
                "registered": registered,
            },
            Heal("add-broker", {"broker": broker}, {}, (undo,)),
        )

    def _unregister(self, m: MembershipControl, broker: int) -> list[int]:
        """Unregister the stopped broker and see it gone: the brokers still registered."""
        m.unregister_broker(broker)
        left: dict[int, bool | None] = {}

        def gone() -> bool:
            try:
                now = m.registered_brokers()
            except RuntimeError:  # the admin tool's answer this time: asked again
                return False
            left.clear()
            left.update(now)
            return broker not in left

        if not wait_until(gone, self.unregister_s, every_s=1.0):
            raise NotChanged(f"broker {broker} still registered after unregistering: {left}")
        holds = _held_by(m, broker)
        if holds:
            raise NotChanged(f"broker {broker} still holds replicas of {holds[:10]}")
        return sorted(left)


def _as_undo(
    replicas: dict[tuple[str, int], list[int]],
) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    return tuple((t, p, tuple(r)) for (t, p), r in sorted(replicas.items()))
