"""At-least-once copier: consume a batch, produce it, wait until every output is
acknowledged, and only then commit the input offsets.

A crash after the flush and before the commit makes the next owner of the
partitions copy the batch again: duplicates are possible, losses are not.

Environment: KAFKA_BOOTSTRAP_SERVERS, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID, INSTANCE_ID.
Run: python examples/apps/at_least_once.py
"""

from __future__ import annotations

import sys

from app_common import batches, consumer, log, offsets_after, rewind, start
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer


def copy(c: Consumer, producer: Producer, out_topic: str, batch: list[Message]) -> None:
    failed: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failed.append(err)

    for m in batch:
        producer.produce(out_topic, key=m.key(), value=m.value(), on_delivery=delivered)
        producer.poll(0)
    while producer.flush(5.0) > 0:  # every output acknowledged (or failed) first
        log.info("waiting for %d output(s) to be acknowledged", len(producer))
    if any(e.fatal() for e in failed):
        raise KafkaException(failed[0])
    if failed:  # not committed: copy the whole batch again (duplicates allowed)
        log.warning("%d output(s) failed (%s); copying the batch again", len(failed), failed[0])
        rewind(c, batch)
        return
    try:
        c.commit(offsets=offsets_after(batch), asynchronous=False)
    except KafkaException as e:  # a later commit covers it, or a new owner copies again
        log.warning("commit failed: %s", e)


def main() -> int:
    s = start()
    if s is None:
        return 2
    c = consumer(s)
    # Idempotence: a retried send is written once, so duplicates come only from crashes.
    producer = Producer(
        {"bootstrap.servers": s.bootstrap, "acks": "all", "enable.idempotence": True}
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
        log.info("stopped after %d record(s)", copied)
        c.close()  # leaves the group at once: no wait for the session timeout
    return 0


if __name__ == "__main__":
    sys.exit(main())
