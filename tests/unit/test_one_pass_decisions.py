"""Work the analysis leaves out where a history cannot need it: the frames say whether
anyone but the final drain read (vanished-read has nothing to judge otherwise),
whether any send failed (no value is never-written otherwise), and whether a group or
the copier recorded offsets or wrote outputs (the group and copier checks have nothing
to judge otherwise)."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.spark_analysis.facts.derived import never_written_values
from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.read.history_frames import load

from tests.histories import Builder, group_poll


def test_a_drain_alone_is_no_reader_and_a_consumer_is(spark, tmp_path: Path) -> None:
    drain_only = Builder(tmp_path / "a")
    drain_only.sends(0, [(0, 0, 0, "ok")]).drain(9, [(0, 0, 0)], at_end={0: 1})
    fr = load(spark, str(drain_only.done() / "history.jsonl"))
    assert fr.reader_polls is False
    # The twin: one consumer's poll beside the same drain.
    with_reader = Builder(tmp_path / "b")
    with_reader.sends(0, [(0, 0, 0, "ok")])
    group_poll(with_reader, 5, [(0, 0, 0)])
    with_reader.drain(9, [(0, 0, 0)], at_end={0: 1})
    assert load(spark, str(with_reader.done() / "history.jsonl")).reader_polls is True


def test_no_failed_send_means_no_never_written_value(spark, tmp_path: Path) -> None:
    ok = Builder(tmp_path / "a")
    ok.sends(0, [(0, 0, 0, "ok"), (1, 0, None, "info")]).drain(9, [(0, 0, 0)], at_end={0: 1})
    fr = AnalysisFrames(load(spark, str(ok.done() / "history.jsonl")))
    assert fr.failed_sends is False and never_written_values(fr).count() == 0
    # The twin: one send failed, and its value is never-written.
    failed = Builder(tmp_path / "b")
    failed.sends(0, [(0, 0, 0, "ok")]).sends(0, [(1, 0, None, "fail")])
    failed.drain(9, [(0, 0, 0)], at_end={0: 1})
    fr = AnalysisFrames(load(spark, str(failed.done() / "history.jsonl")))
    try:
        assert fr.failed_sends is True
        assert [r["value"] for r in never_written_values(fr).collect()] == [1]
    finally:
        fr.release()


def _plans_nothing(df) -> bool:
    """Spark optimised the check's query to an empty relation: it reads nothing."""
    return "LocalRelation <empty>" in df._jdf.queryExecution().optimizedPlan().toString()


def test_without_groups_or_a_copier_their_checks_plan_nothing(spark, tmp_path: Path) -> None:
    from kafka_trial.spark_analysis.checks.groups import (
        eos_output_duplicate,
        eos_output_lost,
        group_missed,
    )

    checks = (group_missed, eos_output_lost, eos_output_duplicate)
    producers = Builder(tmp_path / "a")
    producers.sends(0, [(0, 0, 0, "ok"), (1, 0, 1, "ok")]).drain(9, [(0, 0, 0)], at_end={0: 2})
    fr = AnalysisFrames(load(spark, str(producers.done() / "history.jsonl")))
    try:
        assert (fr.consumer_offsets, fr.copier_offsets, fr.negative_values) == (False,) * 3
        assert all(_plans_nothing(check(fr)) for check in checks)
    finally:
        fr.release()
    # The twin: a consumers' group and the copier's recorded their offsets, and the
    # copier wrote an output (-(0 + 1)): each check plans its query, and finds its rows.
    both = Builder(tmp_path / "b")
    both.sends(0, [(0, 0, 0, "ok"), (1, 0, 1, "ok")])
    both.copy(3, [(0, 0, 0)], [(-1, 0, 0)]).copy(4, [(0, 0, 0)], [(-1, 0, 1)])
    both.group_offsets(5, {0: 2}).group_offsets(6, {0: 2}, role="copier")
    both.drain(9, [(0, 0, 0)], at_end={0: 2})
    fr = AnalysisFrames(load(spark, str(both.done() / "history.jsonl")))
    try:
        assert (fr.consumer_offsets, fr.copier_offsets, fr.negative_values) == (True,) * 3
        assert not any(_plans_nothing(check(fr)) for check in checks)
        # Both values are below both groups' committed offset 2: nobody processed
        # them, and no read returned an output of either; value 0's output was
        # written at two offsets.
        assert sorted(r["value"] for r in group_missed(fr).collect()) == [0, 1]
        assert sorted(r["value"] for r in eos_output_lost(fr).collect()) == [0, 1]
        assert [r["value"] for r in eos_output_duplicate(fr).collect()] == [0]
    finally:
        fr.release()
