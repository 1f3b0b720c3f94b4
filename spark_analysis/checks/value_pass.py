"""The one pass behind the value-keyed checks: every send, polled record, attempted
value, processed record, application output record and fenced session's send shuffled
once into buckets of values (a hash of the value, the copier's output -(v + 1) with
its input v), and value_kernel.py's function applied to each bucket as Arrow
(`applyInArrow`). What is per partition comes in beforehand: how far reads and the
final drain reached in each, a row per partition collected to the driver and shipped
with the function, and so are the groups' final committed offsets.

torn-txn sums the kernel's rows of each committed transaction's unread sends per
transaction (`torn_txns`): a transaction's values lie in many buckets. The pass's rows
are kept for the analysis (`value_rows`): the drain's shortfall asks which values are
unseen of the same rows."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from kafka_trial.spark_analysis.checks import kernel_columns, order_kernel, value_kernel
from kafka_trial.spark_analysis.checks.kernel_columns import OUT_SCHEMA
from kafka_trial.spark_analysis.checks.order_kernel import FIRST_SCHEMA, reorders
from kafka_trial.spark_analysis.checks.partition_pass import one_partition, record_rows, with_longs
from kafka_trial.spark_analysis.checks.value_kernel import (
    APP_FIRST,
    APP_OUTPUT,
    ATTEMPTED,
    FENCED,
    POLLED,
    PROCESSED,
    SEND,
    TXN_MISSING,
    Config,
    kernel,
)
from kafka_trial.spark_analysis.facts.app_output import app_ids
from kafka_trial.spark_analysis.facts.derived import committed_sends, read_reach, writes
from kafka_trial.spark_analysis.facts.fences import fenced_sends
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# Shipped by value: a standalone cluster's Python workers need not have kafka_trial.
cloudpickle.register_pickle_by_value(kernel_columns)
cloudpickle.register_pickle_by_value(value_kernel)
cloudpickle.register_pickle_by_value(order_kernel)

# About this many history lines per bucket: a bucket is one Arrow table in a Python
# worker (a default run's 400k lines make about 1.7M rows, some 100 MB as Arrow), so a
# 50M-line history is judged a bounded bucket at a time.
LINES_PER_BUCKET = 500_000
_LONGS = ("kind", "partition", "value", "offset", "index")


def value_input(fr: AnalysisFrames) -> DataFrame:
    """The kernel's rows (value_kernel.py's `kind`s): flags, not the strings they are
    decided by."""
    must = F.coalesce(F.col("must_commit"), F.lit(False))
    sends = record_rows(
        writes(fr),
        F.lit(SEND).alias("kind"),
        must.alias("must_commit"),
        F.coalesce(F.col("outcome") != "fail", F.lit(False)).alias("written"),
        F.coalesce(F.col("f") == "txn", F.lit(False)).alias("txn"),
    )
    polled = record_rows(
        fr.polled,
        F.lit(POLLED).alias("kind"),
        (F.col("type") == "ok").alias("ok"),
        F.col("role").eqNullSafe("drain").alias("drain"),
        F.when(F.col("f") == "txn", F.col("type")).alias("ptype"),
    )
    rows = sends.unionByName(polled, allowMissingColumns=True).unionByName(
        fr.attempted.select(F.lit(ATTEMPTED).alias("kind"), "value"), allowMissingColumns=True
    )
    if fr.processed_records:
        # Only a consumers' group processes: a producers-only run (the default) reads
        # nothing for it.
        processed = fr.processed.select(F.lit(PROCESSED).alias("kind"), "value", "index", "process")
        rows = rows.unionByName(processed, allowMissingColumns=True)
    if fr.app_present:
        out = app_ids(fr).select(F.lit(APP_OUTPUT).alias("kind"), "value", *TP, "offset")
        rows = rows.unionByName(out, allowMissingColumns=True)
    if fr.fences:
        # Only a takeover that named a session fences one: most runs read nothing here.
        fenced = fenced_sends(fr).select(F.lit(FENCED).alias("kind"), "*")
        rows = rows.unionByName(fenced, allowMissingColumns=True)
    return one_partition(fr, with_longs(rows, _LONGS))


def input_id(value: Column) -> Column:
    """The input a value stands for: itself, or for the copier's output -(v + 1), v."""
    return F.when(value < 0, -value - 1).otherwise(value)


_REACH = ("max_read_offset", "drain_max_offset", "drain_end")


