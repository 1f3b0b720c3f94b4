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


def _nemesis_ops(spark: SparkSession, uri: str) -> list[dict[str, Any]]:
    """The nemesis's ops with their values (the frames keep client values only). Lines
    are filtered as text first, so only the few nemesis lines are parsed."""
    return _ops_with_values(spark, uri, "nemesis", F.col("process") == "nemesis")


def _app_events(spark: SparkSession, uri: str) -> list[dict[str, Any]]:
    """The application's lifecycle ops (processes `app-<i>`: starts and exits, with
    pids, exit codes and who ended it), for its lanes on the timeline."""
    return _ops_with_values(spark, uri, '"app-', F.col("process").startswith("app-"), True)


def _ops_with_values(
    spark: SparkSession, uri: str, text: str, which: Column, with_process: bool = False
) -> list[dict[str, Any]]:
    rows = (
        spark.read.text(uri)
        .filter(F.col("value").contains(text))
        .select(F.from_json("value", LINE_SCHEMA).alias("j"))
        .select("j.*")
        .filter(which)
        .orderBy("index")
        .limit(MAX_NEMESIS)
        .collect()
    )
    out = []
    for r in rows:
        if None in (r["index"], r["time"], r["type"], r["f"]):
            continue  # a damaged line (the analysis counts it): no op to draw
        try:
            value = json.loads(r["value"]) if r["value"] is not None else None
        except ValueError:
            value = r["value"]
        op = {
            "index": r["index"],
            "time": r["time"],
            "type": r["type"],
            "f": r["f"],
            "value": value,
        }
        if with_process:
            op["process"] = r["process"]
        if r["error"] is not None:  # why a fault did not take effect
            op["error"] = r["error"]
        out.append(op)
    return out


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
    """The file's contents for the history at `uri`, judged to `anomalies`."""
    times = fr.ops.agg(F.min("time").alias("t0"), F.max("time").alias("t1")).collect()[0]
    t0 = times["t0"] or 0
    t1 = times["t1"] or 0
    bucket_s = _bucket_s(t1 - t0)
    bucket_ns = bucket_s * 1_000_000_000
    bucket = F.floor((F.col("time") - F.lit(t0)) / F.lit(bucket_ns)).cast("long")

    paired = _paired(fr).withColumn("bucket", bucket).persist()
    throughput = [
        {"bucket": r["bucket"], "f": r["f"], "type": r["type"], "n": r["n"]}
        for r in paired.groupBy("bucket", "f", "type").agg(F.count("*").alias("n")).collect()
    ]
    lat_ms = (F.col("time") - F.col("invoke_time")) / F.lit(1e6)
    latency = [
        {
            "bucket": r["bucket"],
            "f": r["f"],
            "p50": r["q"][0],
            "p99": r["q"][1],
            "max": r["mx"],
            "n": r["n"],
        }
        for r in paired.groupBy("bucket", "f")
        .agg(
            F.percentile_approx(lat_ms, [0.5, 0.99], 1000).alias("q"),
            F.max(lat_ms).alias("mx"),
            F.count("*").alias("n"),
        )
        .collect()
    ]
    events = [
        {"time": r["time"], "process": r["process"], "f": r["f"]}
        for r in fr.ops.filter(
            (F.col("process") != "nemesis")
            & (F.col("type") == "ok")
            & F.col("f").isin(*CLIENT_EVENTS)
        )
        .orderBy("index")
        .limit(MAX_EVENTS)
        .collect()
    ]
    offsets = _offsets(fr, bucket)
    witnesses = _witnesses(fr, paired, anomalies)
    paired.unpersist()
    # Validated here, so a file the report cannot read is never written.
    data = {
        "t0": t0,
        "t1": t1,
        "bucket_s": bucket_s,
        "throughput": throughput,
        "latency_ms": latency,
        "offsets": offsets,
        "client_events": events,
        "client_events_capped": len(events) >= MAX_EVENTS,
        "nemesis": _nemesis_ops(spark, uri),
        "app_events": _app_events(spark, uri),
        "witnesses": witnesses,
        "history_uri": uri,
    }
    return ReportData.model_validate(data)


def _offsets(fr: Frames, bucket: Column) -> list[dict[str, Any]]:
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
    return [r.asDict() for r in acked.unionByName(read).collect()]


def _witnesses(
    fr: Frames, paired: DataFrame, anomalies: Mapping[str, AnomalyResult]
) -> dict[str, Any]:
    """The ops behind the examples: every send and read of each example value, and the
    reads at each example's position (what a read returned instead)."""
    values = _witness_values(anomalies)
    positions = _positions(anomalies)
    out: dict[str, Any] = {"sends": [], "reads": [], "at_position": []}
    times = paired.select("index", "time", "invoke_time")
    if values:
        sends = (
            fr.sends.filter(F.col("value").isin(values))
            .join(times, "index", "left")
            .select(
                "value",
                "process",
                "index",
                "f",
                "topic",
                "partition",
                "offset",
                "outcome",
                "time",
                "invoke_time",
            )
            .orderBy("value", "index")
            .limit(MAX_WITNESS_ROWS * len(values))
        )
        out["sends"] = [r.asDict() for r in sends.collect()]
        reads = (
            fr.reads.filter(F.col("value").isin(values))
            .join(times, "index", "left")
            .select(
                "value", "process", "index", "f", "role", "topic", "partition", "offset", "time"
            )
            .orderBy("value", "index")
            .limit(MAX_WITNESS_ROWS * len(values))
        )
        out["reads"] = [r.asDict() for r in reads.collect()]
    if positions:
        cond = None
        for t, p, o in positions:
            c = (F.col("topic") == t) & (F.col("partition") == p) & (F.col("offset") == o)
            cond = c if cond is None else cond | c
        at = (
            fr.reads.filter(cond)
            .join(times, "index", "left")
            .select(
                "value", "process", "index", "f", "role", "topic", "partition", "offset", "time"
            )
            .orderBy("topic", "partition", "offset", "index")
            .limit(MAX_WITNESS_ROWS * len(positions))
        )
        out["at_position"] = [r.asDict() for r in at.collect()]
        out["past_position"] = _first_reads_past(fr, times, positions)
    return out


# Per example position: the first reads (by history order) that went beyond it.
PAST_READS = 3


def _first_reads_past(
    fr: Frames, times: DataFrame, positions: list[tuple[str, int, int]]
) -> list[dict[str, Any]]:
    """The reads that reached beyond each position first: what proves a value missing
    there was not merely late."""
    spark = fr.reads.sparkSession
    pos = spark.createDataFrame(positions, "p_topic string, p_partition long, p_offset long")
    w = Window.partitionBy("p_topic", "p_partition", "p_offset").orderBy("index")
    rows = (
        fr.reads.join(
            F.broadcast(pos),
            (F.col("topic") == F.col("p_topic"))
            & (F.col("partition") == F.col("p_partition"))
            & (F.col("offset") > F.col("p_offset")),
        )
        .withColumn("n", F.row_number().over(w))
        .filter(F.col("n") <= PAST_READS)
        .join(times, "index", "left")
        .select(
            "p_topic",
            "p_partition",
            "p_offset",
            "value",
            "process",
            "index",
            "role",
            "offset",
            "time",
        )
        .orderBy("p_topic", "p_partition", "p_offset", "index")
        .collect()
    )
    return [r.asDict() for r in rows]
