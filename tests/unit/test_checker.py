"""The Spark checker on hand-made histories: each anomaly planted, and clean twins.

The cases whose answer is an anomaly's rows are judged together, in one history
(tests/batched.py); a clean twin there has no row of any check. The cases whose
answer is the verdict, the stats or the history's health, or that depend on the
run's settings, are judged alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.checkers.anomalies import DEFAULT_ALLOWED
from kafka_trial.checkers.results import Results
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read import history_frames

from tests.batched import Cases, Judged, judged_fixture
from tests.histories import Builder
from tests.results import ran

CASES = Cases()
case = CASES.add


judged = judged_fixture(CASES, "checker")


def counts(res: Results) -> dict[str, int | None]:
    return ran(res)


def forbidden(j: Judged) -> list[str]:
    """What the case's anomalies would put in `forbidden_seen` (nothing allowed)."""
    return sorted(k for k in j.seen() if k not in DEFAULT_ALLOWED)


def clean(tmp: Path) -> Builder:
    b = Builder(tmp)
    b.sends(0, [(0, 0, 0, "ok"), (1, 1, 0, "ok"), (2, 0, 1, "ok")])
    b.sends(1, [(3, 1, 1, "ok")])
    b.nemesis("kill", {"brokers": [1]})
    b.poll(2, [(0, 0, 0), (2, 0, 1), (1, 1, 0), (3, 1, 1)])
    b.drain(9, [(0, 0, 0), (2, 0, 1), (1, 1, 0), (3, 1, 1)], at_end={0: 2, 1: 2})
    return b


def test_clean_history_is_valid(spark, tmp_path: Path) -> None:
    res = analyze(clean(tmp_path).done())
    assert res.valid is True
    assert all(c == 0 for c in counts(res).values()), counts(res)
    assert res.stats.sends_attempted == 4
    assert res.stats.records_read == 8  # the consumer's four and the drain's
    assert res.stats.nemesis_ops == 1
    assert (tmp_path / "results.json").exists()


def test_lost_write(spark, tmp_path: Path) -> None:
    """Judged alone: the module's verdict of a planted anomaly (no drain, yet a proven
    loss makes it invalid, not unknown)."""
    b = Builder(tmp_path)
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok"), (12, 0, 2, "ok")])
    # 11 was acknowledged at offset 1; reads reach offset 2 but never see 11.
    b.poll(1, [(10, 0, 0), (12, 0, 2)])
    res = analyze(b.done())
    c = counts(res)
    assert c["lost-write"] == 1
    assert res.anomalies["lost-write"].examples[0]["value"] == 11
    assert c["unseen"] == 0
    assert res.valid is False
    # The read jumped over the acknowledged offset 1 within one op: an int-poll-skip too.
    assert res.forbidden_seen == ("int-poll-skip", "lost-write")


@case("acks=0, missing from a partition read to its end")
def _(b: Builder) -> None:
    # acks=0: no offsets come back, so only reading the whole partition can tell.
    b.sends(0, [(10, 0, None, "ok"), (11, 0, None, "ok"), (12, 1, None, "ok")])
    b.drain(1, [(10, 0, 0)], at_end={0: 1})


def test_acks0_value_missing_from_a_partition_read_to_its_end_is_lost(
    judged: dict[str, Judged],
) -> None:
    j = judged["acks=0, missing from a partition read to its end"]
    assert j.count("lost-write") == 1, j.seen()
    assert j.examples("lost-write")[0]["value"] == j.case.v(11)
    # Partition 1 was never read to its end: 12 is only unseen.
    assert j.count("unseen") == 1, j.seen()


@case("acks=0, all read")
def _(b: Builder) -> None:
    b.sends(0, [(10, 0, None, "ok"), (11, 0, None, "ok")])
    b.drain(1, [(10, 0, 0), (11, 0, 1)], at_end={0: 2})


def test_acks0_values_all_read_are_not_lost(judged: dict[str, Judged]) -> None:
    assert judged["acks=0, all read"].seen() == {}


@case("reads stop short")
def _(b: Builder) -> None:
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok")])
    b.poll(1, [(10, 0, 0)])


