"""Faults that change who does what, as operators do, not what breaks: a rolling
restart and a preferred-leader election. Each records what it verifiably changed; one
that changed nothing completes `info`, never a silent success."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka_trial.cluster.control import ClusterControl
from kafka_trial.cluster.throttle import RATES, REPLICAS
from kafka_trial.nemesis.steps import Done, Heal, Step, Undo, Unfinished, wait_until


class NotInSync(RuntimeError):
    """A broker's replicas did not rejoin in time: the roll stops there."""


class NothingElected(RuntimeError):
    """Every partition already had its preferred leader: the election did nothing."""


@dataclass(frozen=True)
class RollingRestart:
    """Each broker in turn stopped (SIGTERM: Kafka's controlled shutdown moves its
    leaderships away first) and started again, the next one only when every partition
    of the run's topic is back in sync, as an operator rolls an upgrade. One op per
    broker, in an order the seed picks; its completion records how long the broker
    was down and how long its replicas took to rejoin. A broker whose partitions do
    not rejoin within `in_sync_s` ends the roll there (that op completes `info`), so
    the roll never takes a second broker down beside a lagging one."""

    topic: str
    in_sync_s: float = 60.0
    name: str = "rolling-restart"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        order = sorted(ctl.node_ids)
        random.Random(pick).shuffle(order)
        for broker in order:
            yield Step(
                "restart", {"broker": broker, "topic": self.topic}, self._restart(ctl, broker)
            )

    def _restart(self, ctl: ClusterControl, broker: int) -> Any:
        def act() -> Done:
            before = ctl.partitions(self.topic)
            led = sorted(p for p, s in before.items() if s.leader == broker)
            t0 = time.monotonic()
            stopped = ctl.stop_node(broker)
            down_s = time.monotonic() - t0
            ctl.start_node(broker)
            t1 = time.monotonic()
            if not ctl.await_in_sync(self.topic, self.in_sync_s):
                raise NotInSync(
                    f"broker {broker}'s partitions of {self.topic} not back in sync "
                    f"{self.in_sync_s:.0f} s after its restart; the roll stops here"
                )
            result: dict[str, Any] = {
                "broker": broker,
                "led": led,
                "down_s": round(down_s, 2),
                "in_sync_after_s": round(time.monotonic() - t1, 2),
            }
            if isinstance(stopped, dict):
                result["seen"] = {str(broker): [stopped]}
            return Done(result)

        return act


@dataclass(frozen=True)
class PreferredElection:
    """A preferred-leader election for every partition of the run's topic (the Admin
    API's, as `kafka-leader-election.sh --election-type PREFERRED` and Kafka's own
    auto.leader.rebalance do): leadership moves back to each partition's first replica
    while clients write. It changes something only where a partition is led by
    another broker (after a leader was killed, stopped or cut off); the completion
    records, per partition, the leader before and after, and an election that moved
    no leader completes `info`. Nothing to heal: leadership stays where it went."""

    topic: str
    settle_s: float = 10.0
    name: str = "preferred-election"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        yield Step("elect-preferred", {"topic": self.topic}, lambda: self._elect(ctl))

    def _elect(self, ctl: ClusterControl) -> Done:
        before = ctl.partitions(self.topic)
        off = {
            p: s.replicas[0]
            for p, s in before.items()
            if s.replicas and s.leader != s.replicas[0] and s.replicas[0] in s.isr
        }
        if not off:
            leaders = {str(p): s.leader for p, s in sorted(before.items())}
            raise NothingElected(
                f"every partition of {self.topic} already had its preferred leader, or that "
                f"replica was out of the ISR (leaders {leaders})"
            )
        refused: dict[str, str] = {}
        for p in sorted(off):
            try:
                ctl.elect_leader(self.topic, p, unclean=False)
            except Exception as e:  # Kafka's answer for that partition, recorded
                refused[str(p)] = f"{type(e).__name__}: {e}"[:200]

        def moved() -> dict[int, int | None]:
            now = ctl.partitions(self.topic)
            return {p: now[p].leader for p in off if p in now}

        wait_until(lambda: all(moved().get(p) == want for p, want in off.items()), self.settle_s)
        after = moved()
        elected = {str(p): {"from": before[p].leader, "to": after.get(p)} for p in sorted(off)}
        if not any(after.get(p) == want for p, want in off.items()):
            raise NothingElected(
                f"no partition of {self.topic} moved to its preferred leader within "
                f"{self.settle_s:.0f} s ({elected}; refused: {refused or 'none'})"
            )
        return Done({"elected": elected} | ({"refused": refused} if refused else {}))


