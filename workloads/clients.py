"""librdkafka plumbing shared by the workers: dropping a client as a crash would,
and delivery callbacks that note the offset each send got."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from kafka_trial.contracts.log import log
from kafka_trial.contracts.ops import Send
from kafka_trial.workloads.producer_process import ProcessProducer


def abandon(producer: Producer | ProcessProducer) -> None:
    """Drop a client as a crash would: nothing queued is waited for."""
    if isinstance(producer, ProcessProducer):
        producer.close()  # the process ends, as the application's would
        return
    try:
        producer.purge(in_queue=True, in_flight=True)
        producer.flush(0)
    except (KafkaException, RuntimeError):
        pass


# How long a consumer's close may take: it commits (auto-commit style) and leaves the
# group, each bounded by librdkafka's own request timeouts, which stay under this.
CLOSE_S = 60.0


def leave_group(consumer: Consumer, what: str, timeout_s: float = 10.0) -> None:
    """Give up a subscription before close(), serving its last rebalance here.

    Inside close(), confluent-kafka runs the rebalance callback's fallback assign
    while holding the GIL, and with the group already terminating librdkafka never
    answers it (librdkafka #4041, #4884): every thread of the process freezes, the
    run's watchdogs included. Seen here after a member stalled past
    max.poll.interval.ms. Served from consume(), the same callback returns. Records
    returned meanwhile are dropped unrecorded; their offsets are never stored, so
    no commit covers them."""
    try:
        consumer.unsubscribe()
        deadline = time.monotonic() + timeout_s
        while consumer.assignment() and time.monotonic() < deadline:
            consumer.consume(num_messages=100, timeout=0.2)
        if consumer.assignment():
            log(f"{what}: still assigned {timeout_s:.0f}s after unsubscribing")
    except (KafkaException, RuntimeError) as e:
        log(f"{what}: leaving the group failed: {e}")


def close_within(client: Any, what: str, timeout_s: float = CLOSE_S) -> bool:
    """Close a client, but never wait on it for longer than timeout_s.

    librdkafka's consumer close can block for good when the rebalance it waits on
    never completes (librdkafka #4041, #4884); a run must still end, heal and tear
    down. A close that has not returned is left to finish (or not) in a daemon
    thread, and the log says so."""
    returned = threading.Event()

    def close() -> None:
        try:
            client.close()
        except (KafkaException, RuntimeError) as e:
            log(f"{what}: close failed: {e}")
        finally:
            returned.set()

    threading.Thread(target=close, name=f"close {what}", daemon=True).start()
    if returned.wait(timeout_s):
        return True
    log(f"{what}: close did not return within {timeout_s:.0f}s; abandoned")
    return False


def transactional_producer(
    conf: dict[str, Any],
    stop: threading.Event,
    timeout_s: float,
    make: Callable[[dict[str, Any]], Any] = Producer,
) -> Any:
    """A producer whose init_transactions went through (which also fences and aborts
    whatever a previous instance under the same transactional.id left open); retried
    until it works or the run stops (None)."""
    while not stop.is_set():
        p = make(conf)
        try:
            p.init_transactions(timeout_s)
            return p
        except KafkaException as e:
            log(f"init_transactions for {conf.get('transactional.id')} failed, retrying: {e}")
            abandon(p)
            stop.wait(1)
    return None


def transactional_sends(
    sends: list[Send], partition_keys: bool = False
) -> tuple[list[int | None], Callable[[Producer], None]]:
    """The offsets of a transaction's sends, filled in by their delivery reports (the
    transaction's outcome, not the report, decides each send's outcome), and the call
    that produces them all (each keyed by its partition with `partition_keys`)."""
    offsets: list[int | None] = [None] * len(sends)

    def report(i: int) -> Callable[[KafkaError | None, Message], None]:
        def cb(err: KafkaError | None, msg: Message) -> None:
            if err is None and msg.offset() is not None and msg.offset() >= 0:
                offsets[i] = msg.offset()

        return cb

    def send_all(producer: Producer) -> None:
        for i, m in enumerate(sends):
            producer.produce(
                m.topic,
                value=str(m.value).encode(),
                key=str(m.partition).encode() if partition_keys else None,
                partition=m.partition,
                on_delivery=report(i),
            )

    return offsets, send_all
