"""Consumer position checks: rebalance events are recorded after the poll during
which they happened (defect 2), and skips are judged against every known position,
from acknowledged writes and from any read (defect 5). Each planted, with a clean twin.

The cases whose answer is an anomaly's rows are judged together, in one history
(tests/batched.py): each case's topic, processes and values are its own, and a
rebalance event moves only its own process's partitions. What depends on how the
whole history is loaded or joined (the Parquet rows, the broadcast bound) is judged
alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_trial.checkers.results import AnomalyResult
from kafka_trial.spark_analysis.checks.runner import tagged_checks
from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read.history_frames import load
from kafka_trial.spark_analysis.read.history_parse import FLAT_SCHEMA, flatten, read_json

from tests import query_checks
from tests.batched import Cases, Judged, judged_fixture
from tests.histories import Builder, group_poll
from tests.query_checks import QUERIES

CASES = Cases()
case = CASES.add


judged = judged_fixture(CASES, "positions")


def anomalies(run: Path) -> dict[str, AnomalyResult]:
    return analyze(run).anomalies


def acked(b: Builder, n: int, partition: int = 0) -> Builder:
    return b.sends(0, [(v, partition, v, "ok") for v in range(n)])


# Defect 2: rebalance epochs.


@case("redelivered in the assigning poll")
def _(b: Builder) -> None:
    acked(b, 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (2, 0, 2)])
    # The partition moved during this poll: it went back to the committed offset 1.
    group_poll(b, 5, [(1, 0, 1), (2, 0, 2), (3, 0, 3)], [("revoke", [0]), ("assign", [0])])
    group_poll(b, 5, [(4, 0, 4), (5, 0, 5)])


@case("went back without a rebalance")
def _(b: Builder) -> None:
    acked(b, 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (2, 0, 2)])
    group_poll(b, 5, [(1, 0, 1), (2, 0, 2), (3, 0, 3)])
    group_poll(b, 5, [(4, 0, 4), (5, 0, 5)])


def test_redelivery_in_the_assigning_poll_is_not_nonmonotonic(judged: dict[str, Judged]) -> None:
    assert judged["redelivered in the assigning poll"].seen() == {}


def test_going_back_without_rebalance_is_nonmonotonic(judged: dict[str, Judged]) -> None:
    j = judged["went back without a rebalance"]
    assert j.seen() == {"nonmonotonic-poll": 1}
    ex = j.examples("nonmonotonic-poll")[0]
    assert (ex["prev_offset"], ex["offset"]) == (2, 1)


@case("restarted within the assigning poll")
def _(b: Builder) -> None:
    acked(b, 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1)])
    # Records from before the revoke, then from the committed offset after the assign.
    group_poll(b, 5, [(2, 0, 2), (3, 0, 3), (1, 0, 1), (2, 0, 2)], [("lost", [0]), ("assign", [0])])


@case("restarted within a poll without a rebalance")
def _(b: Builder) -> None:
    acked(b, 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1)])
    group_poll(b, 5, [(2, 0, 2), (3, 0, 3), (1, 0, 1), (2, 0, 2)])


def test_restart_within_the_assigning_poll_is_not_int_nonmonotonic(
    judged: dict[str, Judged],
) -> None:
    j = judged["restarted within the assigning poll"]
    assert j.count("int-nonmonotonic-poll") == 0 and j.count("nonmonotonic-poll") == 0, j.seen()


def test_restart_within_a_poll_without_rebalance_is_int_nonmonotonic(
    judged: dict[str, Judged],
) -> None:
    j = judged["restarted within a poll without a rebalance"]
    assert j.count("int-nonmonotonic-poll") == 1 and j.count("nonmonotonic-poll") == 0, j.seen()


@case("went back after the rebalance")
def _(b: Builder) -> None:
    acked(b, 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1)])
    group_poll(b, 5, [(1, 0, 1)], [("revoke", [0]), ("assign", [0])])
    group_poll(b, 5, [(2, 0, 2), (3, 0, 3)])
    group_poll(b, 5, [(2, 0, 2)])  # back, with no rebalance


def test_the_poll_after_the_rebalance_is_judged(judged: dict[str, Judged]) -> None:
    """The exemption covers the poll during which the partition moved, not the ones
    after it: going back after the new assignment settled is still caught."""
    j = judged["went back after the rebalance"]
    assert j.count("nonmonotonic-poll") == 1, j.seen()
    ex = j.examples("nonmonotonic-poll")[0]
    assert (ex["prev_offset"], ex["offset"]) == (3, 2)


@case("rebalance after a crash op")
def _(b: Builder) -> None:
    acked(b, 6)
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (2, 0, 2)])
    group_poll(b, 5, [(1, 0, 1)])  # back, no rebalance during this poll
    b.op(5, "crash", {"op": "crash", "point": "before-commit"})
    group_poll(b, 5, [], [("revoke", [0])])


def test_rebalance_after_another_op_is_not_attached_to_the_poll(
    judged: dict[str, Judged],
) -> None:
    """An event that does not directly follow a poll (a close's revoke after a crash
    op) does not exempt the poll before it."""
    j = judged["rebalance after a crash op"]
    assert j.count("nonmonotonic-poll") == 1, j.seen()


def _two_partitions(b: Builder, partition_0: list[tuple[int, int, int]]) -> Builder:
    """Partition 1 moves during the second poll and is re-delivered; partition 0's
    records of that poll are `partition_0`."""
    acked(b, 4, 0)
    b.sends(0, [(10 + o, 1, o, "ok") for o in range(4)])
    group_poll(b, 5, [(0, 0, 0), (1, 0, 1), (10, 1, 0), (11, 1, 1)])
    group_poll(
        b,
        5,
        [*partition_0, (11, 1, 1), (12, 1, 2), (10, 1, 0)],
        [("revoke", [1]), ("assign", [1])],
    )
    return b


def _unmoved_goes_back(b: Builder) -> Builder:
    """Partition 0 does not move and goes back in the same poll: a real regression."""
    return _two_partitions(b, [(0, 0, 0), (2, 0, 2)])


case("unmoved partition went back")(_unmoved_goes_back)


@case("unmoved partition read on")
def _(b: Builder) -> None:
    _two_partitions(b, [(2, 0, 2), (3, 0, 3)])
    group_poll(b, 5, [(13, 1, 3)])


def test_rebalance_exempts_only_the_partitions_it_moved(judged: dict[str, Judged]) -> None:
    """The checks' own rows (the batch collects every check's rows as run_checks does)."""
    j = judged["unmoved partition went back"]
    back = j.examples("nonmonotonic-poll")
    assert [(r["partition"], r["prev_offset"], r["offset"]) for r in back] == [(0, 1, 0)]
    assert j.examples("int-nonmonotonic-poll") == []


def test_regression_on_an_unmoved_partition_is_still_caught(judged: dict[str, Judged]) -> None:
    """With the partitions read from the history's rebalance lines: only partition 1
    moved, so partition 0 going back in that poll is judged."""
    j = judged["unmoved partition went back"]
    assert j.count("nonmonotonic-poll") == 1, j.seen()
    ex = j.examples("nonmonotonic-poll")[0]
    assert (ex["partition"], ex["prev_offset"], ex["offset"]) == (0, 1, 0)
    # Partition 1 went back inside the poll during which it moved: not judged.
    assert j.count("int-nonmonotonic-poll") == 0, j.seen()


def test_unmoved_partition_reading_on_is_clean(judged: dict[str, Judged]) -> None:
    """The twin of the above: partition 0 reads on, partition 1 is re-delivered in
    the poll during which it moved."""
    assert judged["unmoved partition read on"].seen() == {}


def test_rebalance_partitions_from_the_columnar_rows(spark, tmp_path: Path) -> None:
    """A large history is loaded from the flat rows of its Parquet cache: the
    rebalance partitions are the same as from the JSON lines. Judged alone: it is
    about loading a whole history."""
    run = _unmoved_goes_back(Builder(tmp_path)).done()
    path = str(run / "history.jsonl")
    pq = (tmp_path / "rows.parquet").as_uri()
    flatten(read_json(spark, path)).write.parquet(pq)
    from_json = AnalysisFrames(load(spark, path))
    from_parquet = AnalysisFrames(
        load(spark, path, spark.read.schema(FLAT_SCHEMA).parquet(pq), columnar=True)
    )
    try:
        want = sorted(map(tuple, from_json.rebalances.collect()))
        got = sorted(map(tuple, from_parquet.rebalances.collect()))
        (kernel,) = tagged_checks(from_parquet, ["nonmonotonic-poll"])
        back = [json.loads(r["detail"]) for r in kernel.collect()]
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


def _skip_over_drain_known(b: Builder) -> Builder:
    _info_send_read_by_drain(b)
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(2, 0, 2)])
    b.drain(9, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], at_end={0: 3})
    return b


case("skip over an offset the drain read")(_skip_over_drain_known)


def test_skip_over_offset_known_from_the_drain_is_poll_skip(judged: dict[str, Judged]) -> None:
    j = judged["skip over an offset the drain read"]
    assert j.seen() == {"poll-skip": 1}
    ex = j.examples("poll-skip")[0]
    assert (ex["prev_offset"], ex["offset"], ex["skipped_values"]) == (0, 2, [j.case.v(1)])


def test_the_second_opinions_sorted_join_finds_the_same_skip(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query the kernel replaced (tests/query_checks.py) lists a gap's offsets as a
    broadcast join's side up to a bound and sorts beyond it: with no broadcast it still
    finds the skip the kernel finds, so it stays a second opinion on both paths."""
    monkeypatch.setattr(query_checks, "_BROADCAST_ROWS", 0)
    path = _skip_over_drain_known(Builder(tmp_path)).done()
    fr = AnalysisFrames(load(spark, str(path / "history.jsonl")))
    try:
        rows = [r.asDict() for r in QUERIES["poll-skip"](fr).collect()]
        assert QUERIES["int-poll-skip"](fr).count() == 0
    finally:
        fr.release()
    assert [(r["prev_offset"], r["offset"], r["skipped_values"]) for r in rows] == [(0, 2, [1])]
    assert anomalies(path)["poll-skip"].count == 1