def test_unseen_when_reads_stop_short(judged: dict[str, Judged]) -> None:
    assert judged["reads stop short"].seen() == {"unseen": 1}


@case("acks=0, no offset, not read")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, None, "ok"), (2, 0, None, "ok")])
    b.poll(1, [(1, 0, 0)])


def test_acks0_value_without_offset_is_unseen_not_lost(judged: dict[str, Judged]) -> None:
    assert judged["acks=0, no offset, not read"].seen() == {"unseen": 1}


@case("duplicate")
def _(b: Builder) -> None:
    b.sends(0, [(5, 0, 0, "ok")])
    b.poll(1, [(5, 0, 0), (5, 0, 1)])


def test_duplicate(judged: dict[str, Judged]) -> None:
    assert judged["duplicate"].seen() == {"duplicate": 1}


def test_duplicate_allowed_keeps_run_valid(spark, tmp_path: Path) -> None:
    """Judged alone: what is allowed is the run's setting."""
    b = Builder(tmp_path, allowed=("duplicate",))
    b.sends(0, [(5, 0, 0, "ok")])
    b.poll(1, [(5, 0, 0), (5, 0, 1)])
    b.drain(2, [(5, 0, 0), (5, 0, 1)], at_end={0: 2})
    res = analyze(b.done())
    assert res.valid is True
    assert res.allowed_seen == ("duplicate",)


@case("inconsistent offsets")
def _(b: Builder) -> None:
    b.sends(0, [(7, 0, 3, "ok")])  # acknowledged at offset 3 ...
    b.sends(0, [(8, 0, 4, "ok")])
    b.poll(1, [(9, 0, 3), (8, 0, 4)])  # ... but offset 3 holds 9 when read
    b.sends(2, [(9, 0, 5, "info")])


def test_inconsistent_offsets(judged: dict[str, Judged]) -> None:
    j = judged["inconsistent offsets"]
    assert j.count("inconsistent-offsets") == 1, j.seen()
    assert j.count("lost-write") == 1, j.seen()  # 7 vanished below the read frontier


@case("unexpected")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok")])
    b.poll(1, [(1, 0, 0), (999, 0, 1)])


def test_unexpected(judged: dict[str, Judged]) -> None:
    j = judged["unexpected"]
    assert j.count("unexpected") == 1, j.seen()
    assert j.examples("unexpected")[0]["value"] == j.case.v(999)


@case("aborted read")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok")])
    b.sends(0, [(2, 0, None, "fail")])
    b.poll(1, [(1, 0, 0), (2, 0, 1)])


def test_aborted_read(judged: dict[str, Judged]) -> None:
    j = judged["aborted read"]
    assert j.count("aborted-read") == 1, j.seen()


@case("info send read")
def _(b: Builder) -> None:
    b.sends(0, [(2, 0, None, "info")])
    b.poll(1, [(2, 0, 0)])
    b.drain(3, [(2, 0, 0)], at_end={0: 1})


def test_info_send_read_is_not_aborted(judged: dict[str, Judged]) -> None:
    """Valid when judged alone: drained, and no anomaly at all."""
    assert judged["info send read"].seen() == {}


@case("reorder")
def _(b: Builder) -> None:
    # Invoked 1 then 2 then 3 in one process; 2 landed before 1.
    b.sends(0, [(1, 0, 1, "ok"), (2, 0, 0, "ok"), (3, 0, 2, "ok")])
    b.poll(1, [(2, 0, 0), (1, 0, 1), (3, 0, 2)])


def test_reorder(judged: dict[str, Judged]) -> None:
    j = judged["reorder"]
    assert j.count("reorder") == 1, j.seen()
    ex = j.examples("reorder")[0]
    assert (ex["prev_value"], ex["value"]) == (j.case.v(1), j.case.v(2))


@case("order across processes")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 1, "ok")])
    b.sends(1, [(2, 0, 0, "ok")])
    b.poll(2, [(2, 0, 0), (1, 0, 1)])


def test_order_across_processes_is_not_reorder(judged: dict[str, Judged]) -> None:
    # Without client ids nothing says the two sends went through one client.
    assert judged["order across processes"].seen() == {}


