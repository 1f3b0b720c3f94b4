"""The clock probe's retries: a producer that stops answering is replaced, and a
probe that gives up says what the cluster said of its partition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError
from kafka_trial.cluster import clocks
from kafka_trial.cluster.clocks import ClockProbe
from kafka_trial.contracts.errors import TrialError


@dataclass
class Message:
    stamp_ms: int

    def timestamp(self) -> tuple[int, int]:
        return 2, self.stamp_ms  # LogAppendTime


@dataclass
class Partition:
    leader: int
    isrs: list[int]


@dataclass
class Admin:
    leader: int

    def list_topics(self, topic: str, timeout: float) -> Any:
        part = Partition(self.leader, [self.leader] if self.leader >= 0 else [])
        topics = {topic: type("T", (), {"partitions": {0: part, 1: part, 2: part}})()}
        return type("M", (), {"topics": topics})()


@dataclass
class Producers:
    """Producers that time out every record until the `healthy_from`-th one is made."""

    healthy_from: int
    made: list[dict] = field(default_factory=list)

    def __call__(self, conf: dict) -> Any:
        self.made.append(conf)
        return FakeProducer(len(self.made) >= self.healthy_from)


@dataclass
class FakeProducer:
    healthy: bool
    purged: bool = False

    def produce(self, topic: str, value: bytes, partition: int, on_delivery) -> None:
        import time

        if self.healthy:
            on_delivery(None, Message(int(time.time() * 1000)))
        else:
            on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), None)

    def flush(self, timeout: float) -> int:
        return 0

    def purge(self) -> None:
        self.purged = True


def probe(producers: Producers, leader: int = 1) -> ClockProbe:
    p = ClockProbe([1, 2, 3], lambda: "b:9092", lambda: Admin(leader), producers)
    p._made = True  # the topic exists: no admin call to create it
    return p


def test_a_producer_that_keeps_timing_out_is_replaced(monkeypatch) -> None:
    monkeypatch.setattr(clocks.time, "sleep", lambda s: None)
    producers = Producers(healthy_from=2)
    got = probe(producers).offset(1, timeout_s=30)
    assert abs(got["offset_s"]) < 1
    assert len(producers.made) == 2  # one replaced after RENEW_AFTER timeouts


def test_a_probe_that_gives_up_names_its_partition_s_leader(monkeypatch) -> None:
    monkeypatch.setattr(clocks.time, "sleep", lambda s: None)
    producers = Producers(healthy_from=10**9)
    with pytest.raises(TrialError) as e:
        probe(producers, leader=-1).offset(2, timeout_s=0.05)
    said = str(e.value)
    assert "broker 2's clock could not be measured after" in said
    assert "Message timed out" in said and "probe partition 1: leader -1, isr []" in said
