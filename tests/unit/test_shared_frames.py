"""The frames the checks share: each ends its plan where it is kept, and an
analysis gives back what it kept."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.spark_analysis.checks.runner import run_checks
from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.read.history_frames import load
from pyspark.sql import functions as F

from tests.histories import Builder


def _history(tmp_path: Path) -> Path:
    b = Builder(tmp_path / "run")
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "info")])
    b.poll(2, [(1, 0, 0), (1, 0, 0)])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    return b.done() / "history.jsonl"


def _kept(spark) -> int:
    return spark.sparkContext._jsc.sc().getPersistentRDDs().size()


def test_a_shared_frame_is_a_plan_of_one_node_on_a_local_master(spark, tmp_path: Path) -> None:
    # Checks built on checks built plans of ~5,000 nodes, planned again for every
    # frame on top: that, not the data, was most of a planted batch's analysis.
    fr = AnalysisFrames(load(spark, str(_history(tmp_path))))
    try:
        deep = fr.sends.join(fr.reads, "value").groupBy("value").agg(F.count("*").alias("n"))
        kept = fr.shared("deep", lambda: deep)
        assert kept._jdf.logicalPlan().nodeName() == "LogicalRDD"
        assert deep._jdf.logicalPlan().nodeName() != "LogicalRDD"
        assert sorted(r["value"] for r in kept.collect()) == [1]
        assert fr.shared("deep", lambda: deep) is kept  # built once
    finally:
        fr.release()


def test_an_analysis_gives_back_every_frame_it_kept(spark, tmp_path: Path) -> None:
    frames = load(spark, str(_history(tmp_path)))
    run_checks(frames)  # the history's own frames are kept from here on
    before = _kept(spark)
    out = run_checks(frames)
    assert out["lost-write"]["count"] == 1  # it did judge
    assert _kept(spark) == before


def test_a_history_above_the_bound_keeps_its_frames_cached(
    spark, tmp_path: Path, monkeypatch
) -> None:
    # Checkpointed frames hide their size from the planner: a 2M-line history was
    # judged 7% slower with them, so large histories keep the cached frames.
    import kafka_trial.spark_analysis.facts.shared_frames as sf

    frames = load(spark, str(_history(tmp_path)))
    assert frames.lines == 6  # the sends, the poll and the drain: an invoke and a completion each
    monkeypatch.setattr(sf, "CUT_MAX_LINES", frames.lines - 1)
    fr = AnalysisFrames(frames)
    try:
        kept = fr.shared("sends", lambda: fr.sends.select("value"))
        assert kept._jdf.logicalPlan().nodeName() != "LogicalRDD"
        assert sorted(r["value"] for r in kept.collect()) == [1, 2, 3]
    finally:
        fr.release()


def _passes(monkeypatch) -> list[int]:
    """Counts the value passes planned (value_pass.value_input, once per pass)."""
    from kafka_trial.spark_analysis.checks import value_pass

    planned: list[int] = []
    real = value_pass.value_input

    def counted(fr: AnalysisFrames):
        planned.append(1)
        return real(fr)

    monkeypatch.setattr(value_pass, "value_input", counted)
    return planned


def test_the_drain_shortfall_reads_the_value_pass_the_checks_kept(
    spark, tmp_path: Path, monkeypatch
) -> None:
    # 2 and 3 are never read, and the drain did not read partition 1 to its end: the
    # drain's shortfall asks which values are unseen, which the checks' pass knows.
    from kafka_trial.spark_analysis.checks.undecided import drain_shortfall

    b = Builder(tmp_path / "run")
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok"), (3, 1, 1, "ok")])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    frames = load(spark, str(b.done() / "history.jsonl"))
    planned = _passes(monkeypatch)
    plan = AnalysisFrames(frames)
    try:
        out = run_checks(plan)
        assert out["unseen"]["count"] == 2
        said = drain_shortfall(plan)
    finally:
        plan.release()
    assert "did not finish" in said and "/1" in said, said
    assert len(planned) == 1
    # The twin: given the frames alone, each step is an analysis of its own.
    planned.clear()
    assert run_checks(frames)["unseen"]["count"] == 2
    assert drain_shortfall(frames) == said
    assert len(planned) == 2