@case("skip within an op over an offset the drain read")
def _(b: Builder) -> None:
    _info_send_read_by_drain(b)
    group_poll(b, 5, [(0, 0, 0), (2, 0, 2)])
    b.drain(9, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], at_end={0: 3})


@case("consumer read the info send")
def _(b: Builder) -> None:
    _info_send_read_by_drain(b)
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(1, 0, 1), (2, 0, 2)])
    b.drain(9, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], at_end={0: 3})


def test_skip_within_op_over_offset_known_from_the_drain(judged: dict[str, Judged]) -> None:
    j = judged["skip within an op over an offset the drain read"]
    assert j.seen() == {"int-poll-skip": 1}
    assert j.examples("int-poll-skip")[0]["skipped_values"] == [j.case.v(1)]


def test_consumer_reading_the_info_send_does_not_skip(judged: dict[str, Judged]) -> None:
    assert judged["consumer read the info send"].seen() == {}


@case("gap over a commit marker")
def _(b: Builder) -> None:
    b.txn(0, [(0, 0, 0)], "ok")  # its commit marker takes offset 1
    b.sends(0, [(2, 0, 2, "ok")])
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(2, 0, 2)])
    group_poll(b, 6, [(0, 0, 0), (2, 0, 2)])
    b.drain(9, [(0, 0, 0), (2, 0, 2)], at_end={0: 3})


