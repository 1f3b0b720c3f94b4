"""The kernels (spark_analysis/checks/partition_kernel.py and value_kernel.py) against
the queries they replaced (tests/query_checks.py), row for row: on every planted case
of the checker's tests (their clean twins among them) and on random histories like the
differential test's. The plain-Python reference holds both to the truth elsewhere
(test_differential)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.spark_analysis.checks import value_pass
from kafka_trial.spark_analysis.checks.partition_kernel import KERNEL_CHECKS, kernel
from kafka_trial.spark_analysis.checks.partition_pass import (
    kernel_config,
    kernel_frame,
    kernel_input,
)
from kafka_trial.spark_analysis.checks.value_kernel import VALUE_CHECKS
from kafka_trial.spark_analysis.checks.value_pass import value_frame
from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.read.history_frames import load
from pyspark.sql import functions as F

from tests.batched import Case, Cases, write_cases
from tests.histories import APP_OUT
from tests.query_checks import QUERIES
from tests.random_histories import history, write
from tests.unit import (
    test_checker,
    test_checker_defects,
    test_checker_facts,
    test_checker_fenced,
    test_checker_positions,
    test_checker_txn_and_polls,
)

# The group, copier and app checks' planted cases are judged alone elsewhere
# (test_checker_groups.py, test_checker_eos.py, test_checker_app.py): here they are
# batched, with twins.
GROUPS = Cases()


def _three_acked(b: Case, processed: list[tuple[int, int, int]], *committed: int) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.processed(5, processed)
    for i, c in enumerate(committed):
        b.group_offsets(9 + i, {0: c})


GROUPS.add("group committed past two it never processed")(lambda b: _three_acked(b, [(1, 0, 0)], 3))
GROUPS.add("group committed past what it processed only")(lambda b: _three_acked(b, [(1, 0, 0)], 1))
# Two final offsets for one partition: a row for each one a value lies below.
GROUPS.add("group offsets recorded twice")(lambda b: _three_acked(b, [(2, 0, 1)], 1, 3))


def _copied(b: Case, read_out: list[tuple[int, int, int]]) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.copy(5, [(1, 0, 0), (2, 0, 1)], [(-2, 0, 0), (-3, 0, 1)])
    b.group_offsets(9, {0: 2}, role="copier")
    b.poll(8, [(1, 0, 0), (2, 0, 1), (3, 0, 2)])
    b.read_out(8, read_out)


GROUPS.add("copier output lost")(lambda b: _copied(b, [(-2, 0, 0)]))
GROUPS.add("copier output whole")(lambda b: _copied(b, [(-2, 0, 0), (-3, 0, 1)]))


def _app(b: Case, outputs: list[tuple[int, int, int]]) -> None:
    """test_checker_app.py's app run: five inputs, the app group past all of them, and
    the output drain's `outputs` (id, partition, offset) of the output topic."""
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.sends(1, [(4, 1, 0, "ok"), (5, 1, 1, "ok")])
    b.group_offsets(9, {0: 3, 1: 2}, role="app")
    b.drain(8, [(1, 0, 0), (2, 0, 1), (3, 0, 2), (4, 1, 0), (5, 1, 1)], at_end={0: 3, 1: 2})
    records = [{"topic": APP_OUT, "partition": p, "offset": o, "value": v} for v, p, o in outputs]
    b.h.invoke(7, "poll", [{"op": "poll", "role": "app-output"}])
    b.h.complete("ok", 7, "poll", [{"op": "poll", "role": "app-output", "records": records}])


# 3 never output, 1 output twice (the second a redelivery, not a reorder), 9000 never
# sent.
GROUPS.add("app output lost, doubled and foreign")(
    lambda b: _app(b, [(1, 0, 0), (2, 0, 1), (1, 0, 2), (9000, 0, 3), (4, 1, 0), (5, 1, 1)])
)
# 2 output before 1 in the same key (input partition 0).
GROUPS.add("app output reordered")(
    lambda b: _app(b, [(2, 0, 0), (1, 0, 1), (3, 0, 2), (4, 1, 0), (5, 1, 1)])
)
GROUPS.add("app output whole")(
    lambda b: _app(b, [(1, 0, 0), (2, 0, 1), (3, 0, 2), (4, 1, 0), (5, 1, 1)])
)


PLANTED = {
    f"{mod.__name__.rsplit('.', 1)[-1]}: {name}": build
    for mod in (
        test_checker,
        test_checker_defects,
        test_checker_facts,
        test_checker_fenced,
        test_checker_positions,
        test_checker_txn_and_polls,
    )
    for name, build in mod.CASES.items()
} | {f"groups: {name}": build for name, build in GROUPS.items()}


KERNELS = {"partition": (KERNEL_CHECKS, kernel_frame), "value": (VALUE_CHECKS, value_frame)}
ALL = (*KERNEL_CHECKS, *VALUE_CHECKS)
# The query kept one row per lost value, whichever came first; the kernel keeps its
# first send by index. So the kernel's row must be one of the query's, value for value.
ONE_PER_VALUE = {"lost-write"}


