"""Consumer position checks: rebalance events are recorded after the poll during
which they happened (defect 2), and skips are judged against every known position,
from acknowledged writes and from any read (defect 5). Each planted, with a clean twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka_trial.spark_analysis import checks_reads
from kafka_trial.spark_analysis.history_frames import load
from kafka_trial.spark_analysis.history_parse import FLAT_SCHEMA, flatten, read_json
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.shared_frames import Plan
from pyspark.sql import SparkSession

from tests.histories import Builder, group_poll
from tests.results import ran


def anomalies(run: Path) -> dict[str, Any]:
    return analyze(run)["anomalies"]


def counts(run: Path) -> dict[str, int]:
    return ran({"anomalies": anomalies(run)})


def acked(b: Builder, n: int, partition: int = 0) -> Builder:
    return b.sends(0, [(v, partition, v, "ok") for v in range(n)])


# Defect 2: rebalance epochs.


def test_redelivery_in_the_assigning_poll_is_not_nonmonotonic(spark, tmp_path: Path) -> None:
    b = acked(Builder(tmp_path), 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (2, 0, 2)])
    # The partition moved during this poll: it went back to the committed offset 1.
    group_poll(b, 5, [(1, 0, 1), (2, 0, 2), (3, 0, 3)], [("revoke", [0]), ("assign", [0])])
    group_poll(b, 5, [(4, 0, 4), (5, 0, 5)])
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 0 and c["int-nonmonotonic-poll"] == 0, c


def test_going_back_without_rebalance_is_nonmonotonic(spark, tmp_path: Path) -> None:
    b = acked(Builder(tmp_path), 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (2, 0, 2)])
    group_poll(b, 5, [(1, 0, 1), (2, 0, 2), (3, 0, 3)])
    group_poll(b, 5, [(4, 0, 4), (5, 0, 5)])
    res = anomalies(b.done())
    assert res["nonmonotonic-poll"]["count"] == 1
    ex = res["nonmonotonic-poll"]["examples"][0]
    assert (ex["prev_offset"], ex["offset"]) == (2, 1)


def test_restart_within_the_assigning_poll_is_not_int_nonmonotonic(spark, tmp_path: Path) -> None:
    b = acked(Builder(tmp_path), 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1)])
    # Records from before the revoke, then from the committed offset after the assign.
    group_poll(b, 5, [(2, 0, 2), (3, 0, 3), (1, 0, 1), (2, 0, 2)], [("lost", [0]), ("assign", [0])])
    c = counts(b.done())
    assert c["int-nonmonotonic-poll"] == 0 and c["nonmonotonic-poll"] == 0, c


def test_restart_within_a_poll_without_rebalance_is_int_nonmonotonic(spark, tmp_path: Path) -> None:
    b = acked(Builder(tmp_path), 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1)])
    group_poll(b, 5, [(2, 0, 2), (3, 0, 3), (1, 0, 1), (2, 0, 2)])
    c = counts(b.done())
    assert c["int-nonmonotonic-poll"] == 1 and c["nonmonotonic-poll"] == 0, c


def test_the_poll_after_the_rebalance_is_judged(spark, tmp_path: Path) -> None:
    """The exemption covers the poll during which the partition moved, not the ones
    after it: going back after the new assignment settled is still caught."""
    b = acked(Builder(tmp_path), 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1)])
    group_poll(b, 5, [(1, 0, 1)], [("revoke", [0]), ("assign", [0])])
    group_poll(b, 5, [(2, 0, 2), (3, 0, 3)])
    group_poll(b, 5, [(2, 0, 2)])  # back, with no rebalance
    res = anomalies(b.done())
    assert res["nonmonotonic-poll"]["count"] == 1
    ex = res["nonmonotonic-poll"]["examples"][0]
    assert (ex["prev_offset"], ex["offset"]) == (3, 2)


def test_rebalance_after_another_op_is_not_attached_to_the_poll(spark, tmp_path: Path) -> None:
    """An event that does not directly follow a poll (a close's revoke after a crash
    op) does not exempt the poll before it."""
    b = acked(Builder(tmp_path), 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (2, 0, 2)])
    group_poll(b, 5, [(1, 0, 1)])  # back, no rebalance during this poll
    b.op(5, "crash", {"op": "crash", "point": "before-commit"})
    group_poll(b, 5, [], [("revoke", [0])])
    c = counts(b.done())
    assert c["nonmonotonic-poll"] == 1, c


def _plan(spark: SparkSession, run: Path) -> Plan:
    return Plan(load(spark, str(run / "history.jsonl")))


def _two_partitions(tmp_path: Path) -> Path:
    """Partition 1 moves during the second poll and is re-delivered; partition 0 does
    not move and goes back in the same poll: a real regression."""
    b = acked(Builder(tmp_path), 4, 0)
    b.sends(0, [(10 + o, 1, o, "ok") for o in range(4)])
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (10, 1, 0), (11, 1, 1)])
    group_poll(
        b,
        5,
        [(0, 0, 0), (2, 0, 2), (11, 1, 1), (12, 1, 2), (10, 1, 0)],
        [("revoke", [1]), ("assign", [1])],
    )
    return b.done()


def test_rebalance_exempts_only_the_partitions_it_moved(spark, tmp_path: Path) -> None:
    plan = _plan(spark, _two_partitions(tmp_path))
    try:
        back = checks_reads.nonmonotonic_poll(plan).collect()
        inside = checks_reads.int_nonmonotonic_poll(plan).collect()
    finally:
        plan.release()
    assert [(r["partition"], r["prev_offset"], r["offset"]) for r in back] == [(0, 1, 0)]
    assert inside == []


def test_regression_on_an_unmoved_partition_is_still_caught(spark, tmp_path: Path) -> None:
    """Through analyze, with the partitions read from the history's rebalance lines:
    only partition 1 moved, so partition 0 going back in that poll is judged."""
    res = anomalies(_two_partitions(tmp_path))
    assert res["nonmonotonic-poll"]["count"] == 1
    ex = res["nonmonotonic-poll"]["examples"][0]
    assert (ex["partition"], ex["prev_offset"], ex["offset"]) == (0, 1, 0)
    # Partition 1 went back inside the poll during which it moved: not judged.
    assert res["int-nonmonotonic-poll"]["count"] == 0


def test_unmoved_partition_reading_on_is_clean(spark, tmp_path: Path) -> None:
    """The twin of the above: partition 0 reads on, partition 1 is re-delivered in
    the poll during which it moved."""
    b = acked(Builder(tmp_path), 4, 0)
    b.sends(0, [(10 + o, 1, o, "ok") for o in range(4)])
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (10, 1, 0), (11, 1, 1)])
    group_poll(
        b,
        5,
        [(2, 0, 2), (3, 0, 3), (11, 1, 1), (12, 1, 2), (10, 1, 0)],
        [("revoke", [1]), ("assign", [1])],
    )
    group_poll(b, 5, [(13, 1, 3)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_rebalance_partitions_from_the_columnar_rows(spark, tmp_path: Path) -> None:
    """A large history is loaded from the flat rows of its Parquet cache: the
    rebalance partitions are the same as from the JSON lines."""
    run = _two_partitions(tmp_path)
    path = str(run / "history.jsonl")
    pq = (tmp_path / "rows.parquet").as_uri()
    flatten(read_json(spark, path)).write.parquet(pq)
    from_json = Plan(load(spark, path))
    from_parquet = Plan(
        load(spark, path, spark.read.schema(FLAT_SCHEMA).parquet(pq), columnar=True)
    )
    try:
        want = sorted(map(tuple, from_json.rebalances.collect()))
        got = sorted(map(tuple, from_parquet.rebalances.collect()))
        back = checks_reads.nonmonotonic_poll(from_parquet).collect()
    finally:
        from_json.release()
        from_parquet.release()
    assert want == got and [p for _, _, p in want] == [1, 1]
    assert [(r["partition"], r["prev_offset"], r["offset"]) for r in back] == [(0, 1, 0)]


# Defect 5: skips over positions known from any read or acknowledged write.


def _info_send_read_by_drain(b: Builder) -> Builder:
    """Offsets 0 and 2 acknowledged; offset 1 holds value 1, whose send ended info
    and whose offset only the drain's read shows."""
    b.sends(0, [(0, 0, 0, "ok")])
    b.sends(0, [(1, 0, None, "info")])
    b.sends(0, [(2, 0, 2, "ok")])
    return b