def test_gap_over_a_position_nobody_knows_is_no_skip(judged: dict[str, Judged]) -> None:
    """Offset 1 is a transaction's commit marker: no write was acknowledged there and
    no read returned it, so jumping over it is what a consumer must do."""
    assert judged["gap over a commit marker"].seen() == {}


@case("skip over an undecodable record")
def _(b: Builder) -> None:
    b.sends(0, [(0, 0, 0, "ok")])
    b.sends(0, [(2, 0, 2, "ok")])
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(2, 0, 2)])
    b.drain(9, [(0, 0, 0), (None, 0, 1), (2, 0, 2)], at_end={0: 3})


def test_skip_over_an_undecodable_record_the_drain_read(judged: dict[str, Judged]) -> None:
    """Offset 1 holds a record whose value did not decode: no value is known there,
    its position is."""
    j = judged["skip over an undecodable record"]
    assert j.count("poll-skip") == 1, j.seen()
    ex = j.examples("poll-skip")[0]
    assert (ex["skipped_offsets"], ex["skipped_values"]) == ([1], [])


def _txn_read_offset_1(b: Builder, read_by_txn: bool) -> None:
    _info_send_read_by_drain(b)
    if read_by_txn:
        b.txn(1, [(3, 1, 0)], "ok", polled=[(1, 0, 1)])
    group_poll(b, 5, [(0, 0, 0), (2, 0, 2)])


