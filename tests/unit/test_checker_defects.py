"""Wrong answers found by feeding the checker planted histories (issue 9), each with a
clean twin that must stay silent.

The cases whose answer is an anomaly's rows are judged together, in one history
(tests/batched.py); a clean twin there has no row of any check. The cases whose
answer only the verdict gives (unknown, nothing tested, the drain never ran, the
run's settings) are judged alone."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.checkers.results import Results
from kafka_trial.spark_analysis.job import analyze

from tests.batched import Cases, Judged, judged_fixture
from tests.histories import Builder

CASES = Cases()
case = CASES.add


judged = judged_fixture(CASES, "defects")


def count(res: Results, name: str) -> int | None:
    return res.anomalies[name].count


# --- aborted-read: only a value none of whose sends could have committed -------------


@case("only send failed, read")
def _(b: Builder) -> None:
    b.txn(0, [(5, 0, 0)], "fail")
    b.poll(1, [(5, 0, 0)])


def test_a_read_of_a_value_whose_only_send_failed_is_an_aborted_read(
    judged: dict[str, Judged],
) -> None:
    j = judged["only send failed, read"]
    assert j.count("aborted-read") == 1, j.seen()


@case("aborted, resent and committed")
def _(b: Builder) -> None:
    b.txn(0, [(5, 0, 0)], "fail")
    b.txn(1, [(5, 0, 1)], "ok")
    b.poll(2, [(5, 0, 1)])


def test_a_value_resent_and_committed_after_an_abort_is_not_an_aborted_read(
    judged: dict[str, Judged],
) -> None:
    """The copier re-copies after an aborted transaction: the same output value is
    sent twice, and the second send commits."""
    assert judged["aborted, resent and committed"].seen() == {}


@case("info send, resent and failed")
def _(b: Builder) -> None:
    b.sends(0, [(7, 0, None, "info")])
    b.sends(1, [(7, 0, None, "fail")])  # the application's resend (claim C9)
    b.poll(2, [(7, 0, 0)])


def test_a_value_whose_info_send_was_resent_and_failed_is_not_an_aborted_read(
    judged: dict[str, Judged],
) -> None:
    assert judged["info send, resent and failed"].seen() == {}


# --- lost-write: the drain reached the end, so a missing tail is lost, not unseen -----


def _three_sends_drained(b: Builder, drained: list[tuple[int, int, int]], end: int) -> None:
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok"), (12, 0, 2, "ok")])
    b.drain(1, drained, at_end={0: end})


# After the heal the log ends at offset 1: 11 and 12 were truncated away.
case("tail truncated")(lambda b: _three_sends_drained(b, [(10, 0, 0)], end=1))
case("everything drained")(
    lambda b: _three_sends_drained(b, [(10, 0, 0), (11, 0, 1), (12, 0, 2)], end=3)
)


def test_acknowledged_values_beyond_the_drains_end_are_lost_as_truncated(
    judged: dict[str, Judged],
) -> None:
    j = judged["tail truncated"]
    assert j.seen() == {"lost-write": 2}
    reasons = {e["value"]: e["reason"] for e in j.examples("lost-write")}
    assert reasons == {j.case.v(11): "truncated", j.case.v(12): "truncated"}


def test_a_drain_that_read_everything_finds_nothing_lost(judged: dict[str, Judged]) -> None:
    """Valid when judged alone: drained, and no anomaly at all."""
    assert judged["everything drained"].seen() == {}


@case("drain gave up before the end")
def _(b: Builder) -> None:
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok")])
    b.drain(1, [(10, 0, 0)])  # the drain gave up before the end: maybe late


def test_without_the_drains_end_a_missing_tail_stays_unseen(judged: dict[str, Judged]) -> None:
    assert judged["drain gave up before the end"].seen() == {"unseen": 1}


# --- judged alone from here on: what only the verdict says --------------------------
# --- nothing tested is not a pass ----------------------------------------------------


def test_an_empty_history_is_unknown(spark, tmp_path: Path) -> None:
    res = analyze(Builder(tmp_path).done())
    assert res.valid == "unknown"
    assert any("no client operations" in p for p in res.problems)


def test_a_history_with_only_nemesis_ops_is_unknown(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.nemesis("kill", {"brokers": [1]})
    res = analyze(b.done())
    assert res.valid == "unknown"


def test_one_acknowledged_and_read_send_is_enough_to_judge(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok")])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    assert analyze(b.done()).valid is True


# --- a run cut off before its final drain ------------------------------------------------


def test_without_a_drain_values_nobody_read_make_the_verdict_unknown(spark, tmp_path: Path) -> None:
    """kill -9 during the fault phase: sends acknowledged, nothing read, no drain."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok")])
    b.nemesis("kill", {"brokers": [2]})
    res = analyze(b.done())
    assert count(res, "unseen") == 2
    assert res.valid == "unknown" and res.forbidden_seen == ()
    assert res.anomalies["unseen"].undecided == "the final drain never ran"
    assert any("final drain never ran" in p for p in res.problems)


