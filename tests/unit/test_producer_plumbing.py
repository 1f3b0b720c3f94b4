"""Client plumbing only, against librdkafka's in-process mock cluster (not real Kafka)."""

from __future__ import annotations

import itertools
import logging
import re
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


def run_briefly(w: ProducerWorker, seconds: float) -> float:
    """Run the worker's loop for `seconds`, then stop it; the time it ran."""
    t = threading.Thread(target=w.run)
    t0 = time.monotonic()
    t.start()
    time.sleep(seconds)
    w.ctx.stop.set()
    t.join(30)
    assert not t.is_alive()
    return time.monotonic() - t0


def completions(h: HistoryWriter, tmp_path: Path) -> tuple[list, list]:
    h.close()
    ops = read_history(tmp_path / "history.jsonl").ops
    return [o for o in ops if o.type == "invoke"], [o for o in ops if o.type != "invoke"]


def test_sends_record_offsets_outcomes_and_the_clients_produce_order(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"processes_per_client": 4, "target_rate": 3000})
    # 1 s gave 4 sends, not 5, while both cores ran Spark (a suite run of 2026-11-25).
    run_briefly(w, 3.0)
    invokes, done = completions(h, tmp_path)
    assert len(done) >= 5 and {o.type for o in done} == {"ok"}
    sends = [m for o in done for m in o.value]
    assert all(m["outcome"] == "ok" and isinstance(m["offset"], int) for m in sends)
    assert all(m["partition"] == m["value"] % 3 for m in sends)
    assert w.acks.acked == len(sends)
    # One client, and its produce() order numbers every send once, in invoke order.
    assert {m["client"] for m in sends} == {0}
    in_order = [m["seq"] for o in invokes for m in o.value]
    assert in_order == list(range(len(in_order)))
    by_value = {m["value"]: (m["client"], m["seq"]) for o in invokes for m in o.value}
    assert all(by_value[m["value"]] == (m["client"], m["seq"]) for m in sends)


def test_processes_share_a_client_with_ops_in_flight_together(tmp_path: Path) -> None:
    # Each round trip takes 100 ms, so only pipelining gets more than 10 ops a second.
    w, h = worker(
        tmp_path,
        {"processes_per_client": 8, "target_rate": None},
        {"test.mock.broker.rtt": 100},
    )
    run_briefly(w, 1.5)
    h.close()
    ops = read_history(tmp_path / "history.jsonl").ops
    open_now: set[int] = set()
    most = 0
    for o in ops:
        if o.type == "invoke":
            assert o.process not in open_now  # one op outstanding per process
            open_now.add(o.process)
            most = max(most, len(open_now))
        else:
            open_now.remove(o.process)
    assert most == 8
    assert len({o.process for o in ops}) == 8  # all ok: no process had to be replaced


def test_keyed_sends_let_the_partitioner_choose(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"keyed": True, "processes_per_client": 1, "target_rate": 100})
    run_briefly(w, 0.5)
    invokes, done = completions(h, tmp_path)
    assert done
    assert all(m["partition"] is None for o in invokes for m in o.value)
    assert all(isinstance(m["partition"], int) for o in done for m in o.value)


def test_a_timed_out_send_is_unknown_and_its_process_is_replaced(tmp_path: Path) -> None:
    # The brokers answer after 3 s, but librdkafka gives up on a message after 1 s.
    w, h = worker(
        tmp_path,
        {"delivery_timeout_ms": 1000, "request_timeout_ms": 500, "processes_per_client": 1},
        {"test.mock.broker.rtt": 3000},
    )
    run_briefly(w, 2.0)
    invokes, done = completions(h, tmp_path)
    assert done and all(o.type == "info" for o in done)
    assert all("_MSG_TIMED_OUT" in (o.error or "") for o in done)
    assert all(m["outcome"] == "info" and m["offset"] is None for o in done for m in o.value)
    if len(invokes) > 1:  # a second op came from a new process
        assert invokes[1].process != invokes[0].process


def test_the_target_rate_is_never_exceeded(tmp_path: Path) -> None:
    w, h = worker(tmp_path, {"processes_per_client": 8, "target_rate": 300})
    ran = run_briefly(w, 1.5)
    invokes, _ = completions(h, tmp_path)
    sent = sum(len(o.value) for o in invokes)
    # A slow machine sends fewer; none sends more than the rate, a burst and a batch.
    assert 0 < sent <= 300 * ran + 300 * 0.5 + 6


def test_a_crash_ends_every_op_of_the_client_as_unknown(tmp_path: Path) -> None:
    # The mock brokers answer after 100 ms, so a crash (within 30 ms of an op's start)
    # comes first. Two processes share the client, each op start crashing it with
    # chance 1.0 / 2 (with this lane's seed: the 3rd and 4th starts).
    w, h = worker(
        tmp_path, {"crash_fraction": 1.0, "processes_per_client": 2}, {"test.mock.broker.rtt": 100}
    )
    run_briefly(w, 4.0)
    invokes, done = completions(h, tmp_path)
    assert w.counts.crashes >= 2
    crashed = [o for o in done if o.error == "client crashed"]
    assert crashed and all(m["outcome"] == "info" for o in crashed for m in o.value)
    # A crash takes the other process's op in flight with it.
    assert len(crashed) > w.counts.crashes
    # Each crash starts a new client: its sends carry a new client id (the last one
    # may have been stopped before it sent anything).
    clients = {m["client"] for o in invokes for m in o.value}
    assert len(clients) in (w.counts.crashes, w.counts.crashes + 1)


def test_resend_after_a_crash_sends_the_unknown_values_again(tmp_path: Path) -> None:
    w, h = worker(
        tmp_path,
        {"crash_fraction": 1.0, "resend_unacked": True, "processes_per_client": 1},
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
    w, h = worker(
        tmp_path, {"crash_fraction": 1.0, "processes_per_client": 1}, {"test.mock.broker.rtt": 200}
    )
    run_briefly(w, 1.5)
    h.close()
    done = [o for o in read_history(tmp_path / "history.jsonl").ops if o.type != "invoke"]
    values = [m["value"] for o in done for m in o.value]
    assert len(done) >= 2 and len(values) == len(set(values))
    assert not any(m.get("resend") for o in done for m in o.value)


def test_librdkafka_names_each_client_as_the_history_does(tmp_path: Path) -> None:
    # A debug log is read against the history: its lines must say which `client`.
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    log = logging.Logger("plumbing")
    log.addHandler(Keep())
    spec = build_spec(
        {
            "producer": {"batch": 6, "crash_fraction": 1.0, "processes_per_client": 1,
                         "librdkafka": {"debug": "msg"}},
            "topic": {"name": "mock"},
        }
    )  # fmt: skip
    h = HistoryWriter(tmp_path / "history.jsonl")
    ctx = ClientContext(
        h, lambda _lane: "", logger=log, extra_config={**MOCK, "test.mock.broker.rtt": 100}
    )
    w = ProducerWorker(ctx, Lane.of(ctx, 0), spec.producer, spec.topic)
    run_briefly(w, 2.0)
    invokes, _ = completions(h, tmp_path)
    clients = {m["client"] for o in invokes for m in o.value}
    assert len(clients) >= 2
    named = {int(n) for n in re.findall(r"\[kt-producer-(\d+)#producer-\d+\]", "\n".join(lines))}
    assert clients <= named
