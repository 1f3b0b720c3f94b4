"""A whole session (producers, a consumer group, copiers; then the final phase) on one
librdkafka mock cluster that every client shares. Plumbing only: the mock is never a
stand-in for Kafka's behaviour under faults."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.ops import Op
from kafka_trial.workloads import ClientContext, WorkloadSession, plan_workloads
from kafka_trial.workloads.copier import copier_stop_s, output_value
from kafka_trial.workloads.session import SessionSummary
from kafka_trial.workloads.settings import ConsumerSpec, CopierSpec, DrainSpec, ProducerSpec

# The mock cluster creates a topic on first use, with this many partitions.
MOCK_PARTITIONS = 4


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """Brokers of a mock cluster that lives as long as the client that made it; other
    clients reach it through the addresses its metadata gives."""
    holder = Producer({"test.mock.num.brokers": 3, "log_level": 0})
    md = holder.list_topics(timeout=10)
    boot = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
    for name in ("main", "main-out", "txn"):
        holder.list_topics(name, timeout=10)
    yield boot
    holder.flush(1)


@dataclass(frozen=True)
class Ran:
    session: WorkloadSession
    summary: SessionSummary
    ops: list[Op]
    load_end: int  # where the final phase begins in the history


def run_session(
    tmp_path: Path, boot: str, topic: TopicSpec, seconds: float, **specs: object
) -> Ran:
    history = HistoryWriter(tmp_path / "history.jsonl")
    ctx = ClientContext(history, lambda _lane: boot, seed=1, run_id="t")
    session = WorkloadSession(plan_workloads(topic, **specs), ctx)  # type: ignore[arg-type]
    session.start()
    time.sleep(seconds)
    session.stop()
    load_end = history.lines_written
    summary = session.finish(DrainSpec(timeout_s=30, settle_s=1))
    history.close()
    return Ran(session, summary, read_history(history.path).ops, load_end)


def test_final_phase_records_group_offsets_then_drains_each_topic_in_order(
    tmp_path: Path, mock_bootstrap: str
) -> None:
    topic = TopicSpec(name="main", partitions=MOCK_PARTITIONS)
    ran = run_session(
        tmp_path,
        mock_bootstrap,
        topic,
        6,
        producer=ProducerSpec(workers=2, batch=5),
        consumer=ConsumerSpec(workers=1, mode="subscribe"),
        copier=CopierSpec(workers=1),
    )
    session, ops = ran.session, ran.ops
    assert [t.name for t in session.topics()] == ["main", "main-out"]
    threads = ["producer-0", "producer-1", "consumer-0", "copier-0"]
    assert [th.name for th in session.threads] == threads

    # After the load: the consumer group's offsets, the copier's, the run's topic
    # drained, then the copier's output: the op order of run.json's history.
    phase: list[tuple[str, str]] = []
    for o in ops[ran.load_end :]:
        if o.type == "invoke":
            continue
        m = o.value[0]
        if o.f == "group-offsets":
            step = ("group-offsets", m["role"])
        else:
            assert o.f == "poll" and m["role"] == "drain"
            topics = {r["topic"] for r in m.get("records") or []}
            topics |= {e["topic"] for e in m.get("at_end") or []}
            if not topics:
                continue
            assert len(topics) == 1
            step = ("drain", topics.pop())
        if not phase or phase[-1] != step:
            phase.append(step)
    assert phase == [
        ("group-offsets", "consumer"),
        ("group-offsets", "copier"),
        ("drain", "main"),
        ("drain", "main-out"),
    ]

    # run.json's keys, from the same numbers the history holds.
    record = ran.summary.to_dict()
    assert list(record) == ["drain", "drain_output", "send_ops", "values_acked", "client_events"]
    sends = [o for o in ops if o.f == "send" and o.type != "invoke"]
    assert record["send_ops"] == len(sends) > 0
    ok_values = [m for o in sends for m in o.value if m["outcome"] == "ok"]
    assert record["values_acked"] == len(ok_values)
    assert record["drain"]["complete"] and record["drain_output"]["complete"]
    assert record["client_events"] == {"crashes": 0, "resent": 0, "leaves": 0, "stalls": 0}

    # Each committed copy writes -(v+1) of every value its poll returned, to the sink.
    copies = [o for o in ops if o.f == "txn" and o.type == "ok"]
    assert copies, "the copier copied nothing"
    for o in copies:
        polled = [r["value"] for m in o.value if m["op"] == "poll" for r in m["records"]]
        sent = [m for m in o.value if m["op"] == "send"]
        assert [m["value"] for m in sent] == [output_value(v) for v in polled]
        assert all(m["topic"] == "main-out" and m["outcome"] == "ok" for m in sent)
    assert session.ctx.acks_for("main-out").acked == sum(
        len([m for m in o.value if m["op"] == "send"]) for o in copies
    )


def test_transactional_producers_record_their_own_reads(
    tmp_path: Path, mock_bootstrap: str
) -> None:
    topic = TopicSpec(name="txn", partitions=MOCK_PARTITIONS)
    ran = run_session(
        tmp_path,
        mock_bootstrap,
        topic,
        3,
        producer=ProducerSpec(workers=1, batch=4, transactional=True, txn_poll=True),
    )
    txns = [o for o in ran.ops if o.f == "txn" and o.type != "invoke"]
    assert txns and ran.summary.send_ops == len(txns)
    for o in txns:
        kinds = [m["op"] for m in o.value]
        assert kinds == ["send"] * 4 + ["poll"]
        assert "records" in o.value[-1]
    committed = [m for o in txns if o.type == "ok" for m in o.value if m["op"] == "send"]
    assert committed and all(isinstance(m["offset"], int) for m in committed)
    assert ran.session.ctx.acks_for("txn").acked == len(committed)


def test_stop_waits_as_long_as_the_slowest_workload_needs(tmp_path: Path) -> None:
    topic = TopicSpec(name="t")
    ctx = ClientContext(HistoryWriter(tmp_path / "h.jsonl"), lambda _lane: "")
    producer = ProducerSpec(delivery_timeout_ms=30000, request_timeout_ms=5000)
    session = WorkloadSession(plan_workloads(topic, producer, ConsumerSpec(workers=1)), ctx)
    # librdkafka reports every send within delivery.timeout.ms + request.timeout.ms.
    assert session.join_s() == 45
    # A copier's worst case is longer (tests/unit/test_copier_stop.py walks it).
    session = WorkloadSession(
        plan_workloads(topic, producer, ConsumerSpec(workers=1), CopierSpec(workers=1)), ctx
    )
    assert session.join_s() == copier_stop_s() == 200.5  # its 190.5 s walk, and 10 s
    stalling = ConsumerSpec(
        workers=1, mode="subscribe", stall_fraction=0.5, max_poll_interval_ms=60000
    )
    session = WorkloadSession(plan_workloads(topic, ProducerSpec(), stalling), ctx)
    # A stall does not watch the stop event: it outlasts max.poll.interval.ms.
    assert session.join_s() == 10 + 63


def test_a_drain_whose_cluster_is_gone_stops_at_once_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The runner sets ctx.abort when the Docker engine died: the drain must not poll
    nothing until its time limit (90 s by default, in silence)."""
    from kafka_trial.workloads.drain import drain

    history = HistoryWriter(tmp_path / "history.jsonl")
    # No broker at all answers here: every poll would return nothing until the limit.
    ctx = ClientContext(history, lambda _lane: "127.0.0.1:9", seed=1, run_id="t")
    ctx.abort.set()
    t0 = time.monotonic()
    got = drain(ctx, TopicSpec(name="gone", partitions=2), DrainSpec(timeout_s=60, settle_s=1))
    assert time.monotonic() - t0 < 15
    assert got.complete is False and not any(p["done"] for p in got.partitions.values())
    assert "drain of gone stopped: the cluster is gone" in capsys.readouterr().err
    history.close()