case("offset 1 read by a txn")(lambda b: _txn_read_offset_1(b, read_by_txn=True))
case("offset 1 read by nobody")(lambda b: _txn_read_offset_1(b, read_by_txn=False))


def test_skip_over_an_offset_a_transaction_read(judged: dict[str, Judged]) -> None:
    """Offset 1 is known only from an ok transaction's poll; the consumer's one poll
    jumped over it. Its twin: the same without that transaction read."""
    j = judged["offset 1 read by a txn"]
    assert j.count("int-poll-skip") == 1, j.seen()
    ex = j.examples("int-poll-skip")[0]
    assert (ex["skipped_offsets"], ex["skipped_values"]) == ([1], [j.case.v(1)])
    assert judged["offset 1 read by nobody"].seen() == {}


def _wide_gap(b: Builder, drain_read_5: bool) -> None:
    b.sends(0, [(0, 0, 0, "ok"), (1, 0, 20_001, "ok")])
    group_poll(b, 5, [(0, 0, 0)])
    group_poll(b, 5, [(1, 0, 20_001)])
    group_poll(b, 6, [(0, 0, 0), (1, 0, 20_001)])
    b.drain(9, [(7, 0, 5)] if drain_read_5 else [(0, 0, 0)])


case("wide gap over offset 5, drained")(lambda b: _wide_gap(b, drain_read_5=True))
case("wide gap over offsets nobody knows")(lambda b: _wide_gap(b, drain_read_5=False))


def test_wide_gap_over_a_known_offset_is_a_skip(judged: dict[str, Judged]) -> None:
    """A jump wider than the offsets listed one by one still finds the known offset
    it skipped (offset 5, from the drain's read); the twin, where nobody read offset
    5, makes the same jump over offsets nobody knows: no skip."""
    j = judged["wide gap over offset 5, drained"]
    assert (j.count("poll-skip"), j.count("int-poll-skip")) == (1, 1), j.seen()
    ex = j.examples("poll-skip")[0]
    assert (ex["process"], ex["skipped_offsets"], ex["skipped_values"]) == (
        j.case.p(5),
        [5],
        [j.case.v(7)],
    )
    assert judged["wide gap over offsets nobody knows"].seen() == {}


def _aborted_or_committed_between(b: Builder, outcome: str) -> None:
    b.sends(0, [(0, 0, 0, "ok")])
    b.txn(1, [(1, 0, 1)], outcome)
    b.sends(0, [(2, 0, 3, "ok")])  # offset 2 is the transaction's marker
    b.poll(5, [(0, 0, 0), (1, 0, 1), (2, 0, 3)])  # read_uncommitted
    b.drain(9, [(0, 0, 0), (2, 0, 3)], at_end={0: 4})


case("drain jumped over an aborted record")(lambda b: _aborted_or_committed_between(b, "fail"))
case("drain jumped over a committed record")(lambda b: _aborted_or_committed_between(b, "ok"))


def test_read_committed_drain_jumping_over_an_aborted_record_is_no_skip(
    judged: dict[str, Judged],
) -> None:
    """A read_uncommitted consumer returned the aborted value 1 at offset 1; the
    read_committed drain rightly jumped over it (found by a real C10 run). Its twin:
    the same record from a transaction that committed is a skip."""
    assert judged["drain jumped over an aborted record"].seen() == {"aborted-read": 1}
    j = judged["drain jumped over a committed record"]
    assert j.count("int-poll-skip") == 1 and j.count("aborted-read") == 0, j.seen()
    ex = j.examples("int-poll-skip")[0]
    assert (ex["skipped_offsets"], ex["skipped_values"]) == ([1], [j.case.v(1)])
