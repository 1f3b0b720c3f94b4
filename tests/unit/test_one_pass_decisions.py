"""Work the analysis leaves out where a history cannot need it: the frames say whether
anyone but the final drain read (vanished-read has nothing to judge otherwise),
whether any send failed (no value is never-written otherwise), and whether a group or
the copier recorded offsets or a group processed records (the value pass collects no
offsets and reads no processed record otherwise)."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_trial.spark_analysis.checks.value_kernel import APP_OUTPUT, PROCESSED
from kafka_trial.spark_analysis.checks.value_pass import value_frame, value_input
from kafka_trial.spark_analysis.facts.derived import never_written_values
from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.read.history_frames import load

from tests.histories import Builder, app_inputs, group_poll


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


def _reads(fr: AnalysisFrames, kind: int) -> bool:
    """The value pass's input takes rows of `kind` in (value_kernel.py's kinds)."""
    plan = value_input(fr)._jdf.queryExecution().analyzed().toString()
    return f"{kind} AS kind" in plan


GROUP_CHECKS = ("group-missed", "group-redelivered", "eos-output-lost", "eos-output-duplicate")


def _found(fr: AnalysisFrames) -> dict[str, list]:
    rows = value_frame(fr, GROUP_CHECKS).collect()
    return {
        n: sorted(json.loads(r["detail"])["value"] for r in rows if r["type"] == n)
        for n in GROUP_CHECKS
    }


def test_without_groups_or_a_copier_the_value_pass_reads_nothing_for_them(
    spark, tmp_path: Path
) -> None:
    producers = Builder(tmp_path / "a")
    producers.sends(0, [(0, 0, 0, "ok"), (1, 0, 1, "ok")]).drain(9, [(0, 0, 0)], at_end={0: 2})
    fr = AnalysisFrames(load(spark, str(producers.done() / "history.jsonl")))
    try:
        assert (fr.consumer_offsets, fr.copier_offsets, fr.processed_records) == (False,) * 3
        assert not _reads(fr, PROCESSED) and not _reads(fr, APP_OUTPUT)
        assert _found(fr) == {n: [] for n in GROUP_CHECKS}
    finally:
        fr.release()
    # The twin: a consumers' group processed value 1 twice and recorded its offsets,
    # the copier recorded its, and wrote an output of 0 (-(0 + 1)) twice: the pass
    # reads the processed records, and each check finds its rows.
    both = Builder(tmp_path / "b")
    both.sends(0, [(0, 0, 0, "ok"), (1, 0, 1, "ok")])
    both.copy(3, [(0, 0, 0)], [(-1, 0, 0)]).copy(4, [(0, 0, 0)], [(-1, 0, 1)])
    both.processed(7, [(1, 0, 1), (1, 0, 1)])
    both.group_offsets(5, {0: 2}).group_offsets(6, {0: 2}, role="copier")
    both.drain(9, [(0, 0, 0)], at_end={0: 2})
    fr = AnalysisFrames(load(spark, str(both.done() / "history.jsonl")))
    try:
        assert (fr.consumer_offsets, fr.copier_offsets, fr.processed_records) == (True,) * 3
        assert _reads(fr, PROCESSED) and not _reads(fr, APP_OUTPUT)
        # Both values are below both groups' committed offset 2: nobody processed 0,
        # and no read returned an output of either.
        assert _found(fr) == {
            "group-missed": [0],
            "group-redelivered": [1],
            "eos-output-lost": [0, 1],
            "eos-output-duplicate": [0],
        }
    finally:
        fr.release()


def test_the_value_pass_reads_an_apps_output_only_where_an_app_ran(spark, tmp_path: Path) -> None:
    # An app started and its group committed: its output drain's records are read in
    # (the twin without an app is the producers-only run above).
    app = app_inputs(tmp_path)
    fr = AnalysisFrames(load(spark, str(app.done() / "history.jsonl")))
    try:
        assert fr.app_present and _reads(fr, APP_OUTPUT) and not _reads(fr, PROCESSED)
    finally:
        fr.release()
