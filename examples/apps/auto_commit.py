"""Auto-commit copier: the consumer commits what poll() returned every second, on its
own, and the app hands each record to the producer without waiting for delivery.

The usual first version of a service. The commit follows the reads, not the writes,
so a crash loses the outputs still in the producer's memory whose inputs a commit
already covered (claim C16), and an instance that takes over a partition after a
rebalance reads again what was processed but not yet committed.

Environment: KAFKA_BOOTSTRAP_SERVERS, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID, INSTANCE_ID.
Run: python examples/apps/auto_commit.py
"""

from __future__ import annotations

import sys

from app_common import batches, consumer, log, start
from confluent_kafka import KafkaException, Producer


def main() -> int:
    s = start()
    if s is None:
        return 2
    c = consumer(s, enable_auto_commit=True, auto_commit_interval_ms=1000)
    producer = Producer({"bootstrap.servers": s.bootstrap, "acks": "all", "linger.ms": 500})
    copied = 0
    try:
        for batch in batches(c):
            for m in batch:
                while True:
                    try:
                        producer.produce(s.output_topic, key=m.key(), value=m.value())
                        break
                    except BufferError:  # the producer's queue is full: let it drain
                        producer.poll(0.5)
            producer.poll(0)
            copied += len(batch)
    except KafkaException as e:  # fatal: exit, and let the supervisor start a new one
        log.error("fatal: %s", e)
        return 1
    finally:
        producer.flush(30.0)
        log.info("stopped after %d record(s)", copied)
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
