"""A client whose close never returns must not hold the run up (librdkafka #4041)."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer
from kafka_trial.workloads.clients import close_within


class _Stuck:
    def __init__(self) -> None:
        self.release = threading.Event()

    def close(self) -> None:
        self.release.wait()


def test_a_close_that_never_returns_is_abandoned_in_time() -> None:
    stuck = _Stuck()
    t0 = time.monotonic()
    assert close_within(stuck, "stuck", timeout_s=0.5) is False
    assert time.monotonic() - t0 < 5
    stuck.release.set()


def test_a_real_consumer_closes_within_the_bound() -> None:
    # librdkafka's mock cluster: client plumbing only, no Kafka claim.
    c = Consumer({"test.mock.num.brokers": 1, "group.id": "g"})
    c.subscribe(["t"])
    c.consume(timeout=0.2)
    assert close_within(c, "mock consumer", timeout_s=30) is True


def test_a_close_that_raises_counts_as_returned() -> None:
    class Raises:
        def close(self) -> None:
            raise RuntimeError("Consumer closed")

    assert close_within(Raises(), "closed twice", timeout_s=5) is True


def test_leaving_the_group_serves_the_revoke_before_close() -> None:
    """The revoke callback runs in leave_group (from consume), so close() has no
    rebalance left to run while holding the GIL."""
    from kafka_trial.workloads.clients import leave_group

    # A producer hosts the mock cluster (and creates the topic); the consumer joins it.
    host = Producer({"test.mock.num.brokers": 1})
    host.produce("t", b"x")
    host.flush(10)
    b = next(iter(host.list_topics(timeout=10).brokers.values()))
    c = Consumer(
        {"bootstrap.servers": f"{b.host}:{b.port}", "group.id": "g", "session.timeout.ms": 6000}
    )
    events: list[str] = []
    c.subscribe(
        ["t"],
        on_assign=lambda _c, ps: events.append("assign"),
        on_revoke=lambda _c, ps: events.append("revoke"),
    )
    deadline = time.monotonic() + 30
    while not c.assignment() and time.monotonic() < deadline:
        c.consume(timeout=0.2)
    assert c.assignment(), "the mock group never assigned"
    leave_group(c, "mock", timeout_s=10)
    assert c.assignment() == []
    assert events[-1] == "revoke"
    n = len(events)
    assert close_within(c, "mock", timeout_s=30) is True
    assert len(events) == n  # nothing left for close to call back
