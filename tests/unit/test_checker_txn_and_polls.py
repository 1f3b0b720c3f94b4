"""The transaction and consumer checks: each anomaly planted, and a clean twin."""

from __future__ import annotations

from pathlib import Path

from spark_analysis.job import analyze
from tests.histories import Builder


def counts(run: Path) -> dict[str, int]:
    return {k: v["count"] for k, v in analyze(run)["anomalies"].items()}


def test_int_nonmonotonic_send(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 5, "ok"), (2, 0, 3, "ok")])  # one op: 2 landed before 1
    b.poll(9, [(2, 0, 3), (1, 0, 5)])
    c = counts(b.done())
    assert c["int-nonmonotonic-send"] == 1
    assert c["reorder"] == 1  # the within-process form sees it too


def test_across_ops_is_reorder_not_int_nonmonotonic(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 5, "ok")])
    b.sends(0, [(2, 0, 3, "ok")])
    b.poll(9, [(2, 0, 3), (1, 0, 5)])
    c = counts(b.done())
    assert c["int-nonmonotonic-send"] == 0 and c["reorder"] == 1


def test_torn_txn(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0), (2, 1, 0), (3, 2, 0)], "ok")
    b.poll(9, [(1, 0, 0), (2, 1, 0)])
    res = analyze(b.done())
    assert res["anomalies"]["torn-txn"]["count"] == 1
    assert res["anomalies"]["torn-txn"]["examples"][0]["missing"] == [3]


def test_whole_txn_visible_is_not_torn(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0), (2, 1, 0), (3, 2, 0)], "ok")
    b.poll(9, [(1, 0, 0), (2, 1, 0), (3, 2, 0)])
    run = b.done()
    c = counts(run)
    assert all(v == 0 for v in c.values()), c


def test_aborted_txn_read_is_aborted_read_not_torn(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "fail")
    b.txn(0, [(3, 0, 2), (4, 1, 2)], "ok")
    b.poll(9, [(1, 0, 0), (3, 0, 2), (4, 1, 2)])  # read_uncommitted saw aborted 1
    c = counts(b.done())
    assert c["aborted-read"] == 1 and c["torn-txn"] == 0


def test_nonmonotonic_poll(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1)])
    b.poll(9, [(2, 0, 1)])  # the same consumer went back
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 1


def test_new_consumer_process_may_start_over(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1)])
    b.poll(10, [(1, 0, 0), (2, 0, 1)])
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 0 and c["duplicate"] == 0


def test_poll_skip(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(9, [(1, 0, 0)])
    b.poll(9, [(3, 0, 2)])  # jumped over acknowledged offset 1
    b.poll(10, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    res = analyze(b.done())
    assert res["anomalies"]["poll-skip"]["count"] == 1
    assert res["anomalies"]["poll-skip"]["examples"][0]["skipped_values"] == [2]


def test_gap_over_a_transaction_marker_is_not_a_skip(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0)], "ok")  # offset 1 is the commit marker
    b.txn(0, [(2, 0, 2)], "ok")
    b.poll(9, [(1, 0, 0), (2, 0, 2)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c