def driver_facts(
    fr: AnalysisFrames, offsets: bool
) -> tuple[tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...]]:
    """What value_kernel.Config ships, in one job: per partition some read or the
    final drain reached, (topic, partition, max_read_offset, drain_max_offset,
    drain_end); and with `offsets`, the groups' final offsets, (role, topic,
    partition, committed). (Two collects cost a job's planning and scheduling more.)"""
    ends = fr.drain_ends.withColumnRenamed("end_offset", "drain_end")
    rows = (
        read_reach(fr)
        .join(ends, TP, "full")
        .select(
            F.lit(None).cast("string").alias("role"),
            *TP,
            *_REACH,
            F.lit(None).cast("long").alias("committed"),
        )
    )
    if offsets:
        found = fr.group_offsets.select(
            "role", *TP, *[F.lit(None).cast("long").alias(c) for c in _REACH], "committed"
        )
        # A group's rows carry its role, never null (history_frames._group_offsets).
        rows = rows.unionByName(found)
    reach, committed = [], []
    for r in rows.collect():
        if r["role"] is not None:
            committed.append((r["role"], r["topic"], r["partition"], r["committed"]))
        elif r["topic"] is not None and r["partition"] is not None:
            reach.append((r["topic"], r["partition"], *(r[c] for c in _REACH)))
    return tuple(reach), tuple(committed)


def value_rows(fr: AnalysisFrames) -> DataFrame:
    """(type, key, detail) rows of every value-keyed check, built once per analysis."""

    def build() -> DataFrame:
        groups = fr.consumer_offsets or fr.copier_offsets or fr.app_present
        reach, offsets = driver_facts(fr, groups)
        cfg = Config(reach, fr.reader_polls, fr.failed_sends, offsets)

        def per_bucket(_: tuple[Any, ...], t: pa.Table) -> pa.Table:
            return kernel(cfg, t)

        buckets = max(1, -(-fr.lines // LINES_PER_BUCKET))
        bucket = F.pmod(F.xxhash64(input_id(F.col("value"))), F.lit(buckets)).alias("bucket")
        return value_input(fr).groupBy(bucket).applyInArrow(per_bucket, OUT_SCHEMA)

    return fr.shared("value_rows", build)


def value_frame(fr: AnalysisFrames, checks: tuple[str, ...]) -> DataFrame:
    """(type, key, detail) rows of `checks`, as checks/runner.py tags every check's."""
    rows = value_rows(fr).filter(F.col("type").isin(*checks))
    if "torn-txn" in checks and fr.txn_ops:
        rows = rows.unionByName(torn_txns(fr))
    if "app-output-reorder" in checks and fr.app_present:
        rows = rows.unionByName(app_reorders(fr))
    return rows


def app_reorders(fr: AnalysisFrames) -> DataFrame:
    """app-output-reorder: the kernel's APP_FIRST rows (each input's first output in
    an output partition, with where the input sits), judged per output partition by
    order_kernel.py."""
    firsts = (
        value_rows(fr)
        .filter(F.col("type") == APP_FIRST)
        .select(F.from_json("detail", FIRST_SCHEMA).alias("f"))
        .select("f.*")
    )

    def per_partition(_: tuple[Any, ...], t: pa.Table) -> pa.Table:
        return reorders(t)

    return firsts.groupBy(*TP).applyInArrow(per_partition, OUT_SCHEMA)


_MISSING = "value long, lost boolean"


def torn_txns(fr: AnalysisFrames) -> DataFrame:
    """torn-txn: a transaction that must have committed (ok, or info with a value the
    drain read) of which reads saw some values while others are proven gone
    (lost-write's proof: a read past the offset, or the drain's end). A value that is
    only unseen proves nothing yet: it makes the verdict unknown through `unseen`
    instead. Only transactions with a lost value are counted whole: their sends,
    against the kernel's rows of their unread ones."""
    missing = value_rows(fr).filter(F.col("type") == TXN_MISSING)
    unread = (
        missing.select(
            F.col("key").cast("long").alias("index"), F.from_json("detail", _MISSING).alias("m")
        )
        .groupBy("index")
        .agg(
            F.count("*").alias("unread"),
            F.count(F.when(F.col("m.lost"), 1)).alias("lost"),
            F.sort_array(F.collect_list("m.value")).alias("missing"),
        )
        .filter(F.col("lost") > 0)
    )
    sends = (
        committed_sends(fr)
        .filter(F.col("f") == "txn")
        .join(F.broadcast(unread.select("index")), "index", "left_semi")
        .groupBy("index", "process", "outcome")
        .agg(F.count("*").alias("values"))
    )
    seen = (F.col("values") - F.col("unread")).alias("seen")
    torn = (
        sends.join(F.broadcast(unread), "index")
        .select("index", "process", "outcome", "values", seen, "lost", "missing")
        .filter(F.col("seen") > 0)
    )
    detail = F.to_json(F.struct(*[F.col(c) for c in torn.columns]))
    return torn.select(F.lit("torn-txn").alias("type"), detail.alias("key"), detail.alias("detail"))


def values_of(fr: AnalysisFrames, check: str) -> DataFrame:
    """value: the values `check` found (lost-write's lost, unseen's unseen)."""
    return value_frame(fr, (check,)).select(F.col("key").cast("long").alias("value"))
