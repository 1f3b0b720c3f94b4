"""Work the analysis leaves out where a history cannot need it: the report's lanes (the
nemesis's ops and the application's lifecycle ops) come from one scan of the history's
text, and stay the first MAX_NEMESIS of each by index when there are more; and the
frames say whether anyone but the final drain read (vanished-read has nothing to judge
otherwise) and whether any send failed (no value is never-written otherwise)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from kafka_trial.spark_analysis import report_data
from kafka_trial.spark_analysis.facts.derived import never_written_values
from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.read.history_frames import load

from tests.histories import Builder, group_poll


def _lanes_history(tmp_path: Path) -> Path:
    b = Builder(tmp_path)
    b.sends(0, [(0, 0, 0, "ok")])
    b.nemesis("kill", {"target": "leader", "n": 1})
    b.h.invoke("app-0", "app-start", {"pid": 11})
    b.h.complete("ok", "app-0", "app-start", {"pid": 11})
    b.nemesis("start", {"n": 2})
    b.h.invoke("app-0", "app-exit", {"code": 0})
    b.h.complete("ok", "app-0", "app-exit", {"code": 0})
    b.drain(9, [(0, 0, 0)], at_end={0: 1})
    return b.done() / "history.jsonl"


def test_one_scan_finds_both_lanes_in_index_order(spark, tmp_path: Path) -> None:
    nemesis, app = report_data._lanes(spark, str(_lanes_history(tmp_path)))
    assert [(o["type"], o["f"]) for o in nemesis] == [
        ("invoke", "kill"),
        ("ok", "kill"),
        ("invoke", "start"),
        ("ok", "start"),
    ]
    assert [o["value"].get("n") for o in nemesis] == [1, 1, 2, 2]
    assert [(o["process"], o["f"]) for o in app] == [("app-0", "app-start")] * 2 + [
        ("app-0", "app-exit")
    ] * 2
    assert all(a["index"] < b["index"] for a, b in pairwise(nemesis))


def test_more_lines_than_the_cap_keep_each_lanes_first(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 nemesis and 4 app lines, a cap of 2 a lane: more than one scan's 2 x 2 + 1, so
    # each lane is cut apart, and neither crowds the other out.
    monkeypatch.setattr(report_data, "MAX_NEMESIS", 2)
    nemesis, app = report_data._lanes(spark, str(_lanes_history(tmp_path)))
    assert [(o["type"], o["f"]) for o in nemesis] == [("invoke", "kill"), ("ok", "kill")]
    assert [(o["type"], o["f"]) for o in app] == [("invoke", "app-start"), ("ok", "app-start")]


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
