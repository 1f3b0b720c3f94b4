"""Consumers that poll during the run: assign mode, every partition from the start.

Each poll is one op. A consumer whose poll raised is replaced by a new one under
a new process id, which starts again from the beginning.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.ops import Poll, Record
from kafka_trial.workloads.base import ClientContext, Counters, Lane
from kafka_trial.workloads.clients import close_within
from kafka_trial.workloads.settings import ConsumerSpec


def new_consumer(
    ctx: ClientContext, lane: Lane, topic: TopicSpec, isolation: str, assign: bool = True
) -> Consumer:
    conf = ctx.client_config(
        lane,
        **{
            # A private group: offsets are never committed, assign mode needs no group.
            "group.id": f"kafka-trial-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        },
    )
    c = Consumer(conf)
    if assign:
        c.assign([TopicPartition(topic.name, p, OFFSET_BEGINNING) for p in range(topic.partitions)])
    return c


def _int_or_none(raw: bytes | None) -> int | None:
    """Our values are decimal integers (negative for the copier's output); anything
    else is kept as null, which the checker reports as unexpected."""
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def stable_end_below(
    consumer: Consumer, topic: str, partition: int, end: int
) -> tuple[bool, int | None]:
    """Whether a read_committed end (an end-of-partition event's offset, the last
    stable offset) lies below the high watermark, so an open transaction holds back
    what lies past it; and that watermark. The watermark is the one the fetch that
    reported the end brought (cached: no request); none known counts as held, since
    no answer proves no end."""
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
    except Exception:
        return True, None
    if high < 0:
        return True, None
    return end < high, high


def records_of(
    msgs: list[Message], value_of: Callable[[bytes | None], int | None] = _int_or_none
) -> tuple[list[Record], dict[int, int]]:
    """History records of a consume() batch, and the partitions that hit their end,
    each with the offset of that end (read_committed: the last stable offset).
    `value_of` reads each record's value (the application's output drain reads the
    input id its outputs carry)."""
    records: list[Record] = []
    at_end: dict[int, int] = {}
    for m in msgs:
        err = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                at_end[m.partition()] = m.offset()
            continue
        records.append(Record(m.topic(), m.partition(), m.offset(), value_of(m.value())))
    return records, at_end


@dataclass
class PollWorker:
    ctx: ClientContext
    lane: Lane
    spec: ConsumerSpec
    topic: TopicSpec
    counts: Counters = field(default_factory=Counters)

    def _consumer(self) -> Consumer:
        return new_consumer(self.ctx, self.lane, self.topic, self.spec.isolation_level)

    def run(self) -> None:
        history = self.ctx.history
        process = self.ctx.pids.next()
        consumer = self._consumer()
        try:
            while not self.ctx.stop.is_set():
                history.invoke(process, "poll", [Poll()])
                try:
                    msgs = consumer.consume(num_messages=self.spec.batch, timeout=0.5)
                except (KafkaException, RuntimeError) as e:
                    history.complete("info", process, "poll", [Poll()], str(e))
                    close_within(consumer, f"consumer {process}")
                    process = self.ctx.pids.next()
                    consumer = self._consumer()
                    continue
                records, _ = records_of(msgs)
                history.complete("ok", process, "poll", [Poll(tuple(records))])
                self.counts.ops += 1
        finally:
            close_within(consumer, f"consumer {process}")
