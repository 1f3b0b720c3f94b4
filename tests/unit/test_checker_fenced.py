"""fenced-write: a fenced producer session's transaction, invoked after the takeover
of its transactional.id completed, observed committed. Each plant has clean twins that
differ in one thing (invoked before the fence, not read, another session, a takeover
that did not take, a value another op also sent). The cases are judged together, in one
history (tests/batched.py); the verdict is judged alone, at the end."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.spark_analysis.job import analyze

from tests.batched import Cases, Judged, judged_fixture
from tests.histories import Builder

CASES = Cases()
case = CASES.add

judged = judged_fixture(CASES, "fenced")


def _committed_before(b: Builder) -> None:
    """Client 1 commits 1, then its transactional.id is taken over."""
    b.txn(0, [(1, 0, 0)], "ok", client=1)
    b.hijack(1)


# --- planted ----------------------------------------------------------------------------


@case("fenced txn read by the drain")
def _(b: Builder) -> None:
    _committed_before(b)
    # Its commit's outcome unknown (_FENCED is info), yet the drain reads 2 committed.
    b.txn(0, [(2, 0, 1)], "info", client=1)
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("fenced txn committed")
def _(b: Builder) -> None:
    _committed_before(b)
    b.txn(0, [(2, 0, 1)], "ok", client=1)  # commit_transaction returned
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("fenced txn aborted and read by the drain")
def _(b: Builder) -> None:
    _committed_before(b)
    b.txn(0, [(2, 0, 1)], "fail", client=1)
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("fenced txn never completed, read by the drain")
def _(b: Builder) -> None:
    _committed_before(b)
    b.txn(0, [(2, 0, None)], "invoke", client=1)  # never completed
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


def test_a_fenced_txn_read_by_the_drain_is_a_fenced_write(judged: dict[str, Judged]) -> None:
    j = judged["fenced txn read by the drain"]
    assert j.seen() == {"fenced-write": 1}
    [row] = j.examples("fenced-write")
    assert row["value"] == j.case.v(2) and row["reason"] == "drain read"
    client = int(j.case.p(1))  # client 1 of this case, as the history holds it
    assert row["client"] == client and row["transactional_id"] == "kt-r-0"
    assert row["invoked_at"] > row["fence_time"]
    said = ANOMALIES["fenced-write"].explain(row) or ""
    assert f"Client {client} was fenced when the takeover of kt-r-0 completed" in said


def test_a_fenced_txn_that_committed_is_a_fenced_write(judged: dict[str, Judged]) -> None:
    j = judged["fenced txn committed"]
    assert j.seen() == {"fenced-write": 1}
    assert [r["reason"] for r in j.examples("fenced-write")] == ["committed"]


def test_an_aborted_fenced_txn_read_committed_is_both(judged: dict[str, Judged]) -> None:
    assert judged["fenced txn aborted and read by the drain"].seen() == {
        "aborted-read": 1,
        "fenced-write": 1,
    }


def test_an_open_fenced_txn_read_by_the_drain_is_a_fenced_write(
    judged: dict[str, Judged],
) -> None:
    assert judged["fenced txn never completed, read by the drain"].seen() == {"fenced-write": 1}


# --- clean twins ------------------------------------------------------------------------


@case("txn before the fence")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "ok", client=1)
    b.txn(0, [(2, 0, 1)], "info", client=1)
    b.hijack(1)
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("txn invoked before the fence, completed after it")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "ok", client=1)
    micro = {"op": "send", "topic": "t", "partition": 0, "value": 2, "client": 1, "seq": 1}
    b.h.invoke(0, "txn", [micro])
    b.hijack(1)
    b.h.complete("info", 0, "txn", [{**micro, "offset": 1, "outcome": "info"}], "_FENCED")
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("fenced txn not read")
def _(b: Builder) -> None:
    _committed_before(b)
    b.txn(0, [(2, 0, 1)], "info", client=1)
    b.drain(9, [(1, 0, 0)], at_end={0: 3})  # 1 holds the abort's marker, 2 its own


@case("another session after the fence")
def _(b: Builder) -> None:
    _committed_before(b)
    b.txn(1, [(2, 0, 1)], "ok", client=2)  # the new producer under the same id
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("a takeover that did not take")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "ok", client=1)
    b.hijack(None, "info")
    b.txn(0, [(2, 0, 1)], "ok", client=1)
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("a takeover that names no session")
def _(b: Builder) -> None:
    b.txn(0, [(1, 0, 0)], "ok", client=1)
    b.hijack(None)  # as completions were written before they named it
    b.txn(0, [(2, 0, 1)], "ok", client=1)
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


@case("a fenced copy whose value another session committed")
def _(b: Builder) -> None:
    _committed_before(b)
    # The fenced copier's output -3 and a new session's retry of the same input: the
    # drain's -3 may be the retry's.
    b.txn(0, [(-3, 0, None)], "info", client=1)
    b.txn(1, [(-3, 0, 1)], "ok", client=2)
    b.drain(9, [(1, 0, 0), (-3, 0, 1)], at_end={0: 2})


def test_clean_twins_flag_nothing(judged: dict[str, Judged]) -> None:
    for name in (
        "txn before the fence",
        "txn invoked before the fence, completed after it",
        "fenced txn not read",
        "another session after the fence",
        "a takeover that did not take",
        "a takeover that names no session",
        "a fenced copy whose value another session committed",
    ):
        assert judged[name].seen() == {}, name


# --- judged alone: the verdict ----------------------------------------------------------


def test_a_fenced_write_is_forbidden_by_default(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    _committed_before(b)
    b.txn(0, [(2, 0, 1)], "info", client=1)
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})
    res = analyze(b.done())
    assert res.anomalies["fenced-write"].count == 1
    assert res.valid is False
