"""The transaction and consumer checks: each anomaly planted, and a clean twin.

The cases whose answer is an anomaly's rows are judged together, in one history
(tests/batched.py); a clean twin there has no row of any check. The verdict of a
planted anomaly is judged alone, at the end."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.spark_analysis.job import analyze

from tests.batched import Cases, Judged, judged_fixture
from tests.histories import Builder

CASES = Cases()
case = CASES.add


judged = judged_fixture(CASES, "txn-polls")


# --- sends out of order -----------------------------------------------------------------


@case("one op's sends landed out of order")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 5, "ok"), (2, 0, 3, "ok")])  # one op: 2 landed before 1
    b.poll(9, [(2, 0, 3), (1, 0, 5)])


@case("two ops' sends landed out of order")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 5, "ok")])
    b.sends(0, [(2, 0, 3, "ok")])
    b.poll(9, [(2, 0, 3), (1, 0, 5)])


def test_int_nonmonotonic_send(judged: dict[str, Judged]) -> None:
    j = judged["one op's sends landed out of order"]
    # The within-process form, reorder, sees it too.
    assert j.seen() == {"int-nonmonotonic-send": 1, "reorder": 1}


def test_across_ops_is_reorder_not_int_nonmonotonic(judged: dict[str, Judged]) -> None:
    j = judged["two ops' sends landed out of order"]
    assert j.seen() == {"reorder": 1}


# --- transactions -----------------------------------------------------------------------


@case("whole txn visible")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0), (2, 1, 0), (3, 2, 0)], "ok")
    b.poll(9, [(1, 0, 0), (2, 1, 0), (3, 2, 0)])


def test_whole_txn_visible_is_not_torn(judged: dict[str, Judged]) -> None:
    assert judged["whole txn visible"].seen() == {}


@case("aborted txn read")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "fail")
    b.txn(0, [(3, 0, 2), (4, 1, 2)], "ok")
    b.poll(9, [(1, 0, 0), (3, 0, 2), (4, 1, 2)])  # read_uncommitted saw aborted 1


def test_aborted_txn_read_is_aborted_read_not_torn(judged: dict[str, Judged]) -> None:
    j = judged["aborted txn read"]
    assert j.seen() == {"aborted-read": 1}


# --- consumer positions across ops ------------------------------------------------------


@case("consumer went back")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1)])
    b.poll(9, [(2, 0, 1)])  # the same consumer went back, in a later op


@case("new consumer started over")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1)])
    b.poll(10, [(1, 0, 0), (2, 0, 1)])


def test_nonmonotonic_poll(judged: dict[str, Judged]) -> None:
    j = judged["consumer went back"]
    assert j.seen() == {"nonmonotonic-poll": 1}


def test_new_consumer_process_may_start_over(judged: dict[str, Judged]) -> None:
    assert judged["new consumer started over"].seen() == {}


@case("poll skipped across ops")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(9, [(1, 0, 0)])
    b.poll(9, [(3, 0, 2)])  # jumped over acknowledged offset 1
    b.poll(10, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])


def test_poll_skip(judged: dict[str, Judged]) -> None:
    j = judged["poll skipped across ops"]
    assert j.seen() == {"poll-skip": 1}
    assert j.examples("poll-skip")[0]["skipped_values"] == [j.case.v(2)]


@case("gap over a txn marker")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "ok")  # offset 1 is the commit marker
    b.txn(0, [(2, 0, 2)], "ok")
    b.poll(9, [(1, 0, 0), (2, 0, 2)])


def test_gap_over_a_transaction_marker_is_not_a_skip(judged: dict[str, Judged]) -> None:
    assert judged["gap over a txn marker"].seen() == {}


# --- consumer positions within one op ---------------------------------------------------


@case("one poll went back")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 0, 1), (1, 0, 0)])  # one poll went back to offset 0


def test_int_nonmonotonic_poll(judged: dict[str, Judged]) -> None:
    j = judged["one poll went back"]
    assert j.seen() == {"int-nonmonotonic-poll": 1}
    ex = j.examples("int-nonmonotonic-poll")[0]
    assert (ex["prev_offset"], ex["offset"]) == (1, 0)


@case("partitions interleaved in one poll")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok"), (3, 0, 1, "ok"), (4, 1, 1, "ok")])
    b.poll(9, [(1, 0, 0), (2, 1, 0), (3, 0, 1), (4, 1, 1)])


def test_interleaved_partitions_in_one_poll_are_monotonic(judged: dict[str, Judged]) -> None:
    assert judged["partitions interleaved in one poll"].seen() == {}


def _three_acked(b: Builder, first_poll: list[tuple[int, int, int]]) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(9, first_poll)


@case("one poll skipped")
def _(b: Builder) -> None:
    _three_acked(b, [(1, 0, 0), (3, 0, 2)])  # one poll jumped over acknowledged offset 1
    b.poll(10, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])


case("one poll without gaps")(lambda b: _three_acked(b, [(1, 0, 0), (2, 0, 1), (3, 0, 2)]))


def test_int_poll_skip(judged: dict[str, Judged]) -> None:
    j = judged["one poll skipped"]
    assert j.seen() == {"int-poll-skip": 1}
    assert j.examples("int-poll-skip")[0]["skipped_values"] == [j.case.v(2)]


def test_one_poll_without_gaps_is_not_an_int_skip(judged: dict[str, Judged]) -> None:
    assert judged["one poll without gaps"].seen() == {}


# --- reads inside transactions ----------------------------------------------------------


@case("txn read its own uncommitted value")
def _(b: Builder) -> None:
    # The transaction polled its own partition and saw its own, uncommitted value 1.
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "ok", polled=[(1, 0, 0)])
    b.poll(9, [(1, 0, 0), (2, 1, 0)])


def test_precommitted_read(judged: dict[str, Judged]) -> None:
    j = judged["txn read its own uncommitted value"]
    assert j.seen() == {"precommitted-read": 1}
    assert j.examples("precommitted-read")[0]["value"] == j.case.v(1)


@case("precommitted reads in aborted and unknown txns")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "fail", polled=[(1, 0, 0), (2, 1, 0)])
    b.txn(1, [(3, 0, 2)], "info", polled=[(3, 0, 2)])


def test_precommitted_read_counts_in_aborted_and_unknown_txns(
    judged: dict[str, Judged],
) -> None:
    j = judged["precommitted reads in aborted and unknown txns"]
    assert j.seen() == {"precommitted-read": 3}


@case("txn read a committed value")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "ok")  # offset 1 is the commit marker
    b.txn(0, [(2, 0, 2)], "ok", polled=[(1, 0, 0)])  # read the earlier, committed one
    b.poll(9, [(1, 0, 0), (2, 0, 2)])


def test_txn_reading_committed_values_is_not_precommitted(judged: dict[str, Judged]) -> None:
    assert judged["txn read a committed value"].seen() == {}


@case("ok and aborted txns' polls")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok")])
    b.txn(1, [(3, 2, 0)], "ok", polled=[(1, 0, 0)])  # ok: 1 was read
    b.txn(1, [(4, 2, 2)], "fail", polled=[(2, 1, 0)])  # aborted: 2 was not


def test_txn_poll_counts_as_a_read_only_when_the_txn_is_ok(judged: dict[str, Judged]) -> None:
    j = judged["ok and aborted txns' polls"]
    # 2, and 3, which nothing read; no lost-write, no precommitted-read.
    assert j.seen() == {"unseen": 2}


# --- vanished reads ---------------------------------------------------------------------


def _three_read(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])


@case("read, then gone from the drain")
def _(b: Builder) -> None:
    _three_read(b)
    b.drain(9, [(1, 0, 0), (3, 0, 2)])  # 2 was read during the run, and then gone


@case("drain read everything")
def _(b: Builder) -> None:
    _three_read(b)
    b.drain(9, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])


@case("drain stopped short")
def _(b: Builder) -> None:
    _three_read(b)
    b.drain(9, [(1, 0, 0)])  # never reached offsets 1 and 2


@case("no drain")
def _(b: Builder) -> None:
    _three_read(b)
    b.poll(9, [(1, 0, 0), (3, 0, 2)])  # not marked as the drain's


def test_vanished_read(judged: dict[str, Judged]) -> None:
    j = judged["read, then gone from the drain"]
    assert j.count("vanished-read") == 1, j.seen()
    ex = j.examples("vanished-read")[0]
    assert (ex["value"], ex["offset"], ex["drain_max_offset"], ex["processes"]) == (
        j.case.v(2),
        1,
        2,
        [j.case.p(5)],
    )
    assert j.count("lost-write") == 0, j.seen()  # it was read, so it is not lost


def test_drain_reading_everything_leaves_nothing_vanished(judged: dict[str, Judged]) -> None:
    assert judged["drain read everything"].seen() == {}


def test_drain_stopping_short_is_not_vanished(judged: dict[str, Judged]) -> None:
    assert judged["drain stopped short"].seen() == {}


def test_no_drain_reads_no_vanished_read(judged: dict[str, Judged]) -> None:
    """The vanished-read check looks at the drain's reads of this case's partition
    only; other cases' drains (the batch's) read other topics."""
    j = judged["no drain"]
    assert j.count("vanished-read") == 0, j.seen()


@case("aborted txn hidden from the drain")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "fail")
    b.txn(0, [(2, 0, 2)], "ok")
    b.poll(5, [(1, 0, 0), (2, 0, 2)])  # read_uncommitted saw the aborted 1
    b.drain(9, [(2, 0, 2)])  # read_committed does not


def test_aborted_txn_hidden_from_the_drain_is_not_vanished(judged: dict[str, Judged]) -> None:
    j = judged["aborted txn hidden from the drain"]
    assert j.seen() == {"aborted-read": 1}


@case("txn polls seeking to their own sends")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    # txn_poll seeks to its own sends: it jumps over offsets 1 and 2, then back to 0.
    b.txn(1, [(4, 0, 3)], "ok", polled=[(1, 0, 0), (4, 0, 3)])
    b.txn(1, [(5, 0, 4)], "ok", polled=[(1, 0, 0), (5, 0, 4)])
    b.poll(9, [(1, 0, 0), (2, 0, 1), (3, 0, 2), (4, 0, 3), (5, 0, 4)])


def test_a_transactions_own_reads_make_no_position_promise(judged: dict[str, Judged]) -> None:
    j = judged["txn polls seeking to their own sends"]
    # No poll-skip, int-poll-skip or nonmonotonic-poll.
    assert j.seen() == {"precommitted-read": 2}


# --- judged alone: the verdict ----------------------------------------------------------


def test_torn_txn(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.txn(0, [(1, 0, 0), (2, 1, 0), (3, 2, 0)], "ok")
    b.poll(9, [(1, 0, 0), (2, 1, 0)])
    # The drain read every partition to its end (offset 1 is each one's commit marker).
    b.drain(8, [(1, 0, 0), (2, 1, 0)], at_end={0: 2, 1: 2, 2: 2})
    res = analyze(b.done())
    assert res.anomalies["torn-txn"].count == 1
    assert res.anomalies["torn-txn"].examples[0]["missing"] == [3]
    assert res.valid is False
