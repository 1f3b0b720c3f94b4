"""The transaction and consumer checks: each anomaly planted, and a clean twin."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.spark_analysis.job import analyze

from tests.histories import Builder
from tests.results import ran


def counts(run: Path) -> dict[str, int]:
    return ran(analyze(run))


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
    # The drain read every partition to its end (offset 1 is each one's commit marker).
    b.drain(8, [(1, 0, 0), (2, 1, 0)], at_end={0: 2, 1: 2, 2: 2})
    res = analyze(b.done())
    assert res["anomalies"]["torn-txn"]["count"] == 1
    assert res["anomalies"]["torn-txn"]["examples"][0]["missing"] == [3]
    assert res["valid"] is False


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
    b.poll(9, [(2, 0, 1)])  # the same consumer went back, in a later op
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 1
    assert c["int-nonmonotonic-poll"] == 0


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
    assert res["anomalies"]["int-poll-skip"]["count"] == 0


def test_gap_over_a_transaction_marker_is_not_a_skip(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0)], "ok")  # offset 1 is the commit marker
    b.txn(0, [(2, 0, 2)], "ok")
    b.poll(9, [(1, 0, 0), (2, 0, 2)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_int_nonmonotonic_poll(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1), (1, 0, 0)])  # one poll went back to offset 0
    res = analyze(b.done())
    c = ran(res)
    assert c["int-nonmonotonic-poll"] == 1
    assert c["nonmonotonic-poll"] == 0
    ex = res["anomalies"]["int-nonmonotonic-poll"]["examples"][0]
    assert (ex["prev_offset"], ex["offset"]) == (1, 0)


def test_interleaved_partitions_in_one_poll_are_monotonic(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok"), (3, 0, 1, "ok"), (4, 1, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 1, 0), (3, 0, 1), (4, 1, 1)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_int_poll_skip(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(9, [(1, 0, 0), (3, 0, 2)])  # one poll jumped over acknowledged offset 1
    b.poll(10, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    res = analyze(b.done())
    assert res["anomalies"]["int-poll-skip"]["count"] == 1
    assert res["anomalies"]["int-poll-skip"]["examples"][0]["skipped_values"] == [2]
    assert res["anomalies"]["poll-skip"]["count"] == 0


def test_one_poll_without_gaps_is_not_an_int_skip(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_precommitted_read(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    # The transaction polled its own partition and saw its own, uncommitted value 1.
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "ok", polled=[(1, 0, 0)])
    b.poll(9, [(1, 0, 0), (2, 1, 0)])
    res = analyze(b.done())
    c = ran(res)
    assert c["precommitted-read"] == 1
    assert res["anomalies"]["precommitted-read"]["examples"][0]["value"] == 1
    assert sum(c.values()) == 1, c


def test_precommitted_read_counts_in_aborted_and_unknown_txns(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "fail", polled=[(1, 0, 0), (2, 1, 0)])
    b.txn(1, [(3, 0, 2)], "info", polled=[(3, 0, 2)])
    c = counts(b.done())
    assert c["precommitted-read"] == 3


def test_txn_reading_committed_values_is_not_precommitted(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0)], "ok")  # offset 1 is the commit marker
    b.txn(0, [(2, 0, 2)], "ok", polled=[(1, 0, 0)])  # read the earlier, committed one
    b.poll(9, [(1, 0, 0), (2, 0, 2)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_txn_poll_counts_as_a_read_only_when_the_txn_is_ok(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok")])
    b.txn(1, [(3, 2, 0)], "ok", polled=[(1, 0, 0)])  # ok: 1 was read
    b.txn(1, [(4, 2, 2)], "fail", polled=[(2, 1, 0)])  # aborted: 2 was not
    c = counts(b.done())
    assert c["unseen"] == 2  # 2, and 3, which nothing read
    assert c["lost-write"] == 0 and c["precommitted-read"] == 0


def test_vanished_read(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.drain(9, [(1, 0, 0), (3, 0, 2)])  # 2 was read during the run, and then gone
    res = analyze(b.done())
    c = ran(res)
    assert c["vanished-read"] == 1
    ex = res["anomalies"]["vanished-read"]["examples"][0]
    assert (ex["value"], ex["offset"], ex["drain_max_offset"], ex["processes"]) == (2, 1, 2, ["5"])
    assert c["lost-write"] == 0  # it was read, so it is not lost


def test_drain_reading_everything_leaves_nothing_vanished(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.drain(9, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_drain_stopping_short_is_not_vanished(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.drain(9, [(1, 0, 0)])  # never reached offsets 1 and 2
    assert counts(b.done())["vanished-read"] == 0


def test_no_drain_reads_no_vanished_read(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.poll(9, [(1, 0, 0), (3, 0, 2)])  # not marked as the drain's
    assert counts(b.done())["vanished-read"] == 0


def test_aborted_txn_hidden_from_the_drain_is_not_vanished(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0)], "fail")
    b.txn(0, [(2, 0, 2)], "ok")
    b.poll(5, [(1, 0, 0), (2, 0, 2)])  # read_uncommitted saw the aborted 1
    b.drain(9, [(2, 0, 2)])  # read_committed does not
    c = counts(b.done())
    assert c["aborted-read"] == 1 and c["vanished-read"] == 0


def test_a_transactions_own_reads_make_no_position_promise(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    # txn_poll seeks to its own sends: it jumps over offsets 1 and 2, then back to 0.
    b.txn(1, [(4, 0, 3)], "ok", polled=[(1, 0, 0), (4, 0, 3)])
    b.txn(1, [(5, 0, 4)], "ok", polled=[(1, 0, 0), (5, 0, 4)])
    b.poll(9, [(1, 0, 0), (2, 0, 1), (3, 0, 2), (4, 0, 3), (5, 0, 4)])
    c = counts(b.done())
    assert c["poll-skip"] == 0 and c["int-poll-skip"] == 0 and c["nonmonotonic-poll"] == 0
    assert c["precommitted-read"] == 2
