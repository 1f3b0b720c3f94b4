"""Runs the anomaly checks over one analysis's frames: each returns a count and
examples.

Every check is a function AnalysisFrames -> DataFrame of anomaly rows, registered
for its anomaly (facts/shared_frames.check); `run_checks` counts them. A check that
crashes reports count None (unknown), never a trace.
"""

from __future__ import annotations

import json
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES
from kafka_trial.spark_analysis.checks.partition_kernel import KERNEL_CHECKS
from kafka_trial.spark_analysis.checks.partition_pass import kernel_frame
from kafka_trial.spark_analysis.checks.value_kernel import VALUE_CHECKS
from kafka_trial.spark_analysis.checks.value_pass import value_frame

# Importing the cycle checks registers them: every other check is a kernel's.
from kafka_trial.spark_analysis.cycles import edges  # noqa: F401
from kafka_trial.spark_analysis.facts.shared_frames import (
    REGISTERED,
    AnalysisFrames,
    Check,
    analysis,
)
from kafka_trial.spark_analysis.read.history_frames import Frames
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

EXAMPLES = 10  # witnesses per anomaly in results.json (the report shows them all)

# Each kernel's checks, and the pass that gives their (type, key, detail) rows.
KERNELS: dict[tuple[str, ...], Callable[[AnalysisFrames, tuple[str, ...]], DataFrame]] = {
    KERNEL_CHECKS: kernel_frame,
    VALUE_CHECKS: value_frame,
}
_IN_KERNELS = [n for names in KERNELS for n in names]
_OWNED = set(REGISTERED) | set(_IN_KERNELS)
if set(ANOMALY_TYPES) != _OWNED or len(_OWNED) != len(REGISTERED) + len(_IN_KERNELS):
    missing, extra = set(ANOMALY_TYPES) - _OWNED, _OWNED - set(ANOMALY_TYPES)
    raise ImportError(f"checks and the anomaly registry disagree: {missing=} {extra=}")
# Name -> (check, unit), in the registry's order; a kernel's check has None, its rows
# come from its kernel's one pass.
CHECKS: dict[str, tuple[Check | None, str]] = {
    name: (REGISTERED.get(name), ANOMALIES[name].unit) for name in ANOMALY_TYPES
}


def _kernel_frames(fr: AnalysisFrames, names: Iterable[str]) -> list[DataFrame]:
    """One frame per kernel that any of `names` is in, of those checks' rows."""
    names = set(names)
    return [
        frame(fr, tuple(n for n in checks if n in names))
        for checks, frame in KERNELS.items()
        if names & set(checks)
    ]


def _tagged(name: str, df: DataFrame, unit: str) -> DataFrame:
    """One shape for every check: (type, key, detail), key being what `count` counts."""
    detail = F.to_json(F.struct(*[F.col(c) for c in df.columns]))
    key = F.coalesce(F.col("value").cast("string"), detail) if unit == "values" else detail
    if unit == "cycles":
        # One row per component; only the first few, by lowest op, carry a witness
        # cycle, and the examples are the first rows in key order.
        key = F.lpad(F.col("first_op").cast("string"), 20, "0")
    return df.select(F.lit(name).alias("type"), key.alias("key"), detail.alias("detail"))


def tagged_checks(fr: AnalysisFrames, names: Iterable[str]) -> list[DataFrame]:
    """The named checks' rows as (type, key, detail), as `run_checks` counts them: one
    frame per query check, one per kernel for all of its."""
    names = list(names)
    out = [_tagged(n, check(fr), unit) for n in names for check, unit in [CHECKS[n]] if check]
    return [*out, *_kernel_frames(fr, [n for n in names if CHECKS[n][0] is None])]


def run_checks(frames: Frames, skip: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """All checks in one pass: two Spark jobs instead of two per check. `skip`: the
    checks not to run, each with the reason results.json gives. Given an
    AnalysisFrames, the frames it keeps stay kept for its owner to release."""
    with analysis(frames) as fr:
        return _judged(fr, skip)


def _judged(fr: AnalysisFrames, skip: Mapping[str, str] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    tagged: list[DataFrame] = []
    in_kernel: list[str] = []
    for name, (check, unit) in CHECKS.items():
        if skip and name in skip:
            out[name] = {"count": None, "unit": unit, "examples": [], "skipped": skip[name]}
            continue
        out[name] = {"count": 0, "unit": unit, "examples": []}
        if check is None:
            in_kernel.append(name)
            continue
        try:
            tagged.append(_tagged(name, check(fr), unit))
        except Exception as e:  # a check that cannot even be planned is unknown
            out[name] = _crashed(unit, e)
    for checks, frame in KERNELS.items():
        mine = tuple(n for n in in_kernel if n in checks)
        if not mine:
            continue
        try:
            tagged.append(frame(fr, mine))
        except Exception as e:
            out |= {n: _crashed(CHECKS[n][1], e) for n in mine}
    if not tagged:
        return out
    try:
        # One job answers both questions: a key's dense rank within its type, at its
        # largest, is the number of distinct keys, and the first EXAMPLES rows by key
        # are the witnesses. (Counting and ranking in two jobs cost a second pass
        # and a cache, which is most of the fixed cost on a small history.)
        allrows = _union_all(tagged)
        by_key = Window.partitionBy("type").orderBy("key")
        ranked = allrows.select(
            "type",
            "detail",
            F.row_number().over(by_key).alias("rank"),
            F.dense_rank().over(by_key).alias("distinct_upto"),
        ).withColumn("n", F.max("distinct_upto").over(Window.partitionBy("type")))
        # Sorted here, not by Spark: a global sort is one more exchange (and, with
        # more than one reducer, a sampling job) for at most EXAMPLES rows per check.
        kept = ranked.filter(F.col("rank") <= EXAMPLES).collect()
        for r in sorted(kept, key=lambda r: (r["type"], r["rank"])):
            out[r["type"]]["count"] = r["n"]
            out[r["type"]]["examples"].append(json.loads(r["detail"]))
    except Exception:
        # Something failed at run time: fall back to one job per check, so only the
        # check that really crashes is unknown.
        for name, (check, unit) in CHECKS.items():
            if out[name].get("count") is None:
                continue
            try:
                df = _tagged(name, check(fr), unit) if check else _kernel_frames(fr, [name])[0]
                out[name]["count"] = df.select("key").distinct().count()
                rows = df.orderBy("key").limit(EXAMPLES).collect()
                out[name]["examples"] = [json.loads(r["detail"]) for r in rows]
            except Exception as e:
                out[name] = _crashed(unit, e)
    return out


def _union_all(frames: list[DataFrame]) -> DataFrame:
    """One n-ary UNION ALL. Chaining unionByName analyzed the growing plan again at
    every step; the frames share one (type, key, detail) schema, so position is name."""
    spark = frames[0].sparkSession
    names: list[str] = []
    run = uuid.uuid4().hex[:12]  # two analyses in one session must not share a view
    for i, df in enumerate(frames):
        names.append(f"kt_check_{run}_{i}")
        df.createOrReplaceTempView(names[-1])
    try:
        return spark.sql(" UNION ALL ".join(f"SELECT type, key, detail FROM {n}" for n in names))
    finally:
        for n in names:
            spark.catalog.dropTempView(n)


def _crashed(unit: str, e: Exception) -> dict[str, Any]:
    return {
        "count": None,
        "unit": unit,
        "examples": [],
        "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}",
        "trace": traceback.format_exc(limit=3)[-1500:],
    }