# The offsets inside gaps are a broadcast join's side up to a bound, sorted beyond it.
@pytest.mark.parametrize("broadcast_rows", [200_000, 0])
def test_skip_over_offset_known_from_the_drain_is_poll_skip(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broadcast_rows: int
) -> None:
    monkeypatch.setattr(checks_reads, "_BROADCAST_ROWS", broadcast_rows)
    b = _info_send_read_by_drain(Builder(tmp_path))
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(2, 0, 2)])
    b.drain(9, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], at_end={0: 3})
    res = anomalies(b.done())
    assert res["poll-skip"]["count"] == 1
    ex = res["poll-skip"]["examples"][0]
    assert (ex["prev_offset"], ex["offset"], ex["skipped_values"]) == (0, 2, [1])
    assert res["int-poll-skip"]["count"] == 0


def test_skip_within_op_over_offset_known_from_the_drain(spark, tmp_path: Path) -> None:
    b = _info_send_read_by_drain(Builder(tmp_path))
    group_poll(b, 5, [(0, 0, 0), (2, 0, 2)])
    b.drain(9, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], at_end={0: 3})
    res = anomalies(b.done())
    assert res["int-poll-skip"]["count"] == 1
    assert res["int-poll-skip"]["examples"][0]["skipped_values"] == [1]
    assert res["poll-skip"]["count"] == 0


