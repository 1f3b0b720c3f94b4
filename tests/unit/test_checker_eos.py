"""The exactly-once copier checks: output lost and output duplicated."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.spark_analysis.job import analyze

from tests.histories import Builder
from tests.results import ran


def copied(tmp_path: Path) -> Builder:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.copy(5, [(1, 0, 0), (2, 0, 1)], [(-2, 0, 0), (-3, 0, 1)])
    b.group_offsets(9, {0: 2}, role="copier")  # the copier committed past 1 and 2
    b.poll(8, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    return b


def counts(run: Path) -> dict[str, int]:
    return ran(analyze(run))


def test_exactly_once_copy_is_clean(spark, tmp_path: Path) -> None:
    b = copied(tmp_path)
    b.read_out(8, [(-2, 0, 0), (-3, 0, 1)])
    c = counts(b.done())
    assert all(v == 0 for v in c.values()), c


def test_eos_output_lost(spark, tmp_path: Path) -> None:
    b = copied(tmp_path)
    b.read_out(8, [(-2, 0, 0)])
    res = analyze(b.done())
    assert res.anomalies["eos-output-lost"].count == 1
    assert res.anomalies["eos-output-lost"].examples[0]["value"] == 2


def test_eos_output_duplicate(spark, tmp_path: Path) -> None:
    b = copied(tmp_path)
    b.read_out(8, [(-2, 0, 0), (-3, 0, 1), (-2, 0, 2)])
    c = counts(b.done())
    assert c["eos-output-duplicate"] == 1
    assert c["duplicate"] == 1
    assert c["group-missed"] == 0  # the copier's offsets are not a consumer group's