class NotMoved(Unfinished):
    """The reassignment did not start, or not that the controller showed: why is in the
    error, and what it left in force stays outstanding until its heal undoes it."""


def target_replicas(replicas: tuple[int, ...], nodes: list[int], pick: int) -> list[int]:
    """Where a reassignment moves a partition: one replica swapped for a broker that
    holds none, where the cluster has one (a real move, its data copied over);
    otherwise the same replicas in another order (its preferred leader changes, as
    Redpanda's leadership transfer does, and no data moves)."""
    rng = random.Random(pick)
    current = list(replicas)
    spare = [n for n in sorted(nodes) if n not in current]
    if spare:
        out = list(current)
        out[rng.randrange(len(out))] = rng.choice(spare)
        return out
    if len(current) < 2:
        return current
    turn = 1 + rng.randrange(len(current) - 1)
    return current[turn:] + current[:turn]


def throttled_replicas(partition: int, before: list[int], target: list[int]) -> tuple[str, str]:
    """The topic's throttled-replica lists as the tool writes them: the replicas the
    partition has now are leader-throttled (they serve the copy), the ones it moves to
    follower-throttled (they fetch it)."""
    leader = ",".join(f"{partition}:{b}" for b in sorted(before))
    follower = ",".join(f"{partition}:{b}" for b in sorted(set(target) - set(before)))
    return leader, follower


def throttle_missing(
    seen: dict[str, dict[str, str]], rate: int, brokers: list[int], leader: str, follower: str
) -> list[str]:
    """What of the throttle the read-back configs lack, in words ([]: all in force)."""
    missing = [
        f"broker {b} {name}"
        for b in brokers
        for name in RATES
        if seen.get("brokers", {}).get(str(b), {}).get(name) != str(rate)
    ]
    on_topic = seen.get("topic", {})
    for name, want in zip(REPLICAS, (leader, follower), strict=True):
        if set(on_topic.get(name, "").split(",")) != set(want.split(",")):
            missing.append(f"topic {name}")
    return missing


