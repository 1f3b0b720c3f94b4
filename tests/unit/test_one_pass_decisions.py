"""Work the analysis leaves out where a history cannot need it: the frames say whether
anyone but the final drain read (vanished-read has nothing to judge otherwise) and
whether any send failed (no value is never-written otherwise)."""

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