def both_ways(spark: Any, path: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """check -> the set of its rows as JSON, from the kernels and from the queries."""
    fr = AnalysisFrames(load(spark, str(path)))
    try:
        kernel: dict[str, set[str]] = {n: set() for n in ALL}
        for checks, frame in KERNELS.values():
            for r in frame(fr, checks).collect():
                value = json.loads(r["detail"]).get("value")
                by_value = ANOMALIES[r["type"]].unit == "values" and value is not None
                assert r["key"] == (str(value) if by_value else r["detail"])
                kernel[r["type"]].add(r["detail"])
        queries = {
            n: {
                r["j"] for r in QUERIES[n](fr).select(F.to_json(F.struct("*")).alias("j")).collect()
            }
            for n in ALL
        }
    finally:
        fr.release()
    return kernel, queries


def _value(row: str) -> Any:
    return json.loads(row).get("value")


def _differences(kernel: dict[str, set[str]], queries: dict[str, set[str]]) -> list[str]:
    out = []
    for n in ALL:
        only_kernel, only_queries = kernel[n] - queries[n], queries[n] - kernel[n]
        if n in ONE_PER_VALUE:
            assert len({_value(r) for r in kernel[n]}) == len(kernel[n]), "one row per value"
            only_queries = {
                r for r in queries[n] if _value(r) not in {_value(k) for k in kernel[n]}
            }
        for row in sorted(only_kernel)[:5]:
            out.append(f"{n}: only the kernel: {row}")
        for row in sorted(only_queries)[:5]:
            out.append(f"{n}: only the queries: {row}")
    return out


def test_the_kernel_finds_what_the_queries_found_in_every_planted_case(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    write_cases(path, PLANTED)
    kernel, queries = both_ways(spark, path)
    assert not _differences(kernel, queries)
    # Not vacuous: the planted cases hold every kernel check's anomaly.
    assert all(kernel[n] for n in ALL), {n: len(kernel[n]) for n in ALL}


@pytest.mark.parametrize("seed", [11, 4242])
def test_the_kernel_finds_what_the_queries_found_in_random_histories(
    spark: Any, tmp_path: Path, seed: int
) -> None:
    path = tmp_path / "history.jsonl"
    write([history(seed, i) for i in range(300)], path)
    kernel, queries = both_ways(spark, path)
    assert not _differences(kernel, queries)
    found = {n: len(kernel[n]) for n in ALL}
    assert sum(found.values()) > 0, found


def test_the_kernel_rows_are_the_queries_json(spark: Any, tmp_path: Path) -> None:
    """The witnesses results.json shows are the same bytes: nulls left out, columns in
    the query's order."""
    path = tmp_path / "history.jsonl"
    write_cases(path, PLANTED)
    kernel, _ = both_ways(spark, path)
    row = json.loads(sorted(kernel["reorder"])[0])
    assert list(row)[:3] == ["process", "topic", "partition"]
    assert all(v is not None for r in kernel["int-send-skip"] for v in json.loads(r).values())


def test_values_spread_over_many_buckets_are_judged_as_in_one(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction's values lie in many buckets, and torn-txn sums its unread sends
    across them: a bucket of a few lines finds what one bucket of everything found."""
    path = tmp_path / "history.jsonl"
    write_cases(path, PLANTED)
    one, _ = both_ways(spark, path)
    monkeypatch.setattr(value_pass, "LINES_PER_BUCKET", 10)
    lines = len(path.read_text().splitlines())
    assert lines > 40 * 10, lines  # some 40 buckets or more
    many, _ = both_ways(spark, path)
    assert many == one
    assert one["torn-txn"] and one["precommitted-read"]


def _rows(batches: Any) -> set[tuple[str, str]]:
    return {
        (t, d)
        for b in batches
        for t, d in zip(b["type"].to_pylist(), b["detail"].to_pylist(), strict=True)
    }


@pytest.mark.parametrize("rows_per_batch", [1, 2])
def test_the_partition_kernel_reads_a_partition_alike_in_any_cut_of_batches(
    spark: Any, tmp_path: Path, rows_per_batch: int
) -> None:
    """Spark hands the kernel a partition a record batch at a time, and each batch is cut
    down to numpy columns as it comes (partition_kernel.Part): a process first named in
    a later batch, a batch of sends alone or of reads alone, an empty batch, a null
    process must all read as the partition in one batch does, and as Spark's run."""
    path = tmp_path / "history.jsonl"
    write_cases(path, PLANTED)
    fr = AnalysisFrames(load(spark, str(path)))
    try:
        cfg = kernel_config(fr, KERNEL_CHECKS)
        ran = {(r["type"], r["detail"]) for r in kernel_frame(fr, KERNEL_CHECKS).collect()}
        table = kernel_input(fr).toArrow()
    finally:
        fr.release()
    by_tp: dict[tuple[Any, Any], list[int]] = defaultdict(list)
    keys = zip(table["topic"].to_pylist(), table["partition"].to_pylist(), strict=True)
    for i, key in enumerate(keys):
        by_tp[key].append(i)
    cut: set[tuple[str, str]] = set()
    whole: set[tuple[str, str]] = set()
    empty = pa.RecordBatch.from_pylist([], schema=table.schema)
    for key, rows in by_tp.items():
        part = table.take(rows)
        cut |= _rows(kernel(cfg, key, iter([empty, *part.to_batches(rows_per_batch)])))
        whole |= _rows(kernel(cfg, key, part.combine_chunks().to_batches()))
    # Not vacuous: the planted cases' partitions are small, but most are cut.
    assert sum(len(rows) > rows_per_batch for rows in by_tp.values()) > 50
    assert cut == whole == ran
    assert {t for t, _ in ran} == set(KERNEL_CHECKS)  # not vacuous: every check found
