"""The aggregates behind the HTML report, computed by Spark: RUN_DIR/report-data.json.

Everything here is bounded whatever the history's size: per-bucket counts and
latency percentiles (at most MAX_BUCKETS buckets), a per-partition offset envelope
per bucket, the nemesis ops and client events (capped), and the ops behind the
anomaly examples in results.json. So a 10M-op history gives as small and as fast a
report as a 10k-op one. The file's contract is `contracts.report_data.ReportData`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from kafka_trial.checkers.results import AnomalyResult
from kafka_trial.contracts.report_data import ReportData
from kafka_trial.spark_analysis.facts.stats import CLIENT_EVENTS
from kafka_trial.spark_analysis.read import Frames
from kafka_trial.spark_analysis.read.history_parse import LINE_SCHEMA
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

MAX_BUCKETS = 400
MAX_EVENTS = 2000
MAX_NEMESIS = 2000
# Per witness value: the sends and reads of it, and the reads at its position.
MAX_WITNESS_ROWS = 40
# Per example position: the first reads (by history order) that went beyond it.
PAST_READS = 3


def _bucket_s(span_ns: int) -> int:
    return max(1, math.ceil(span_ns / 1e9 / MAX_BUCKETS))


def _paired(fr: Frames) -> DataFrame:
    """Each client completion with its invoke's time: the previous op of its process."""
    w = Window.partitionBy("process").orderBy("index")
    return (
        # The application's lifecycle ops are not client ops: they have their own lanes.
        fr.ops.filter((F.col("process") != "nemesis") & ~F.col("process").startswith("app-"))
        .withColumn("invoke_time", F.lag("time").over(w))
        .withColumn("prev_type", F.lag("type").over(w))
        .filter((F.col("type") != "invoke") & (F.col("prev_type") == "invoke"))
        .select("index", "process", "f", "type", "time", "invoke_time")
    )


def _lane(uri: str, spark: SparkSession, text: str, which: Column) -> DataFrame:
    """The first MAX_NEMESIS lines matching `which` (the nemesis's ops, or the
    application's lifecycle ops: processes `app-<i>`, starts and exits, with pids,
    exit codes and who ended it), with their values: the frames keep client values
    only. Lines are filtered as text first, so only their few lines are parsed."""
    return (
        spark.read.text(uri)
        .filter(F.col("value").contains(text))
        .select(F.from_json("value", LINE_SCHEMA).alias("j"))
        .select("j.*")
        .filter(which)
        .orderBy("index")
        .limit(MAX_NEMESIS)
        .select("index", "time", "type", "f", "value", "error", "process")
    )


def _lane_ops(fr: Frames, got: Mapping[str, list[dict[str, Any]]], lane: str) -> list[Any]:
    """The first MAX_NEMESIS ops of the nemesis (`lane` "nemesis") or of the
    application's instances ("app") by index, from the lanes the native parse kept
    or else from their lines read again (`got[lane]`, values as JSON text)."""
    with_process = lane == "app"
    if fr.lanes is None:
        ops = [_op(r, with_process) for r in _by_index(got[lane])]
    else:
        mine = [d for d in fr.lanes if (d["process"] == "nemesis") != with_process]
        first = sorted(mine, key=lambda d: d["index"])[:MAX_NEMESIS]
        ops = [_op(d, with_process, parsed=True) for d in first]
    return [o for o in ops if o]


def _op(r: Any, with_process: bool, parsed: bool = False) -> dict[str, Any] | None:
    """A line's op as the report draws it; None for a damaged line (the analysis
    counts it): no op to draw. `parsed`: its value is not JSON text but parsed."""
    r = {k: r.get(k) for k in ("index", "time", "type", "f", "value", "error", "process")}
    if None in (r["index"], r["time"], r["type"], r["f"]):
        return None
    try:
        value = json.loads(r["value"]) if r["value"] is not None and not parsed else r["value"]
    except ValueError:
        value = r["value"]
    op = {"index": r["index"], "time": r["time"], "type": r["type"], "f": r["f"], "value": value}
    if with_process:
        op["process"] = r["process"]
    if r["error"] is not None:  # why a fault did not take effect
        op["error"] = r["error"]
    return op


def _witness_values(anomalies: Mapping[str, AnomalyResult]) -> list[int]:
    vals = {ex.value for a in anomalies.values() for ex in a.example_views()}
    return sorted(v for v in vals if v is not None)


