"""Has the application on trial caught up? Asked after the final heal, before its
output is drained: a drain while the app still works on its input would call
outputs lost that were only late.

Caught up: the app group's committed offset on every input partition is at the
partition's end, or nothing readable (read_committed) is left after it: a
transactional input's end is a commit marker, and an aborted transaction's records
are in the log but never read, so an app that has read everything can sit a few
offsets short of the end for good. A read_committed end below the high watermark
is not "nothing left": an open transaction holds back what lies past it. The wait
also ends when the output topic has not grown for `quiet_s` (an app that no longer
commits, or never did), or after `limit_s`. Which of these ended it is the op's
`how`; `caught_up` is whether the offsets said so at that moment, so an app that
never consumed shows `false` with its lag, and the analysis makes what it did not
read unknown.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.clients import close_within
from kafka_trial.workloads.consumer import new_consumer, stable_end_below

POLL_S = 1.0  # between two looks at the offsets
ASK_S = 10.0  # one metadata or offsets request


@dataclass(frozen=True)
class CatchUp:
    caught_up: bool
    lag: dict[int, int]  # per input partition: end offset - committed (incl. markers)
    how: str  # "lag" | "quiet" | "time limit" | "cluster gone"
    waited_s: float

    def to_value(self) -> dict[str, Any]:
        return {
            "caught_up": self.caught_up,
            "lag": {str(p): n for p, n in sorted(self.lag.items())},
            "how": self.how,
            "waited_s": round(self.waited_s, 3),
        }


@dataclass
class _Looker:
    """The two consumers the wait looks through: one of the app's group (committed
    offsets only: it never subscribes, so it never joins the group), one of its own
    (end offsets, and what is left to read after a committed offset)."""

    group: Consumer
    reader: Consumer
    source: TopicSpec
    sink: TopicSpec

    def ends(self, topic: TopicSpec) -> dict[int, tuple[int, int]]:
        return {
            p: self.reader.get_watermark_offsets(
                TopicPartition(topic.name, p), timeout=ASK_S, cached=False
            )
            for p in range(topic.partitions)
        }

    def lag(self) -> tuple[dict[int, int], dict[int, int]]:
        """Per input partition: the lag, and the committed offset (the low watermark
        where the group committed nothing)."""
        tps = [TopicPartition(self.source.name, p) for p in range(self.source.partitions)]
        committed = {tp.partition: tp.offset for tp in self.group.committed(tps, timeout=ASK_S)}
        lag: dict[int, int] = {}
        start: dict[int, int] = {}
        for p, (low, high) in self.ends(self.source).items():
            c = committed.get(p, -1)
            start[p] = c if c is not None and c >= 0 else low
            lag[p] = max(0, high - start[p])
        return lag, start

    def nothing_left(self, start: dict[int, int], lag: dict[int, int]) -> bool:
        """Whether a read_committed read from each committed offset finds no record
        before the end of its partition (only markers or aborted records remain)."""
        behind = [p for p, n in lag.items() if n > 0]
        if not behind:
            return True
        self.reader.assign([TopicPartition(self.source.name, p, start[p]) for p in behind])
        try:
            at_end: set[int] = set()
            deadline = time.monotonic() + ASK_S
            while len(at_end) < len(behind) and time.monotonic() < deadline:
                for m in self.reader.consume(num_messages=100, timeout=0.5):
                    err = m.error()
                    if err is None:
                        return False
                    if err.code() == KafkaError._PARTITION_EOF:
                        held, _ = stable_end_below(
                            self.reader, self.source.name, m.partition(), m.offset()
                        )
                        if held:
                            return False  # an open transaction holds input back
                        at_end.add(m.partition())
            return len(at_end) == len(behind)
        finally:
            self.reader.unassign()

    def output_size(self) -> int:
        return sum(high for _, high in self.ends(self.sink).values())


def _looker(ctx: ClientContext, source: TopicSpec, sink: TopicSpec, group: str) -> _Looker:
    lane = Lane.of(ctx, 0)
    conf = {"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"}
    return _Looker(
        Consumer(ctx.client_config(lane, **conf)),
        new_consumer(ctx, lane, source, "read_committed", assign=False),
        source,
        sink,
    )


def wait_caught_up(
    ctx: ClientContext,
    source: TopicSpec,
    sink: TopicSpec,
    group: str,
    quiet_s: float,
    limit_s: float,
) -> CatchUp:
    """Wait until the app has caught up, its output has been quiet for `quiet_s`, or
    `limit_s` has passed (see the module's doc)."""
    looker = _looker(ctx, source, sink, group)
    t0 = time.monotonic()
    lag: dict[int, int] = {}
    size, grew_at = -1, t0
    how = "time limit"
    try:
        while True:
            if ctx.abort.is_set():
                how = "cluster gone"
                break
            now = time.monotonic()
            with contextlib.suppress(KafkaException):
                lag, start = looker.lag()
                if looker.nothing_left(start, lag):
                    return CatchUp(True, dict.fromkeys(lag, 0), "lag", time.monotonic() - t0)
            with contextlib.suppress(KafkaException):
                now_size = looker.output_size()
                if now_size != size:
                    size, grew_at = now_size, now
            if now - grew_at >= quiet_s:
                how = "quiet"
                break
            if now - t0 >= limit_s:
                break
            ctx.abort.wait(POLL_S)
    finally:
        close_within(looker.group, "app group offsets reader")
        close_within(looker.reader, "app catch-up reader")
    return CatchUp(False, lag, how, time.monotonic() - t0)
