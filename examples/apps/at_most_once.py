"""At-most-once copier: consume a batch, commit its offsets, then produce it.

The commit comes first, so a crash after it and before the producer has delivered
the outputs loses them for good: the next owner of the partitions starts after them.
Nothing is ever copied twice.

Environment: KAFKA_BOOTSTRAP_SERVERS, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID, INSTANCE_ID.
Run: python examples/apps/at_most_once.py
"""

from __future__ import annotations

import sys

from app_common import batches, consumer, log, offsets_after, rewind, start
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer

dropped = 0  # outputs the producer gave up on, after their inputs were committed


def delivered(err: KafkaError | None, _msg: object) -> None:
    global dropped
    if err is None:
        return
    if err.fatal():
        raise KafkaException(err)  # surfaces from poll() or flush() in the main loop
    dropped += 1  # already committed: gone, as the guarantee allows
    if dropped & (dropped - 1) == 0:  # 1, 2, 4, 8...: a trace, not a flood
        log.warning("%d output(s) dropped so far; latest: %s", dropped, err)


def copy(c: Consumer, producer: Producer, out_topic: str, batch: list[Message]) -> None:
    try:
        c.commit(offsets=offsets_after(batch), asynchronous=False)
    except KafkaException as e:
        # Nothing produced yet, so reading the batch again cannot duplicate it.
        log.warning("commit failed (%s); reading the batch again", e)
        rewind(c, batch)
        return
    # Handed to the producer, not waited for: it sends them within linger.ms, so the
    # outputs of the last batch or two are in memory only, already committed.
    for m in batch:
        while True:
            try:
                producer.produce(out_topic, key=m.key(), value=m.value(), on_delivery=delivered)
                break
            except BufferError:  # the producer's queue is full: let it drain
                producer.poll(0.5)
    producer.poll(0)


def main() -> int:
    s = start()
    if s is None:
        return 2
    c = consumer(s)
    producer = Producer(
        {
            "bootstrap.servers": s.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            # Throughput over latency, as a metrics or log pipeline would: outputs wait
            # up to a second to go out in large batches.
            "linger.ms": 1000,
        }
    )
    copied = 0
    try:
        for batch in batches(c):
            copy(c, producer, s.output_topic, batch)
            copied += len(batch)
    except KafkaException as e:  # fatal: exit, and let the supervisor start a new one
        log.error("fatal: %s", e)
        return 1
    finally:
        producer.flush(30.0)
        log.info("stopped after %d record(s), %d output(s) dropped", copied, dropped)
        c.close()  # leaves the group at once: no wait for the session timeout
    return 0


if __name__ == "__main__":
    sys.exit(main())