def _one_client_two_processes(b: Builder, kept: bool) -> None:
    """Processes 0 and 1 share client 7; `kept`: its second produce() (value 2) landed
    after its first (value 1), else below it."""
    b.sends(0, [(1, 0, 0 if kept else 1, "ok")], client=7)
    b.sends(1, [(2, 0, 1 if kept else 0, "ok")], client=7)
    b.sends(2, [(3, 1, 0, "ok")], client=8)
    drained = [(1, 0, 0), (2, 0, 1)] if kept else [(2, 0, 0), (1, 0, 1)]
    b.drain(9, [*drained, (3, 1, 0)], at_end={0: 2, 1: 1})


case("client order broken")(lambda b: _one_client_two_processes(b, kept=False))
case("client order kept")(lambda b: _one_client_two_processes(b, kept=True))


def test_client_reorder_across_the_processes_of_one_client(judged: dict[str, Judged]) -> None:
    """Claim C7 with pipelined clients: two processes share client 7, whose second
    produce() (value 2) landed below its first (value 1). Invalid: client-reorder is
    forbidden, and nothing else was found."""
    j = judged["client order broken"]
    assert j.seen() == {"client-reorder": 1}
    ex = j.examples("client-reorder")[0]
    assert (str(ex["client"]), ex["prev_value"], ex["value"]) == (
        j.case.p(7),
        j.case.v(1),
        j.case.v(2),
    )
    assert forbidden(j) == ["client-reorder"]


def test_client_order_kept_is_no_client_reorder(judged: dict[str, Judged]) -> None:
    """The clean twin: the same clients and sends, each landing after the one before
    (valid when judged alone: drained, and no anomaly at all)."""
    assert judged["client order kept"].seen() == {}


# --- judged alone: the history's health, the run's settings, errors ------------------


# Open invokes are listed by index up to a bound and joined beyond it: both ways.
@pytest.mark.parametrize("listed", [10_000, 0])
def test_truncated_history_is_analysed(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed: int
) -> None:
    monkeypatch.setattr(history_frames, "_OPEN_LISTED", listed)
    b = clean(tmp_path)
    b.h.invoke(5, "send", [{"op": "send", "topic": "t", "partition": 0, "value": 77}])
    run = b.done()
    with (run / "history.jsonl").open("a") as fh:
        fh.write('{"index": 99, "time": 1, "type": "ok", "pro')  # crash mid-line
    res = analyze(run)
    assert res.history.last_line == "cut"
    assert res.history.damaged_lines == 1
    assert res.history.open_invokes == 1
    assert res.valid is True  # the open send of 77 is indeterminate, not lost
    assert res.stats.send_outcomes.get("info") == 1


def test_damage_inside_history_is_unknown(spark, tmp_path: Path) -> None:
    run = clean(tmp_path).done()
    lines = (run / "history.jsonl").read_text().splitlines(keepends=True)
    lines.insert(2, "garbage\n")
    (run / "history.jsonl").write_text("".join(lines))
    res = analyze(run)
    assert res.valid == "unknown"
    assert res.problems


def test_missing_run_dir_is_a_clear_error(tmp_path: Path) -> None:
    from kafka_trial.contracts.errors import TrialError

    with pytest.raises(TrialError, match=r"not-a-dir not found -- fix: pass a run directory"):
        analyze(tmp_path / "not-a-dir")


def test_a_run_dir_without_a_history_is_a_clear_error(tmp_path: Path) -> None:
    from kafka_trial.contracts.errors import TrialError

    (tmp_path / "empty-run").mkdir()
    with pytest.raises(TrialError, match=r"history\.jsonl.* -- fix: "):
        analyze(tmp_path / "empty-run")


def test_a_bare_history_without_spec_is_judged_with_nothing_allowed(spark, tmp_path: Path) -> None:
    """A history from another tool, or copied alone, needs no spec.json."""
    b = Builder(tmp_path, allowed=("lost-write",))
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    run = b.done()
    (run / "spec.json").unlink()
    res = analyze(run)
    # Only what every run allows (int-send-skip among them).
    assert res.allowed == DEFAULT_ALLOWED and "int-send-skip" in res.allowed
    assert res.valid is False and res.forbidden_seen == ("lost-write",)
