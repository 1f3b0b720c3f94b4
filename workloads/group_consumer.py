"""Consumer-group workers: poll, "process", commit, in one of three commit styles,
and crash at the points the articles talk about (claims C16-C19).

Ops per worker process (each an invoke and a completion):
- poll: the records the client returned;
- process: the records the application handled (its side effect);
- commit: the offsets committed (after-process / before-process styles; the auto
  style commits in the background and shows up in the final group offsets);
- assign / revoke / lost: rebalance events, recorded right after the poll during
  which they happened;
- crash: the worker dies here (the consumer is closed without further commits
  beyond what its style does on close) and continues as a new process;
- leave / join: membership changes (claim C18). A member leaves the group cleanly
  after a poll it has finished with, stays away `rejoin_after_s`, and joins again as a
  new process;
- stall: processing that outlasts max.poll.interval.ms, between processing and the
  commit. The client leaves the group on its own, its partitions move, and what it
  processed but did not commit is delivered again (claim C18).
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.group_ids import GROUP_IDS
from kafka_trial.contracts.ops import (
    Commit,
    GroupOffsets,
    MemberEvent,
    MicroOp,
    Poll,
    Processed,
    Rebalance,
    Record,
    TopicOffset,
)
from kafka_trial.workloads.base import ClientContext, Counters, Lane
from kafka_trial.workloads.clients import close_within, leave_group
from kafka_trial.workloads.consumer import records_of
from kafka_trial.workloads.settings import ConsumerSpec

# A commit rejected for these reasons certainly did not happen.
_COMMIT_REJECTED = {
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError._NO_OFFSET,
}


def group_config(group_id: str, spec: ConsumerSpec) -> dict[str, Any]:
    return {
        "group.id": group_id,
        "enable.auto.commit": spec.commit == "auto",
        # Offsets are stored once the poll is in the history (GroupWorker.run), so an
        # auto commit covers exactly the records the history says poll returned.
        "enable.auto.offset.store": False,
        "auto.commit.interval.ms": 200,
        "auto.offset.reset": "earliest",
        "isolation.level": spec.isolation_level,
        "session.timeout.ms": spec.session_timeout_ms,
        "max.poll.interval.ms": spec.max_poll_interval_ms,
        "heartbeat.interval.ms": max(100, spec.session_timeout_ms // 5),
    }


def _next_offsets(records: list[Record]) -> dict[int, int]:
    """Per partition, the offset after the last record: what a commit of them says."""
    nxt: dict[int, int] = {}
    for r in records:
        nxt[r.partition] = max(nxt.get(r.partition, 0), r.offset + 1)
    return nxt


@dataclass
class GroupWorker:
    ctx: ClientContext
    lane: Lane
    spec: ConsumerSpec
    topic: TopicSpec
    group_id: str
    counts: Counters = field(default_factory=Counters)
    _events: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)

    def _new_consumer(self) -> Consumer:
        c = Consumer(self.ctx.client_config(self.lane, **group_config(self.group_id, self.spec)))
        events = self._events

        def note(kind: str):
            return lambda _c, parts: events.append((kind, list(parts)))

        c.subscribe(
            [self.topic.name],
            on_assign=note("assign"),
            on_revoke=note("revoke"),
            on_lost=note("lost"),
        )
        return c

    def _flush_events(self, process: int) -> None:
        while self._events:
            kind, parts = self._events.pop(0)
            event = Rebalance(kind, tuple(sorted(p.partition for p in parts)))  # type: ignore[arg-type]
            self._record(process, kind, event)

    def _record(self, process: int, f: str, micro: MicroOp) -> None:
        self.ctx.history.invoke(process, f, [micro])
        self.ctx.history.complete("ok", process, f, [micro])

    def _commit(self, c: Consumer, process: int, records: list[Record]) -> None:
        nxt = _next_offsets(records)
        micro = [Commit(tuple(TopicOffset(self.topic.name, p, o) for p, o in sorted(nxt.items())))]
        history = self.ctx.history
        history.invoke(process, "commit", micro)
        try:
            c.commit(
                offsets=[TopicPartition(self.topic.name, p, o) for p, o in nxt.items()],
                asynchronous=False,
            )
            history.complete("ok", process, "commit", micro)
        except KafkaException as e:
            err = e.args[0]
            t = "fail" if err.code() in _COMMIT_REJECTED else "info"
            history.complete(t, process, "commit", micro, err.name())

    def _close(self, c: Consumer, process: int) -> None:
        what = f"group consumer {process}"
        leave_group(c, what)
        close_within(c, what)
        self._flush_events(process)

    def _store(self, c: Consumer, records: list[Record]) -> None:
        nxt = _next_offsets(records)
        # A partition revoked meanwhile fails: its next owner starts from the last commit.
        with contextlib.suppress(KafkaException):
            c.store_offsets(offsets=[TopicPartition(self.topic.name, p, o) for p, o in nxt.items()])

    def _crash(self, c: Consumer, process: int, point: str) -> int:
        self._record(process, "crash", MemberEvent("crash", point=point))
        self._close(c, process)
        self.counts.crashes += 1
        return self.ctx.pids.next()

    def _leave_and_rejoin(self, c: Consumer, process: int) -> tuple[Consumer | None, int]:
        self._record(process, "leave", MemberEvent("leave"))
        self._close(c, process)
        self.counts.leaves += 1
        if self.ctx.stop.wait(self.spec.rejoin_after_s):
            return None, process
        process = self.ctx.pids.next()
        self._record(process, "join", MemberEvent("join"))
        return self._new_consumer(), process

    def _stall(self, process: int) -> None:
        value = [MemberEvent("stall", ms=int(self.spec.stall_s * 1000))]
        self.ctx.history.invoke(process, "stall", value)
        # Not stop-aware on purpose: the point is to outlast max.poll.interval.ms.
        time.sleep(self.spec.stall_s)
        self.ctx.history.complete("ok", process, "stall", value)
        self.counts.stalls += 1

    def run(self) -> None:
        # The group-coordinator role aims at this group's coordinator while it runs.
        GROUP_IDS.register(self.group_id, "consumer")
        try:
            self._run()
        finally:
            GROUP_IDS.unregister(self.group_id)

    def _run(self) -> None:
        rng = random.Random(self.lane.seed)
        history = self.ctx.history
        process = self.ctx.pids.next()
        c: Consumer | None = self._new_consumer()
        style, point = self.spec.commit, self.spec.crash_point
        try:
            while c is not None and not self.ctx.stop.is_set():
                history.invoke(process, "poll", [Poll()])
                try:
                    msgs = c.consume(num_messages=self.spec.batch, timeout=0.5)
                except KafkaException as e:
                    history.complete("info", process, "poll", [Poll()], str(e))
                    process = self._crash(c, process, "poll-error")
                    c = self._new_consumer()
                    continue
                records, _ = records_of(msgs)
                history.complete("ok", process, "poll", [Poll(tuple(records))])
                if style == "auto" and records:
                    self._store(c, records)
                self._flush_events(process)
                self.counts.ops += 1
                if not records:
                    continue
                crash = rng.random() < self.spec.crash_fraction
                if style == "before-process":
                    self._commit(c, process, records)
                if crash and point == "before-process":
                    process = self._crash(c, process, point)
                    c = self._new_consumer()
                    continue
                self._record(process, "process", Processed(tuple(records)))
                if crash and point == "before-commit":
                    process = self._crash(c, process, point)
                    c = self._new_consumer()
                    continue
                if rng.random() < self.spec.stall_fraction:
                    self._stall(process)
                if style == "after-process":
                    self._commit(c, process, records)
                if rng.random() < self.spec.leave_fraction:
                    c, process = self._leave_and_rejoin(c, process)
        finally:
            if c is not None:
                self._close(c, process)


def record_group_offsets(
    ctx: ClientContext, topic: TopicSpec, group_id: str, spec: ConsumerSpec, role: str
) -> None:
    """The group's committed offsets after the fault phase, as one op. `role` says
    whose group it is: the consumer group's, or the copier's."""
    process = ctx.pids.next()
    head = GroupOffsets(role, group_id)
    ctx.history.invoke(process, "group-offsets", [head])
    c = Consumer(ctx.client_config(Lane.of(ctx, 0), **group_config(group_id, spec)))
    try:
        got = c.committed(
            [TopicPartition(topic.name, p) for p in range(topic.partitions)], timeout=60
        )
        offsets = tuple(
            TopicOffset(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else None) for tp in got
        )
        done = dataclasses.replace(head, offsets=offsets)
        ctx.history.complete("ok", process, "group-offsets", [done])
    except KafkaException as e:
        ctx.history.complete("info", process, "group-offsets", [head], str(e))
    finally:
        close_within(c, f"group-offsets reader {process}")
