"""Client plumbing only, against librdkafka's in-process mock cluster (not real Kafka)."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.history import HistoryWriter, read_history
from harness.spec import build_spec
from workloads.processes import ProcessIds, UniqueValues
from workloads.producer import AckTracker, ProducerWorker

MOCK = {"test.mock.num.brokers": 3}


def worker(tmp_path: Path, producer: dict) -> tuple[ProducerWorker, HistoryWriter]:
    spec = build_spec({"producer": {"batch": 6, **producer}, "topic": {"name": "mock"}})
    h = HistoryWriter(tmp_path / "history.jsonl")
    w = ProducerWorker(
        spec.producer,
        spec.topic,
        "",
        h,
        ProcessIds(),
        UniqueValues(),
        AckTracker(),
        threading.Event(),
        extra_config=MOCK,
    )
    return w, h


def test_send_op_records_offsets_and_outcomes(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {})
    p = w._new_producer()
    assert w._send_op(p, 0, single_attempt=False, wait_s=30) == "ok"
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
    assert w._send_op(p, 0, single_attempt=False, wait_s=30) == "ok"
    h.close()
    inv, done = read_history(tmp_path / "history.jsonl").ops
    assert all(m["partition"] is None for m in inv.value)
    assert all(isinstance(m["partition"], int) for m in done.value)


def test_unanswered_sends_complete_as_info(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"delivery_timeout_ms": 1000})
    p = w._new_producer()
    # No time to wait for delivery reports: the outcome is unknown, never fail.
    assert w._send_op(p, 0, single_attempt=False, wait_s=0) == "info"
    h.close()
    done = read_history(tmp_path / "history.jsonl").ops[1]
    assert done.type == "info" and done.error == "no delivery report"
    assert all(m["outcome"] == "info" and m["offset"] is None for m in done.value)
