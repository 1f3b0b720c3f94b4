"""Exactly-once copier: transactional consume-transform-produce.

Each batch's outputs and its input offsets are committed in one transaction
(send_offsets_to_transaction with the consumer's group metadata). An error that
requires it aborts the transaction and rewinds the consumer to the batch, so the
batch is copied again in a new transaction. The transactional.id is the group's and
the instance's: a restarted instance fences its predecessor and aborts what that one
left open, and readers of the output (read_committed) never see aborted records.

Environment: KAFKA_BOOTSTRAP_SERVERS, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID, INSTANCE_ID.
Run: python examples/apps/exactly_once.py
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from app_common import batches, consumer, log, offsets_after, rewind, start, stopping
from confluent_kafka import Consumer, KafkaException, Message, Producer

TXN_TIMEOUT_S = 30  # each transactional call waits at most this long


class Stopped(Exception):
    """SIGTERM came while a transactional call kept failing with retriable errors."""


def retrying(call: Callable[[float], None], what: str) -> None:
    """A transactional call, repeated while its error says a retry may succeed, and
    until SIGTERM."""
    while True:
        try:
            call(TXN_TIMEOUT_S)
            return
        except KafkaException as e:
            if not e.args[0].retriable():
                raise
            if stopping():
                raise Stopped(what) from e
            log.warning("%s not done yet (%s); retrying", what, e)


def init(producer: Producer) -> bool:
    """init_transactions: fences an earlier instance with this transactional.id and
    aborts its open transaction, so nothing it wrote and did not commit is ever read.
    Retried in short calls while the brokers are unreachable; False on SIGTERM."""
    while not stopping():
        try:
            producer.init_transactions(5.0)
            return True
        except KafkaException as e:
            if not e.args[0].retriable():
                raise
            log.warning("init_transactions not done yet (%s); retrying", e)
    return False


def copy(c: Consumer, producer: Producer, out_topic: str, batch: list[Message]) -> bool:
    """One batch in one transaction; False when it was aborted."""
    try:
        producer.begin_transaction()
        for m in batch:
            producer.produce(out_topic, key=m.key(), value=m.value())
        # The offsets commit with the outputs, and only while this consumer's group
        # generation is current: a zombie's transaction cannot commit them.
        offsets, group = offsets_after(batch), c.consumer_group_metadata()
        retrying(lambda t: producer.send_offsets_to_transaction(offsets, group, t), "send_offsets")
        retrying(producer.commit_transaction, "commit")
        return True
    except Stopped as e:
        # Left open, the transaction would hold every read_committed reader of the
        # output back until transaction.timeout.ms aborts it: aborted now instead,
        # if the coordinator answers. The batch is not committed either way, so the
        # instance that takes the partition over copies it again.
        log.warning("stopping with the transaction open (%s not done): aborting it", e)
        with contextlib.suppress(KafkaException):
            producer.abort_transaction(TXN_TIMEOUT_S)
        return False
    except KafkaException as e:
        if not e.args[0].txn_requires_abort():
            raise  # fatal (fenced, say): the caller exits and a new instance takes over
        log.warning("aborting the transaction (%s); copying the batch again", e)
        retrying(producer.abort_transaction, "abort")
        rewind(c, batch)
        return False


def main() -> int:
    s = start()
    if s is None:
        return 2
    producer = Producer(
        {
            "bootstrap.servers": s.bootstrap,
            "transactional.id": f"{s.group}-{s.instance}",
            # A transaction a crash left open holds back read_committed readers of the
            # output until the restart fences it or this timeout aborts it.
            "transaction.timeout.ms": 30000,
        }
    )
    try:
        if not init(producer):  # before joining the group: no partitions held idle
            return 0
        c = consumer(s)
    except KafkaException as e:
        log.error("fatal: %s", e)
        return 1
    copied = 0
    try:
        for batch in batches(c):
            if copy(c, producer, s.output_topic, batch):
                copied += len(batch)
    except KafkaException as e:  # fatal: exit, and let the supervisor start a new one
        log.error("fatal: %s", e)
        return 1
    finally:
        log.info("stopped after %d record(s)", copied)
        c.close()  # leaves the group at once: no wait for the session timeout
    return 0


if __name__ == "__main__":
    sys.exit(main())
