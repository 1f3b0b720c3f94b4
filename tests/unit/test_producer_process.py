"""A transactional producer in a process of its own (producer.own_process), against
librdkafka's mock cluster inside that process: transactions and their delivery
reports come back over the pipe, a pause freezes it (the kernel says T) while the
caller waits, and a child that dies turns the call into a fatal error, never a hang.
The real-Kafka twin is tests/integration/test_client_pause.py."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaException
from kafka_trial.contracts.client_processes import CLIENTS, process_state
from kafka_trial.contracts.ops import Send
from kafka_trial.workloads.clients import transactional_sends
from kafka_trial.workloads.producer_process import ProcessProducer

CONF = {
    "test.mock.num.brokers": 3,
    "transactional.id": "t-own-process",
    "enable.idempotence": True,
    "acks": "all",
    "log_level": 0,
}


@pytest.fixture
def producer():
    p = ProcessProducer(CONF, "producer t-own-process")
    yield p
    p.close()


def _txn(p: ProcessProducer, values: list[int]) -> list[int | None]:
    sends = [Send("mock-topic", 0, v) for v in values]
    offsets, send_all = transactional_sends(sends)
    p.begin_transaction()
    send_all(p)
    p.commit_transaction(10)
    return offsets


def test_a_transaction_in_a_child_process_reports_its_offsets(producer: ProcessProducer) -> None:
    assert [c.pid for c in CLIENTS.live()] == [producer.pid]
    producer.init_transactions(10)
    first = _txn(producer, [1, 2, 3])
    second = _txn(producer, [4])
    # Commit markers take an offset each: 0-2, marker 3, then 4.
    assert first == [0, 1, 2] and second == [4]


def test_a_paused_child_holds_the_call_until_it_is_resumed(producer: ProcessProducer) -> None:
    producer.init_transactions(10)
    assert CLIENTS.pause(producer.pid) == "T"
    done = threading.Event()
    t0 = time.monotonic()

    def call() -> None:
        _txn(producer, [7])
        done.set()

    threading.Thread(target=call, daemon=True).start()
    assert not done.wait(1.0), "a frozen client answered"
    (client,) = CLIENTS.live()
    assert client.doing() in ("begin_transaction", "produce", "commit_transaction")
    assert process_state(producer.pid) == "T"
    assert CLIENTS.resume_all() == [producer.pid]
    assert done.wait(10), "the resumed client never answered"
    assert time.monotonic() - t0 >= 1.0


def test_a_child_that_dies_makes_the_call_fatal(producer: ProcessProducer) -> None:
    producer.init_transactions(10)
    producer._proc.kill()
    with pytest.raises(KafkaException) as e:
        producer.begin_transaction()
    assert e.value.args[0].fatal() and "is gone" in e.value.args[0].str()
    assert producer.pid not in [c.pid for c in CLIENTS.live()]
