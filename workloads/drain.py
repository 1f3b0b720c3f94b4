"""The final drain: after healing, read every partition from the beginning.

A partition is done when the reads reach its highest acknowledged offset, or
when it has sat at its end for `settle_s` without growing (its log may have been
truncated below an acknowledged offset, which is exactly what the checker wants
to see). An end below the partition's high watermark is no end: the drain reads
read_committed, whose end is the last stable offset, and an open transaction (a
killed or stalled client's, until its timeout aborts it) holds back every record
past it, whoever wrote them; such a poll records `held`, not `at_end`, and the
drain keeps reading. The whole drain is bounded by `timeout_s`.

Its poll micro-ops carry `"role": "drain"`, so the checker can tell its reads
from the consumers' (vanished-read). The application on trial's output is drained
the same way under `"role": "app-output"`, each record's value the input id the
output carries (`value_of`, the app's id rule).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.log import log
from kafka_trial.contracts.ops import Poll, TopicOffset
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.clients import close_within
from kafka_trial.workloads.consumer import new_consumer, records_of, stable_end_below
from kafka_trial.workloads.settings import DrainSpec


def _ends(
    consumer: Consumer,
    topic: str,
    eofs: dict[int, int],
    next_offset: dict[int, int],
    at_end_since: dict[int, float],
    held_at: dict[int, int | None],
) -> tuple[list[TopicOffset], list[TopicOffset]]:
    """The poll's `at_end` and `held` entries of the partitions whose end it hit (at
    `eofs`), and the drain's settle clocks and holds brought up to date."""
    now = time.monotonic()
    ends: list[TopicOffset] = []
    held: list[TopicOffset] = []
    for p, eof in sorted(eofs.items()):
        held_below, high = stable_end_below(consumer, topic, p, eof)
        if held_below:
            # read_committed ends at the last stable offset: records past it wait on
            # an open transaction (a zombie's, until its timeout), so this is no end,
            # and absence past it proves nothing yet.
            at_end_since.pop(p, None)
            held_at[p] = high
            held.append(TopicOffset(topic, p, high))
            continue
        held_at.pop(p, None)
        at_end_since.setdefault(p, now)
        # Where the partition ended: with acks=0 no send knows its offset, so "read
        # to the end and not found" is what makes a loss certain.
        ends.append(TopicOffset(topic, p, next_offset[p]))
    return ends, held


@dataclass(frozen=True)
class DrainResult:
    complete: bool
    partitions: dict[int, dict[str, Any]]
    records: int
    seconds: float


def drain(
    ctx: ClientContext,
    topic: TopicSpec,
    spec: DrainSpec,
    role: str = "drain",
    value_of: Callable[[bytes | None], int | None] | None = None,
) -> DrainResult:
    """Read `topic` to its end; the acknowledged offsets come from ctx.acks (a topic
    nobody acknowledged a write to, like the app's output, ends when it settles)."""
    history, pids = ctx.history, ctx.pids
    max_acked = ctx.acks_for(topic.name).snapshot()
    consumer = new_consumer(ctx, Lane.of(ctx, 0), topic, "read_committed")
    parts = list(range(topic.partitions))
    process = pids.next()
    t0 = time.monotonic()
    deadline = t0 + spec.timeout_s
    next_offset = dict.fromkeys(parts, 0)
    at_end_since: dict[int, float] = {}
    held_at: dict[int, int | None] = {}  # partitions last found held, their high watermark
    done: set[int] = set()
    total = 0
    try:
        while len(done) < len(parts) and time.monotonic() < deadline:
            if ctx.abort.is_set():
                log(f"drain of {topic.name} stopped: the cluster is gone")
                break
            history.invoke(process, "poll", [Poll(role=role)])
            try:
                msgs = consumer.consume(num_messages=1000, timeout=1.0)
            except Exception as e:  # any client error leaves this poll's result unknown
                history.complete("info", process, "poll", [Poll(role=role)], str(e))
                process = pids.next()
                continue
            records, eofs = records_of(msgs) if value_of is None else records_of(msgs, value_of)
            for r in records:
                at_end_since.pop(r.partition, None)
                next_offset[r.partition] = r.offset + 1
            # An end-of-partition event follows that partition's records in a batch.
            ends, held = _ends(consumer, topic.name, eofs, next_offset, at_end_since, held_at)
            total += len(records)
            done_micro = Poll(tuple(records), role, tuple(ends) or None, tuple(held) or None)
            history.complete("ok", process, "poll", [done_micro])
            now = time.monotonic()
            for p in parts:
                # With no acknowledged offset to aim for (acks=0 reports none), only
                # sitting at the end for settle_s says the partition is read.
                reached = p in max_acked and next_offset[p] > max_acked[p]
                settled = p in at_end_since and now - at_end_since[p] >= spec.settle_s
                if reached or settled:
                    done.add(p)
    finally:
        close_within(consumer, f"drain of {topic.name}")
    if held_at:
        log(
            f"drain of {topic.name}: partition(s) {sorted(held_at)} still held below their "
            "high watermark by an open transaction when the drain stopped"
        )
    summary = {
        p: {
            "max_acked_offset": max_acked.get(p),
            "next_offset_read": next_offset[p],
            "reached_max_acked": next_offset[p] > max_acked.get(p, -1),
            "done": p in done,
            "held_below": held_at.get(p),
        }
        for p in parts
    }
    return DrainResult(len(done) == len(parts), summary, total, time.monotonic() - t0)
