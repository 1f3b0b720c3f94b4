"""Consumers that poll during the run: assign mode, every partition from the start.

Each poll is one op. A consumer whose poll raised is replaced by a new one under
a new process id, which starts again from the beginning.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from harness.history import HistoryWriter
from harness.spec import ConsumerSpec, TopicSpec
from workloads.processes import ProcessIds


def new_consumer(
    bootstrap: str,
    topic: TopicSpec,
    isolation: str,
    logger: Any = None,
    extra: dict[str, Any] | None = None,
    assign: bool = True,
) -> Consumer:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        # A private group: offsets are never committed, assign mode needs no group.
        "group.id": f"kafka-trial-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": isolation,
        "log_level": 3,
        **(extra or {}),
    }
    if logger is not None:
        conf["logger"] = logger
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


def records_of(msgs: list[Message]) -> tuple[list[dict[str, Any]], list[int]]:
    """History records of a consume() batch, and the partitions that hit their end."""
    records: list[dict[str, Any]] = []
    at_end: list[int] = []
    for m in msgs:
        err = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                at_end.append(m.partition())
            continue
        records.append(
            {
                "topic": m.topic(),
                "partition": m.partition(),
                "offset": m.offset(),
                "value": _int_or_none(m.value()),
            }
        )
    return records, at_end


@dataclass
class PollWorker:
    spec: ConsumerSpec
    topic: TopicSpec
    bootstrap: str
    history: HistoryWriter
    pids: ProcessIds
    stop: threading.Event
    logger: Any = None
    ops: int = 0

    def run(self) -> None:
        process = self.pids.next()
        consumer = new_consumer(self.bootstrap, self.topic, self.spec.isolation_level, self.logger)
        try:
            while not self.stop.is_set():
                self.history.invoke(process, "poll", [{"op": "poll"}])
                try:
                    msgs = consumer.consume(num_messages=self.spec.batch, timeout=0.5)
                except (KafkaException, RuntimeError) as e:
                    self.history.complete("info", process, "poll", [{"op": "poll"}], str(e))
                    consumer.close()
                    process = self.pids.next()
                    consumer = new_consumer(
                        self.bootstrap, self.topic, self.spec.isolation_level, self.logger
                    )
                    continue
                records, _ = records_of(msgs)
                self.history.complete("ok", process, "poll", [{"op": "poll", "records": records}])
                self.ops += 1
        finally:
            consumer.close()