def test_a_drain_that_never_reached_a_partition_leaves_its_values_undecided(
    spark, tmp_path: Path
) -> None:
    """Issue 25: the drain returned nothing of partition 1 (its broker, or the Docker
    engine, was gone), which proves nothing about 2: unknown, naming the partition
    and why, where this was INVALID with `unseen` forbidden."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok")])
    b.drain(1, [(1, 0, 0)])  # read partition 0, never got partition 1 to its end
    res = analyze(b.done())
    assert count(res, "unseen") == 1
    assert res.valid == "unknown" and res.forbidden_seen == ()
    why = res.anomalies["unseen"].undecided
    assert why == "the final drain did not finish t/1 (no record returned)", why
    assert any("t/1 (no record returned)" in p for p in res.problems), res.problems


def test_without_a_drain_a_proven_loss_is_still_invalid(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 1, 0, "ok")])
    b.poll(1, [(2, 0, 1)])  # a consumer read past offset 0: 1 is lost whatever follows
    res = analyze(b.done())
    assert res.valid is False and "lost-write" in res.forbidden_seen


# --- one session, many analyses: no stale answers ----------------------------------


def test_a_history_that_grew_is_judged_anew_in_the_same_session(spark, tmp_path: Path) -> None:
    """`kafka-trial finish` appends a drain to a history already analyzed in this
    session; Spark must not answer from the data it cached for the same path."""
    from kafka_trial.contracts.history import HistoryWriter

    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    before = analyze(b.done())
    assert before.valid == "unknown" and count(before, "unseen") == 2
    h = HistoryWriter(tmp_path / "history.jsonl", resume=True)
    h.invoke(1, "poll", [{"op": "poll", "role": "drain"}])
    done = {"op": "poll", "role": "drain", "records": [
        {"topic": "t", "partition": 0, "offset": 0, "value": 1},
        {"topic": "t", "partition": 0, "offset": 1, "value": 2},
    ], "at_end": [{"topic": "t", "partition": 0, "offset": 2}]}  # fmt: skip
    h.complete("ok", 1, "poll", [done])
    h.close()
    after = analyze(tmp_path)
    assert count(after, "unseen") == 0
    assert after.valid is True, after.problems


def test_a_run_that_asked_for_faults_and_injected_none_is_unknown(spark, tmp_path: Path) -> None:
    """Issue 25: `run --duration 20` with seed 0 scheduled no fault and passed. The
    history is clean, but it never met the faults it was meant to survive."""

    def clean(run: Path, faults: tuple[str, ...], fault_op: str | None) -> Path:
        b = Builder(run, faults=faults)
        b.sends(0, [(1, 0, 0, "ok")])
        if fault_op is not None:
            b.nemesis(fault_op, {"target": "leader", "brokers": [1]})
            b.nemesis("start", {"brokers": [1]})
        b.drain(1, [(1, 0, 0)], at_end={0: 1})
        return b.done()

    res = analyze(clean(tmp_path / "none", ("kill-leader",), None))
    assert res.valid == "unknown" and res.stats.faults_injected == 0
    assert any(
        p.startswith("no fault was injected: the run asked for kill-leader") for p in res.problems
    )
    # Twins: the fault took effect (a heal alone is no fault), or none was asked for.
    hit = analyze(clean(tmp_path / "hit", ("kill-leader",), "kill"))
    assert hit.valid is True and hit.stats.faults_injected == 1 and hit.problems == ()
    asked_none = analyze(clean(tmp_path / "asked-none", (), None))
    assert asked_none.valid is True and asked_none.problems == ()