def _positions(anomalies: Mapping[str, AnomalyResult]) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every example that names one: where reads are
    looked up."""
    pos: set[tuple[str, int, int]] = set()
    for a in anomalies.values():
        for ex in a.example_views():
            if ex.topic is not None and ex.partition is not None and ex.offset is not None:
                pos.add((ex.topic, ex.partition, ex.offset))
    return sorted(pos)


def report_data(
    spark: SparkSession, fr: Frames, uri: str, anomalies: Mapping[str, AnomalyResult]
) -> ReportData:
    """The file's contents for the history at `uri`, judged to `anomalies`: the
    aggregates in one job, and the witnesses in another (and a lookup of a few
    times). Each was a job of its own, about ten: each one's planning and scheduling
    cost more than most of their work, and one at a time, they kept one core idle
    where a one-task plan's branches run side by side."""
    t0, t1 = fr.span
    if t0 is None:
        # Frames the one job of decisions did not count (built by hand): count here.
        times = fr.ops.agg(F.min("time").alias("t0"), F.max("time").alias("t1")).collect()[0]
        t0, t1 = times["t0"], times["t1"]
    t0, t1 = t0 or 0, t1 or 0
    bucket_s = _bucket_s(t1 - t0)
    bucket_ns = bucket_s * 1_000_000_000
    bucket = F.floor((F.col("time") - F.lit(t0)) / F.lit(bucket_ns)).cast("long")

    paired = _paired(fr).withColumn("bucket", bucket).persist()
    try:
        got = _collect(_aggregates(spark, fr, uri, paired, bucket))
        witnesses = _witnesses(fr, paired, anomalies)
    finally:
        paired.unpersist()
    events = [
        {k: r[k] for k in ("time", "process", "f")}
        for r in sorted(got["events"], key=lambda r: r["index"])
    ]
    # Validated here, so a file the report cannot read is never written.
    data = {
        "t0": t0,
        "t1": t1,
        "bucket_s": bucket_s,
        "throughput": _throughput(got["ops"]),
        "latency_ms": _latency(got["ops"]),
        "offsets": got["offsets"],
        "client_events": events,
        "client_events_capped": len(events) >= MAX_EVENTS,
        "nemesis": _lane_ops(fr, got, "nemesis"),
        "app_events": _lane_ops(fr, got, "app"),
        "witnesses": witnesses,
        "history_uri": uri,
    }
    return ReportData.model_validate(data)


def _aggregates(
    spark: SparkSession, fr: Frames, uri: str, paired: DataFrame, bucket: Column
) -> dict[str, DataFrame]:
    """Every aggregate no verdict decides, as branches of one job."""
    lat_ms = (F.col("time") - F.col("invoke_time")) / F.lit(1e6)
    # Throughput per (bucket, f, type), latency per (bucket, f): one aggregation.
    ops = paired.groupingSets(
        [["bucket", "f", "type"], ["bucket", "f"]], "bucket", "f", "type"
    ).agg(
        F.grouping_id().alias("level"),
        F.count("*").alias("n"),
        F.percentile_approx(lat_ms, [0.5, 0.99], 1000).alias("q"),
        F.max(lat_ms).alias("mx"),
    )
    events = (
        fr.ops.filter(
            (F.col("process") != "nemesis")
            & (F.col("type") == "ok")
            & F.col("f").isin(*CLIENT_EVENTS)
        )
        .orderBy("index")
        .limit(MAX_EVENTS)
        .select("index", "time", "process", "f")
    )
    branches = {"ops": ops, "events": events, "offsets": _offsets(fr, bucket)}
    if fr.lanes is None:
        # The native parse did not keep the lanes: their few lines are read again.
        branches["nemesis"] = _lane(uri, spark, "nemesis", F.col("process") == "nemesis")
        branches["app"] = _lane(uri, spark, '"app-', F.col("process").startswith("app-"))
    return branches


def _throughput(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: r[k] for k in ("bucket", "f", "type", "n")} for r in ops if r["level"] == 0]


def _latency(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "bucket": r["bucket"],
            "f": r["f"],
            "p50": r["q"][0],
            "p99": r["q"][1],
            "max": r["mx"],
            "n": r["n"],
        }
        for r in ops
        if r["level"] == 1
    ]


def _by_index(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["index"] is not None, r["index"] or 0))


