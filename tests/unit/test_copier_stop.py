"""A stopped run waits for its copiers as long as their worst case, no less: a copier
still inside an op when the session gives up on it records no outcome, and its
thread goes on into whatever runs next (a campaign's next run)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.workloads import copier
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.plan import CopierWorkload
from kafka_trial.workloads.settings import CopierSpec


class _Msg:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return str(self._offset).encode()


class _Waits:
    """Every bound a blocking call was given: how long it could have waited."""

    def __init__(self) -> None:
        self.total = 0.0
        self.calls: list[str] = []

    def add(self, what: str, seconds: float) -> None:
        self.calls.append(what)
        self.total += seconds


class _Consumer:
    def __init__(self, waits: _Waits) -> None:
        self.waits = waits

    def consume(self, num_messages: int, timeout: float) -> list[_Msg]:
        self.waits.add("consume", timeout)
        return [_Msg(0), _Msg(1)]

    def assignment(self) -> list[Any]:
        return []

    def position(self, parts: list[Any]) -> list[Any]:
        return []

    def consumer_group_metadata(self) -> object:
        return object()


class _Producer:
    """Each transactional call runs to its timeout; the commit then fails in a way
    that needs an abort, the worst path through an op."""

    def __init__(self, waits: _Waits, stop: threading.Event) -> None:
        self.waits, self.stop = waits, stop

    def begin_transaction(self) -> None:
        pass

    def produce(self, *a: Any, **kw: Any) -> None:
        pass

    def send_offsets_to_transaction(self, offsets: Any, meta: Any, timeout: float) -> None:
        self.waits.add("send_offsets_to_transaction", timeout)
        self.stop.set()  # the run stops while the op is in flight

    def commit_transaction(self, timeout: float) -> None:
        self.waits.add("commit_transaction", timeout)
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "t", txn_requires_abort=True))

    def abort_transaction(self, timeout: float) -> None:
        self.waits.add("abort_transaction", timeout)

    def init_transactions(self, timeout: float) -> None:
        self.waits.add("init_transactions", timeout)

    def purge(self, **kw: Any) -> None:
        pass

    def flush(self, timeout: float) -> int:
        return 0


def test_a_stopped_copier_ends_within_the_sessions_wait(tmp_path: Path, monkeypatch) -> None:
    waits = _Waits()
    ctx = ClientContext(HistoryWriter(tmp_path / "history.jsonl"), lambda lane: "b:9092")
    consumer, producer = _Consumer(waits), _Producer(waits, ctx.stop)
    handed = iter([(consumer, producer)])
    monkeypatch.setattr(copier.CopierWorker, "_clients", lambda self: next(handed, None))
    monkeypatch.setattr(copier, "Producer", lambda conf: producer)  # the fence's
    monkeypatch.setattr(
        copier, "leave_group", lambda c, what, timeout_s=10.0: waits.add("leave_group", timeout_s)
    )
    monkeypatch.setattr(
        copier,
        "close_within",
        lambda c, what, timeout_s=copier.CLOSE_S: waits.add("close_within", timeout_s),
    )
    source = TopicSpec(name="t", partitions=1)
    plan = CopierWorkload(CopierSpec(workers=1), source)
    (worker,) = plan.workers(ctx, lambda: Lane(0, "b:9092", 1))
    worker.run()
    ctx.history.close()
    assert waits.calls == [
        "consume",
        "send_offsets_to_transaction",
        "commit_transaction",
        "abort_transaction",
        "leave_group",
        "close_within",
        "init_transactions",
    ]
    assert waits.total <= plan.join_s()
    # The op was completed by the copier itself, with its outcome: nothing was left
    # for the harness to close as "stopped before this op completed".
    txn = [o for o in read_history(tmp_path / "history.jsonl").ops if o.f == "txn"]
    assert [o.type for o in txn] == ["invoke", "fail"]
