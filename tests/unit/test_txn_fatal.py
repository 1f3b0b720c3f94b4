"""A transactional worker whose producer turns fatal at the commit (fenced: the
coordinator aborted the transaction on its timeout) records the op as info and goes
on with a new producer; librdkafka raises the fatal error from poll() as well, which
once ended the worker's thread with the op left open. No Kafka: a producer stand-in
that raises as librdkafka 2.16.0 did (the clock-txn runs, docs/findings.md)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.harness.spec import build_spec
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.transactions import TxnWorker

FENCED = KafkaError(KafkaError._FENCED, "Failed to end transaction: fenced", fatal=True)


class FencedAtCommit:
    """begin, produce and flush work; commit raises the fatal error, and so does
    every poll after it."""

    def __init__(self) -> None:
        self.fatal = False

    def begin_transaction(self) -> None: ...

    def produce(self, *_a: Any, **_k: Any) -> None: ...

    def flush(self, *_a: Any) -> int:
        return 0

    def commit_transaction(self, *_a: Any) -> None:
        self.fatal = True
        raise KafkaException(FENCED)

    def abort_transaction(self, *_a: Any) -> None:
        raise AssertionError("a fatal error must not be answered with an abort")

    def poll(self, *_a: Any) -> int:
        if self.fatal:
            raise KafkaException(FENCED)
        return 0


def _one_op(tmp_path: Path, producer: object, **settings: Any) -> list:
    """One txn op of a worker with this producer stand-in: it must end info; the ops."""
    spec = build_spec(
        {"producer": {"transactional": True, "batch": 3, **settings}, "topic": {"name": "t"}}
    )
    h = HistoryWriter(tmp_path / "history.jsonl")
    ctx = ClientContext(h, lambda _lane: "")
    w = TxnWorker(ctx, Lane.of(ctx, 0), spec.producer, spec.topic, "kt-test-0")
    assert w._txn_op(producer, None, 7, random.Random(1)) == "info"  # type: ignore[arg-type]
    h.close()
    return read_history(tmp_path / "history.jsonl").ops


def test_a_fenced_commit_completes_the_op_info_even_when_poll_raises(tmp_path: Path) -> None:
    ops = _one_op(tmp_path, FencedAtCommit())
    assert [(o.type, o.f, o.process) for o in ops] == [("invoke", "txn", 7), ("info", "txn", 7)]
    assert ops[1].error == "_FENCED"
    assert {m["outcome"] for m in ops[1].value} == {"info"}


class BindingErrorAtFlush(FencedAtCommit):
    """A flush that raises SystemError, as confluent-kafka 2.16.1 did once inside its
    log callback while the producer was being fenced (a fence-txn-id run)."""

    def flush(self, *_a: Any) -> int:
        raise SystemError("<class 'logging.LogRecord'> returned a result with an exception set")

    def poll(self, *_a: Any) -> int:
        raise SystemError("again")


def test_a_binding_error_completes_the_op_info_and_the_worker_goes_on(tmp_path: Path) -> None:
    ops = _one_op(tmp_path, BindingErrorAtFlush(), abort_fraction=1.0)
    assert [(o.type, o.f) for o in ops] == [("invoke", "txn"), ("info", "txn")]
    assert ops[1].error is not None and ops[1].error.startswith("SystemError: <class")
    assert {m["outcome"] for m in ops[1].value} == {"info"}