@dataclass(frozen=True)
class Reassign:
    """Move one partition's replicas while clients write (the Admin API's partition
    reassignment, as `kafka-reassign-partitions.sh --execute` does): one replica to a
    broker that held none where there is one, else a new replica order. The fault op
    asks for the move and completes as soon as the controller shows it in progress
    (`started`) or already done (`done_at_fault`), within `started_s`, else `info`:
    what the schedule runs next runs while the replicas move. It records the
    replicas before and after, and `seen_after_s`, how long after the request the
    controller showed it so.

    Its heal (`reassign-settle`) waits up to `settle_s` from the request for the move
    to be done, and records how long it took (to the look that saw it done: for a move
    done before the heal began, an upper bound) and the replicas and ISR it ended with;
    a move not done by then completes the heal `info` with where it stopped (adding
    and removing replicas), and is left to finish, as an operator's would be.

    With `throttle_bytes`, the move copies under a replication throttle as the tool's
    `--throttle` sets one (set, and read back, before the move; an `info` that moves
    nothing if it is not in force), recorded as `throttle`. The heal removes it, read
    back gone, however the move ended; a throttle its removal left, or one set for a
    move that never started, is removed by a later heal (`unthrottle` for the latter)."""

    topic: str
    partition: int
    settle_s: float = 90.0
    throttle_bytes: int = 0
    started_s: float = 5.0
    name: str = "reassign"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        value = {"topic": self.topic, "partition": self.partition}
        yield Step("reassign", value, lambda: self._move(ctl, pick))

    def _move(self, ctl: ClusterControl, pick: int) -> Done:
        before = ctl.partitions(self.topic)[self.partition].replicas
        target = target_replicas(before, ctl.node_ids, pick)
        if target == list(before):
            raise NotMoved(f"{self.topic}/{self.partition} has one replica and no spare broker")
        throttle, unthrottled = self._throttle(ctl, list(before), target)
        since = time.monotonic()
        try:
            ctl.reassign(self.topic, self.partition, target)
        except Exception as e:  # refused: the throttle set for it still goes
            raise Unfinished(f"reassignment refused: {type(e).__name__}: {e}", unthrottled) from e
        settle = self._settle(target, since, throttle)
        seen = self._seen(ctl, target)
        if seen is None:
            raise NotMoved(
                f"{self.topic}/{self.partition}: the controller showed the reassignment to "
                f"{target} neither in progress nor done within {self.started_s:.0f} s of its "
                "request; its heal waits for it",
                settle,
            )
        result: dict[str, Any] = {
            "from": list(before),
            "to": target,
            "moved_to": sorted(set(target) - set(before)),
            seen: True,
            "seen_after_s": round(time.monotonic() - since, 2),
        }
        return Done(result | ({"throttle": throttle} if throttle else {}), settle)

    def _seen(self, ctl: ClusterControl, target: list[int]) -> str | None:
        """`started` once the controller shows the reassignment going, `done_at_fault`
        once the partition is on `target` and nothing moves it; None if neither within
        `started_s` (each look that fails is one that saw nothing). The partition's
        replicas answer first, without the admin tool's JVM: while the move goes they
        are the new ones and the ones it removes."""
        seen: list[str] = []

        def look() -> bool:
            try:
                now = ctl.partitions(self.topic).get(self.partition)
                moving = now is not None and set(now.replicas) > set(target)
                if moving or self.partition in ctl.reassignments(self.topic):
                    seen.append("started")
                elif now is not None and list(now.replicas) == target:
                    seen.append("done_at_fault")
            except Exception:  # no answer this time (a leader moving): asked again
                return False
            return bool(seen)

        wait_until(look, self.started_s, every_s=0.2)
        return seen[-1] if seen else None

    def _settle(self, target: list[int], since: float, throttle: dict[str, Any] | None) -> Heal:
        """The heal: wait for the move, then delete the throttle, if one was set."""
        brokers = tuple(throttle["brokers"]) if throttle and "brokers" in throttle else ()
        undo = (
            Undo(
                "await-move",
                replicas=((self.topic, self.partition, tuple(target)),),
                timeout_s=self.settle_s,
                since=since,
            ),
        )
        if brokers:
            undo += (Undo("unthrottle", topic=self.topic, nodes=brokers),)
        value = {"topic": self.topic, "partition": self.partition, "to": target}
        return Heal(
            "reassign-settle", value | ({"brokers": list(brokers)} if brokers else {}), {}, undo
        )

    def _throttle(
        self, ctl: ClusterControl, before: list[int], target: list[int]
    ) -> tuple[dict[str, Any] | None, Heal | None]:
        """The throttle set and read back, and the heal (`unthrottle`) that removes it
        if the move is never asked for; (None, None) unthrottled. A reorder copies
        nothing, so it is said, not throttled."""
        if not self.throttle_bytes:
            return None, None
        rate = self.throttle_bytes
        leader, follower = throttled_replicas(self.partition, before, target)
        if not follower:
            return {"rate": rate, "skipped": "no replica to copy to: a new order only"}, None
        brokers = sorted(set(before) | set(target))
        heal = Heal(
            "unthrottle",
            {"topic": self.topic, "partition": self.partition, "brokers": brokers},
            {},
            (Undo("unthrottle", topic=self.topic, nodes=tuple(brokers)),),
        )
        try:
            ctl.set_throttle(self.topic, rate, brokers, leader, follower)
            seen = ctl.throttle_configs(self.topic, brokers)
        except Exception as e:  # part of it may be set: the heal removes what is
            raise Unfinished(
                f"throttle not set, nothing moved: {type(e).__name__}: {e}", heal
            ) from e
        if missing := throttle_missing(seen, rate, brokers, leader, follower):
            raise Unfinished(
                f"throttle not in force as read back (missing {', '.join(missing)}), nothing "
                f"moved: {seen}",
                heal,
            )
        throttle = {
            "rate": rate,
            "brokers": brokers,
            "leader_replicas": leader,
            "follower_replicas": follower,
            "read_back": seen,
        }
        return throttle, heal