def test_consumer_reading_the_info_send_does_not_skip(spark, tmp_path: Path) -> None:
    b = _info_send_read_by_drain(Builder(tmp_path))
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(1, 0, 1), (2, 0, 2)])
    b.drain(9, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], at_end={0: 3})
    c = counts(b.done())
    assert c["poll-skip"] == 0 and c["int-poll-skip"] == 0, c


def test_gap_over_a_position_nobody_knows_is_no_skip(spark, tmp_path: Path) -> None:
    """Offset 1 is a transaction's commit marker: no write was acknowledged there and
    no read returned it, so jumping over it is what a consumer must do."""
    b = Builder(tmp_path)
    b.txn(0, [(0, 0, 0)], "ok")  # its commit marker takes offset 1
    b.sends(0, [(2, 0, 2, "ok")])
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(2, 0, 2)])
    group_poll(b, 6, [(0, 0, 0), (2, 0, 2)])
    b.drain(9, [(0, 0, 0), (2, 0, 2)], at_end={0: 3})
    c = counts(b.done())
    assert c["poll-skip"] == 0 and c["int-poll-skip"] == 0, c


def test_skip_over_an_undecodable_record_the_drain_read(spark, tmp_path: Path) -> None:
    """Offset 1 holds a record whose value did not decode: no value is known there,
    its position is."""
    b = Builder(tmp_path)
    b.sends(0, [(0, 0, 0, "ok")])
    b.sends(0, [(2, 0, 2, "ok")])
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(2, 0, 2)])
    b.drain(9, [(0, 0, 0), (None, 0, 1), (2, 0, 2)], at_end={0: 3})
    res = anomalies(b.done())
    assert res["poll-skip"]["count"] == 1
    ex = res["poll-skip"]["examples"][0]
    assert (ex["skipped_offsets"], ex["skipped_values"]) == ([1], [])


def test_skip_over_an_offset_a_transaction_read(spark, tmp_path: Path) -> None:
    """Offset 1 is known only from an ok transaction's poll; the consumer's one poll
    jumped over it. Its twin: the same without that transaction read."""
    for read_by_txn, want in ((True, 1), (False, 0)):
        b = _info_send_read_by_drain(Builder(tmp_path / str(read_by_txn)))
        if read_by_txn:
            b.txn(1, [(3, 1, 0)], "ok", polled=[(1, 0, 1)])
        group_poll(b, 5, [(0, 0, 0), (2, 0, 2)])
        res = anomalies(b.done())
        assert res["int-poll-skip"]["count"] == want, read_by_txn
        if want:
            ex = res["int-poll-skip"]["examples"][0]
            assert (ex["skipped_offsets"], ex["skipped_values"]) == ([1], [1])


def test_wide_gap_over_a_known_offset_is_a_skip(spark, tmp_path: Path) -> None:
    """A jump wider than the offsets listed one by one still finds the known offset
    it skipped (offset 5, from the drain's read); the twin, where nobody read offset
    5, makes the same jump over offsets nobody knows: no skip."""
    for drain_read_5, want in ((True, 1), (False, 0)):
        b = Builder(tmp_path / str(drain_read_5))
        b.sends(0, [(0, 0, 0, "ok"), (1, 0, 20_001, "ok")])
        group_poll(b, 5, [(0, 0, 0)])
        group_poll(b, 5, [(1, 0, 20_001)])
        group_poll(b, 6, [(0, 0, 0), (1, 0, 20_001)])
        b.drain(9, [(7, 0, 5)] if drain_read_5 else [(0, 0, 0)])
        res = anomalies(b.done())
        assert res["poll-skip"]["count"] == want and res["int-poll-skip"]["count"] == want
        if want:
            ex = res["poll-skip"]["examples"][0]
            assert (ex["process"], ex["skipped_offsets"], ex["skipped_values"]) == ("5", [5], [7])


def test_read_committed_drain_jumping_over_an_aborted_record_is_no_skip(
    spark, tmp_path: Path
) -> None:
    """A read_uncommitted consumer returned the aborted value 1 at offset 1; the
    read_committed drain rightly jumped over it (found by a real C10 run). Its twin:
    the same record from a transaction that committed is a skip."""
    for outcome, want in (("fail", 0), ("ok", 1)):
        b = Builder(tmp_path / outcome)
        b.sends(0, [(0, 0, 0, "ok")])
        b.txn(1, [(1, 0, 1)], outcome)
        b.sends(0, [(2, 0, 3, "ok")])  # offset 2 is the transaction's marker
        b.poll(5, [(0, 0, 0), (1, 0, 1), (2, 0, 3)])  # read_uncommitted
        b.drain(9, [(0, 0, 0), (2, 0, 3)], at_end={0: 4})
        res = anomalies(b.done())
        assert res["int-poll-skip"]["count"] == want, outcome
        assert res["aborted-read"]["count"] == (1 - want), outcome
        if want:
            ex = res["int-poll-skip"]["examples"][0]
            assert (ex["skipped_offsets"], ex["skipped_values"]) == ([1], [1])
