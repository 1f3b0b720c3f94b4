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

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from harness.history import HistoryWriter
from harness.spec import ConsumerSpec, TopicSpec
from workloads.consumer import records_of
from workloads.processes import ProcessIds

# A commit rejected for these reasons certainly did not happen.
_COMMIT_REJECTED = {
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError._NO_OFFSET,
}


def group_config(bootstrap: str, group_id: str, spec: ConsumerSpec) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "enable.auto.commit": spec.commit == "auto",
        "auto.commit.interval.ms": 200,
        "auto.offset.reset": "earliest",
        "isolation.level": spec.isolation_level,
        "session.timeout.ms": spec.session_timeout_ms,
        "max.poll.interval.ms": spec.max_poll_interval_ms,
        "heartbeat.interval.ms": max(100, spec.session_timeout_ms // 5),
        "log_level": 3,
    }


@dataclass
class GroupWorker:
    spec: ConsumerSpec
    topic: TopicSpec
    bootstrap: str
    history: HistoryWriter
    pids: ProcessIds
    stop: threading.Event
    group_id: str
    seed: int
    logger: Any = None
    ops: int = 0
    crashes: int = 0
    leaves: int = 0
    stalls: int = 0
    _events: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)

    def _new_consumer(self) -> Consumer:
        conf = group_config(self.bootstrap, self.group_id, self.spec)
        if self.logger is not None:
            conf["logger"] = self.logger
        c = Consumer(conf)
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
            value = [{"op": kind, "partitions": sorted(p.partition for p in parts)}]
            self.history.invoke(process, kind, value)
            self.history.complete("ok", process, kind, value)

    def _record(self, process: int, f: str, value: list[dict[str, Any]]) -> None:
        self.history.invoke(process, f, value)
        self.history.complete("ok", process, f, value)

    def _commit(self, c: Consumer, process: int, records: list[dict[str, Any]]) -> None:
        nxt: dict[int, int] = {}
        for r in records:
            nxt[r["partition"]] = max(nxt.get(r["partition"], 0), r["offset"] + 1)
        offsets = [
            {"topic": self.topic.name, "partition": p, "offset": o} for p, o in sorted(nxt.items())
        ]
        self.history.invoke(process, "commit", [{"op": "commit", "offsets": offsets}])
        try:
            c.commit(
                offsets=[TopicPartition(self.topic.name, p, o) for p, o in nxt.items()],
                asynchronous=False,
            )
            self.history.complete("ok", process, "commit", [{"op": "commit", "offsets": offsets}])
        except KafkaException as e:
            err = e.args[0]
            t = "fail" if err.code() in _COMMIT_REJECTED else "info"
            self.history.complete(
                t, process, "commit", [{"op": "commit", "offsets": offsets}], err.name()
            )

    def _crash(self, c: Consumer, process: int, point: str) -> int:
        self._record(process, "crash", [{"op": "crash", "point": point}])
        c.close()
        self._flush_events(process)
        self.crashes += 1
        return self.pids.next()

    def _leave_and_rejoin(self, c: Consumer, process: int) -> tuple[Consumer | None, int]:
        self._record(process, "leave", [{"op": "leave"}])
        c.close()
        self._flush_events(process)
        self.leaves += 1
        if self.stop.wait(self.spec.rejoin_after_s):
            return None, process
        process = self.pids.next()
        self._record(process, "join", [{"op": "join"}])
        return self._new_consumer(), process

    def _stall(self, process: int) -> None:
        value = [{"op": "stall", "ms": int(self.spec.stall_s * 1000)}]
        self.history.invoke(process, "stall", value)
        # Not stop-aware on purpose: the point is to outlast max.poll.interval.ms.
        time.sleep(self.spec.stall_s)
        self.history.complete("ok", process, "stall", value)
        self.stalls += 1

    def run(self) -> None:
        rng = random.Random(self.seed)
        process = self.pids.next()
        c: Consumer | None = self._new_consumer()
        style, point = self.spec.commit, self.spec.crash_point
        try:
            while c is not None and not self.stop.is_set():
                self.history.invoke(process, "poll", [{"op": "poll"}])
                try:
                    msgs = c.consume(num_messages=self.spec.batch, timeout=0.5)
                except KafkaException as e:
                    self.history.complete("info", process, "poll", [{"op": "poll"}], str(e))
                    process = self._crash(c, process, "poll-error")
                    c = self._new_consumer()
                    continue
                records, _ = records_of(msgs)
                self.history.complete("ok", process, "poll", [{"op": "poll", "records": records}])
                self._flush_events(process)
                self.ops += 1
                if not records:
                    continue
                crash = rng.random() < self.spec.crash_fraction
                if style == "before-process":
                    self._commit(c, process, records)
                if crash and point == "before-process":
                    process = self._crash(c, process, point)
                    c = self._new_consumer()
                    continue
                self._record(process, "process", [{"op": "process", "records": records}])
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
                c.close()
                self._flush_events(process)


def record_group_offsets(
    bootstrap: str,
    topic: TopicSpec,
    group_id: str,
    spec: ConsumerSpec,
    history: HistoryWriter,
    pids: ProcessIds,
    role: str = "consumer",
) -> None:
    """The group's committed offsets after the fault phase, as one op. `role` says
    whose group it is: the consumer group's, or the copier's."""
    process = pids.next()
    head = {"op": "group-offsets", "role": role, "group": group_id}
    history.invoke(process, "group-offsets", [head])
    c = Consumer(group_config(bootstrap, group_id, spec))
    try:
        got = c.committed(
            [TopicPartition(topic.name, p) for p in range(topic.partitions)], timeout=60
        )
        offsets = [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "offset": tp.offset if tp.offset >= 0 else None,
            }
            for tp in got
        ]
        history.complete("ok", process, "group-offsets", [{**head, "offsets": offsets}])
    except KafkaException as e:
        history.complete("info", process, "group-offsets", [head], str(e))
    finally:
        c.close()
