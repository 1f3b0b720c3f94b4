"""Consumer-group delivery checks, and rebalance-aware poll checks."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.report.text import render
from kafka_trial.spark_analysis.job import analyze

from tests.histories import Builder
from tests.results import ran


def counts(run: Path) -> dict[str, int]:
    return ran(analyze(run))


def three_acked(b: Builder) -> Builder:
    return b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])


def test_group_missed(spark, tmp_path: Path) -> None:
    b = three_acked(Builder(tmp_path))
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.processed(5, [(1, 0, 0)])
    b.op(5, "crash", {"op": "crash", "point": "before-process"})
    b.group_offsets(9, {0: 3})  # committed past 2 and 3, which nobody processed
    res = analyze(b.done())
    assert res.anomalies["group-missed"].count == 2
    assert [e["value"] for e in res.anomalies["group-missed"].examples] == [2, 3]
    assert res.anomalies["group-redelivered"].count == 0
    # The report says what the workload did to itself, beside the verdict.
    assert res.stats.client_events == {"crash": 1}
    text = render(res, tmp_path)
    assert "client events: crash 1" in text and "group-missed" in text


def test_not_committed_past_is_not_missed(spark, tmp_path: Path) -> None:
    b = three_acked(Builder(tmp_path))
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.processed(5, [(1, 0, 0)])
    b.group_offsets(9, {0: 1})
    c = counts(b.done())
    assert c["group-missed"] == 0


def test_group_redelivered(spark, tmp_path: Path) -> None:
    b = three_acked(Builder(tmp_path))
    b.poll(5, [(1, 0, 0), (2, 0, 1)])
    b.processed(5, [(1, 0, 0), (2, 0, 1)])
    b.op(5, "crash", {"op": "crash", "point": "before-commit"})
    b.op(6, "assign", {"op": "assign", "partitions": [0]})
    b.poll(6, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.processed(6, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.group_offsets(9, {0: 3})
    c = counts(b.done())
    assert c["group-redelivered"] == 2
    assert c["group-missed"] == 0


def test_rebalance_resets_poll_order(spark, tmp_path: Path) -> None:
    b = three_acked(Builder(tmp_path))
    b.poll(5, [(1, 0, 0), (2, 0, 1)])
    b.op(5, "revoke", {"op": "revoke", "partitions": [0]})
    b.op(5, "assign", {"op": "assign", "partitions": [0]})
    b.poll(5, [(2, 0, 1), (3, 0, 2)])  # resumed from the committed offset: legitimate
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 0


def test_without_rebalance_going_back_is_nonmonotonic(spark, tmp_path: Path) -> None:
    b = three_acked(Builder(tmp_path))
    b.poll(5, [(1, 0, 0), (2, 0, 1)])
    b.poll(5, [(2, 0, 1), (3, 0, 2)])
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 1
