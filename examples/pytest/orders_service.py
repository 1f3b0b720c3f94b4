"""A small "orders" service of the kind users test: a producer of order ids and a
consumer group that processes them, committing offsets before or after processing.
It records what it did into a kafka-trial history (any object with the same
methods would do in production code: here it is the test's `trial_history`)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, Producer


def produce(bootstrap: str, topic: str, values: range, history: Any, process: int = 0) -> None:
    """Send each value once (acks=all, idempotent) and record its outcome."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    outcomes: dict[int, tuple[str, int | None, int | None]] = {}

    def done(err: Any, msg: Any) -> None:
        v = int(msg.value())
        outcomes[v] = ("info", None, None) if err else ("ok", msg.partition(), msg.offset())

    for v in values:
        p.produce(topic, str(v).encode(), on_delivery=done)
        p.poll(0)
    p.flush(60)
    for v in values:
        outcome, partition, offset = outcomes.get(v, ("info", None, None))
        history.send(process, topic, v, partition, offset, outcome)


def consume(
    bootstrap: str,
    topic: str,
    group: str,
    history: Any,
    commit_before_processing: bool,
    crash_after_batches: int = 2,
    idle_s: float = 8.0,
) -> None:
    """Process every order in the group. The first consumer crashes after a few
    batches: with commits before processing, the batch it had committed but not yet
    processed is never processed by anyone."""
    process = 100
    crashed = False
    while True:
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([topic])
        batches, last = 0, time.monotonic()
        try:
            while time.monotonic() - last < idle_s:
                msgs = [m for m in c.consume(200, timeout=1.0) if not m.error()]
                if not msgs:
                    continue
                last = time.monotonic()
                batches += 1
                records = [(m.topic(), m.partition(), m.offset(), int(m.value())) for m in msgs]
                crash = not crashed and batches > crash_after_batches
                if commit_before_processing:
                    c.commit(asynchronous=False)
                    if crash:
                        raise ConnectionAbortedError  # the process died mid-batch
                    history.processed(process, records)
                else:
                    if crash:
                        raise ConnectionAbortedError
                    history.processed(process, records)
                    c.commit(asynchronous=False)
            committed = c.committed(c.assignment(), timeout=10)
            history.group_offsets(
                group, {(tp.topic, tp.partition): tp.offset for tp in committed if tp.offset >= 0}
            )
            c.close()
            return
        except ConnectionAbortedError:
            crashed = True
            c.close()  # leaves the group; a restarted instance takes over
            process += 1