def _collect(branches: Mapping[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Each branch's rows as dicts, every column present, from one job: the branches'
    rows as JSON, tagged, in one UNION ALL."""
    cols = {tag: df.columns for tag, df in branches.items()}
    tagged = [
        df.select(F.lit(tag).alias("tag"), F.to_json(F.struct(*df.columns)).alias("row"))
        for tag, df in branches.items()
    ]
    union = tagged[0]
    for df in tagged[1:]:
        union = union.unionByName(df)
    out: dict[str, list[dict[str, Any]]] = {tag: [] for tag in branches}
    for r in union.collect():
        row = json.loads(r["row"])
        # to_json leaves a null field out.
        out[r["tag"]].append({c: row.get(c) for c in cols[r["tag"]]})
    return out


def _offsets(fr: Frames, bucket: Column) -> DataFrame:
    """Per partition and bucket, the range of offsets acknowledged, and of offsets read."""
    times_by_index = fr.ops.select("index", "time")
    acked = (
        fr.sends.filter((F.col("outcome") == "ok") & F.col("offset").isNotNull())
        .join(times_by_index, "index")
        .withColumn("bucket", bucket)
        .groupBy("topic", "partition", "bucket")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"))
        .withColumn("kind", F.lit("acked"))
    )
    read = (
        fr.reads.join(times_by_index, "index")
        .withColumn("bucket", bucket)
        .groupBy("topic", "partition", "bucket")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"))
        .withColumn("kind", F.lit("read"))
    )
    return acked.unionByName(read)


def _witnesses(
    fr: Frames, paired: DataFrame, anomalies: Mapping[str, AnomalyResult]
) -> dict[str, Any]:
    """The ops behind the examples: every send and read of each example value, the
    reads at each example's position (what a read returned instead), and the first
    reads past it; in one job, and the times of the last looked up."""
    values = _witness_values(anomalies)
    positions = _positions(anomalies)
    out: dict[str, Any] = {"sends": [], "reads": [], "at_position": []}
    times = paired.select("index", "time", "invoke_time")
    read_cols = ("value", "process", "index", "f", "role", "topic", "partition", "offset", "time")
    branches: dict[str, DataFrame] = {}
    if values:
        send_cols = ("value", "process", "index", "f", "topic", "partition", "offset",
                     "outcome", "time", "invoke_time")  # fmt: skip
        for name, df, cols in (("sends", fr.sends, send_cols), ("reads", fr.reads, read_cols)):
            branches[name] = (
                df.filter(F.col("value").isin(values))
                .join(times, "index", "left")
                .select(*cols)
                .orderBy("value", "index")
                .limit(MAX_WITNESS_ROWS * len(values))
            )
    if positions:
        cond = None
        for t, p, o in positions:
            c = (F.col("topic") == t) & (F.col("partition") == p) & (F.col("offset") == o)
            cond = c if cond is None else cond | c
        branches["at_position"] = (
            fr.reads.filter(cond)
            .join(times, "index", "left")
            .select(*read_cols)
            .orderBy("topic", "partition", "offset", "index")
            .limit(MAX_WITNESS_ROWS * len(positions))
        )
        branches["past_position"] = _first_reads_past(fr, positions)
    if not branches:
        return out
    got = _collect(branches)
    for name in ("sends", "reads"):
        out[name] = sorted(got.get(name, []), key=lambda r: (r["value"], r["index"]))
    out["at_position"] = sorted(
        got.get("at_position", []),
        key=lambda r: (r["topic"], r["partition"], r["offset"], r["index"]),
    )
    if positions:
        out["past_position"] = _with_times(times, got["past_position"])
    return out


def _first_reads_past(fr: Frames, positions: list[tuple[str, int, int]]) -> DataFrame:
    """The reads that reached beyond each position first: what proves a value missing
    there was not merely late. Without their times (`_with_times`): a join of every
    read past a position with every op's time cost most of the report."""
    spark = fr.reads.sparkSession
    # Built in the JVM: a DataFrame of Python rows cost a Python worker's start to
    # broadcast.
    pos = spark.range(1).select(
        F.inline(
            F.array(
                *[
                    F.struct(
                        F.lit(t).alias("p_topic"),
                        F.lit(p).cast("long").alias("p_partition"),
                        F.lit(o).cast("long").alias("p_offset"),
                    )
                    for t, p, o in positions
                ]
            )
        )
    )
    w = Window.partitionBy("p_topic", "p_partition", "p_offset").orderBy("index")
    cols = ["p_topic", "p_partition", "p_offset", "value", "process", "index", "role", "offset"]
    return (
        fr.reads.join(
            F.broadcast(pos),
            (F.col("topic") == F.col("p_topic"))
            & (F.col("partition") == F.col("p_partition"))
            & (F.col("offset") > F.col("p_offset")),
        )
        .withColumn("n", F.row_number().over(w))
        .filter(F.col("n") <= PAST_READS)
        .select(*cols)
    )


def _with_times(times: DataFrame, first: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first reads past each position, with their times looked up for those
    few reads only."""
    indexes = sorted({r["index"] for r in first if r["index"] is not None})
    at: dict[int, Any] = {}
    if indexes:
        found = times.filter(F.col("index").isin(indexes)).select("index", "time").collect()
        at = {r["index"]: r["time"] for r in found}
    rows = [r | {"time": at.get(r["index"])} for r in first]
    return sorted(rows, key=lambda r: (r["p_topic"], r["p_partition"], r["p_offset"], r["index"]))
