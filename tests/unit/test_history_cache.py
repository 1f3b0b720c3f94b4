"""One parse: the columnar cache beside history.jsonl is used only while the JSONL,
the source of truth, still matches it (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_trial.checkers.results import Results
from kafka_trial.spark_analysis.job import analyze

from tests.histories import Builder
from tests.results import ran


@pytest.fixture(autouse=True)
def _cache_every_history(monkeypatch: pytest.MonkeyPatch) -> None:
    # By default only histories of 16 MiB and more are cached.
    monkeypatch.setenv("KAFKA_TRIAL_CACHE_MIN_BYTES", "0")


def _counts(res: Results) -> dict[str, int | None]:
    return ran(res)


def _history(run_dir: Path) -> Path:
    b = Builder(run_dir)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "info")])
    b.poll(2, [(1, 0, 0), (1, 0, 0)])  # a nonmonotonic poll
    b.drain(1, [(1, 0, 0)], at_end={0: 1})  # 2 is lost: truncated
    return b.done()


def test_the_second_analysis_reads_the_cache_and_agrees(spark, tmp_path: Path) -> None:
    run_dir = _history(tmp_path)
    first = analyze(run_dir)
    assert first.analysis.cache == "written"
    assert (run_dir / "history.parquet").is_dir()
    second = analyze(run_dir)
    assert second.analysis.cache == "hit"
    assert _counts(second) == _counts(first)
    assert second.stats == first.stats
    assert second.history == first.history
    assert first.anomalies["lost-write"].count == 1


def test_a_history_that_changed_is_parsed_again(spark, tmp_path: Path) -> None:
    run_dir = _history(tmp_path)
    analyze(run_dir)
    with (run_dir / "history.jsonl").open("a") as fh:
        fh.write("garbage\n")
    res = analyze(run_dir)
    assert res.analysis.cache == "written"
    assert res.history.damaged_lines == 1


def test_a_cache_whose_record_disagrees_is_not_used(spark, tmp_path: Path) -> None:
    run_dir = _history(tmp_path)
    analyze(run_dir)
    side = run_dir / "history.parquet.json"
    record = json.loads(side.read_text())
    record["ends_sha256"] = "0" * 64
    side.write_text(json.dumps(record))
    assert analyze(run_dir).analysis.cache == "written"
    side.write_text("{not json")
    assert analyze(run_dir).analysis.cache == "written"
    assert analyze(run_dir).analysis.cache == "hit"


def test_a_read_only_run_directory_is_still_judged(spark, tmp_path: Path) -> None:
    run_dir = _history(tmp_path)
    out = tmp_path / "out"
    run_dir.chmod(0o555)
    try:
        res = analyze(run_dir, out_dir=out)
    finally:
        run_dir.chmod(0o755)
    # root may write anyway; either way the verdict is the same.
    assert res.analysis.cache in ("written", "unwritable")
    assert res.anomalies["lost-write"].count == 1


def test_a_small_history_is_not_cached(spark, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_TRIAL_CACHE_MIN_BYTES", str(1 << 20))
    run_dir = _history(tmp_path)
    assert analyze(run_dir).analysis.cache == "small"
    assert not (run_dir / "history.parquet").exists()
