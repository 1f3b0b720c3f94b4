"""Client plumbing only, against librdkafka's in-process mock cluster (not real Kafka)."""

from __future__ import annotations

import itertools
import random
import threading
import time
from pathlib import Path

from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.harness.spec import build_spec
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.producer import ProducerWorker

MOCK = {"test.mock.num.brokers": 3}


def worker(
    tmp_path: Path, producer: dict, mock: dict | None = None
) -> tuple[ProducerWorker, HistoryWriter]:
    spec = build_spec({"producer": {"batch": 6, **producer}, "topic": {"name": "mock"}})
    h = HistoryWriter(tmp_path / "history.jsonl")
    ctx = ClientContext(h, lambda _lane: "", extra_config={**MOCK, **(mock or {})})
    w = ProducerWorker(ctx, Lane.of(ctx, 0), spec.producer, spec.topic)
    return w, h


def send_op(w: ProducerWorker, p, wait_s: float = 30, crash: bool = False) -> str:
    done = w._send_op(p, 0, w._fresh_micro(), False, wait_s, crash, random.Random(0))
    outcomes = {m.outcome for m in done}
    return outcomes.pop() if len(outcomes) == 1 else "info"


def test_send_op_records_offsets_and_outcomes(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {})
    p = w._new_producer()
    assert send_op(w, p) == "ok"
    p.flush(5)
    h.close()
    inv, done = read_history(tmp_path / "history.jsonl").ops
    assert inv.type == "invoke" and done.type == "ok" and done.f == "send"
    assert [m["value"] for m in done.value] == [m["value"] for m in inv.value] == list(range(6))
    assert all(m["outcome"] == "ok" and isinstance(m["offset"], int) for m in done.value)
    assert all(m["partition"] == m["value"] % 3 for m in done.value)
    assert w.acks.acked == 6


def test_keyed_sends_let_the_partitioner_choose(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"keyed": True})
    p = w._new_producer()
    assert send_op(w, p) == "ok"
    h.close()
    inv, done = read_history(tmp_path / "history.jsonl").ops
    assert all(m["partition"] is None for m in inv.value)
    assert all(isinstance(m["partition"], int) for m in done.value)


def test_unanswered_sends_complete_as_info(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"delivery_timeout_ms": 1000})
    p = w._new_producer()
    # No time to wait for delivery reports: the outcome is unknown, never fail.
    assert send_op(w, p, wait_s=0) == "info"
    h.close()
    done = read_history(tmp_path / "history.jsonl").ops[1]
    assert done.type == "info" and done.error == "no delivery report"
    assert all(m["outcome"] == "info" and m["offset"] is None for m in done.value)


def test_a_crash_leaves_sends_in_flight_unknown(tmp_path: Path) -> None:
    # The mock brokers answer after 200 ms: the crash always comes first.
    w, h = worker(tmp_path, {}, {"test.mock.broker.rtt": 200})
    p = w._new_producer()
    assert send_op(w, p, crash=True) == "info"
    h.close()
    done = read_history(tmp_path / "history.jsonl").ops[1]
    assert done.error == "client crashed" and w.counts.crashes == 1
    assert all(m["outcome"] == "info" for m in done.value)


def run_briefly(w: ProducerWorker, seconds: float) -> None:
    t = threading.Thread(target=w.run)
    t.start()
    time.sleep(seconds)
    w.ctx.stop.set()
    t.join(30)
    assert not t.is_alive()


def test_resend_after_a_crash_sends_the_unknown_values_again(tmp_path: Path) -> None:
    w, h = worker(
        tmp_path,
        {"crash_fraction": 1.0, "resend_unacked": True},
        {"test.mock.broker.rtt": 200},
    )
    run_briefly(w, 2)
    h.close()
    ops = read_history(tmp_path / "history.jsonl").ops
    done = [o for o in ops if o.type != "invoke"]
    assert len(done) >= 3 and w.counts.crashes == len(done)
    # Every op crashed, so each next op (a new process) re-sends the same values.
    for before, after in itertools.pairwise(done):
        assert after.process != before.process
        assert [m["value"] for m in after.value] == [m["value"] for m in before.value]
        assert all(m.get("resend") is True for m in after.value)


def test_without_resend_a_restart_sends_new_values(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"crash_fraction": 1.0}, {"test.mock.broker.rtt": 200})
    run_briefly(w, 1.5)
    h.close()
    done = [o for o in read_history(tmp_path / "history.jsonl").ops if o.type != "invoke"]
    values = [m["value"] for o in done for m in o.value]
    assert len(done) >= 2 and len(values) == len(set(values))
    assert not any(m.get("resend") for o in done for m in o.value)
