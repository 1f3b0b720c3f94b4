"""The one pass behind the per-partition checks: the sends and the polled records
shuffled once by (topic, partition), and partition_kernel.py's function applied to
each partition as Arrow record batches (`applyInArrow`'s iterator form: a worker holds
a partition as the few numpy columns the kernel keeps, never whole). What spans
partitions comes in beforehand: `must_commit` on each send (facts/derived.py's
`writes`) and the rebalance events, a few rows collected to the driver and shipped
with the function."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from kafka_trial.spark_analysis.checks import kernel_columns, partition_kernel
from kafka_trial.spark_analysis.checks.kernel_columns import OUT_SCHEMA
from kafka_trial.spark_analysis.checks.partition_kernel import (
    READ_CHECKS,
    Config,
    kernel,
)
from kafka_trial.spark_analysis.facts.derived import never_written_values, writes
from kafka_trial.spark_analysis.facts.rebalances import rebalance_events
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# Shipped by value: a standalone cluster's Python workers need not have kafka_trial.
cloudpickle.register_pickle_by_value(kernel_columns)
cloudpickle.register_pickle_by_value(partition_kernel)

_LONGS = ("partition", "value", "offset", "index", "pos", "client", "seq", "mpos", "rpos")


def record_rows(df: DataFrame, tag: Column, *flags: Column | str) -> DataFrame:
    """The columns every kernel's input row has (where a record sits and which op it
    is of), after `tag` (what kind of row it is) and before the kernel's own `flags`."""
    return df.select(tag, *TP, "value", "offset", "index", "process", *flags)


def with_longs(rows: DataFrame, longs: tuple[str, ...]) -> DataFrame:
    """One integer type for every number: the kernels fill nulls with int64's minimum."""
    return rows.select(*[F.col(c).cast("long") if c in longs else F.col(c) for c in rows.columns])


def one_partition(fr: AnalysisFrames, rows: DataFrame) -> DataFrame:
    """A kernel's input rows, a union, as one partition again where the analysis is
    one task: its grouping then needs no shuffle (spark/sizing.py's one-task settings
    leave a union one partition per input)."""
    return rows.coalesce(1) if fr.one_task else rows


def kernel_input(fr: AnalysisFrames, skips: bool = True) -> DataFrame:
    """The kernel's rows: every send with must_commit and acked, every polled record
    with judged, ok and, for the skips (`skips`), never_written (partition_kernel.py);
    the strings they are decided by stay here."""
    must = F.coalesce(F.col("must_commit"), F.lit(False))
    sends = record_rows(
        writes(fr),
        F.lit(True).alias("is_send"),
        "pos",
        "client",
        "seq",
        must.alias("must_commit"),
        (must & (F.col("outcome") == "ok")).alias("acked"),
    )
    polled = record_rows(
        fr.polled,
        F.lit(False).alias("is_send"),
        "mpos",
        "rpos",
        ((F.col("type") == "ok") & (F.col("f") == "poll")).alias("judged"),
        (F.col("type") == "ok").alias("ok"),
    )
    if skips:
        # Value-keyed, so it spans partitions: decided here, shipped as a flag.
        failed = never_written_values(fr).withColumn("never_written", F.lit(True))
        polled = polled.join(fr.small(failed), "value", "left")
    rows = sends.unionByName(polled, allowMissingColumns=True)
    return one_partition(fr, with_longs(rows, _LONGS))


def kernel_config(fr: AnalysisFrames, checks: tuple[str, ...]) -> Config:
    """What every partition's kernel is shipped: `checks`, and the rebalance events
    when a read check is among them."""
    events: tuple[tuple[str, int, int, bool], ...] = ()
    if fr.rebalanced and READ_CHECKS & set(checks):
        got = rebalance_events(fr).collect()
        events = tuple(
            (r["process"], int(r["partition"]), int(r["at"]), bool(r["exempt"]))
            for r in got
            if r["partition"] is not None and r["at"] is not None
        )
    return Config(tuple(checks), events)


def kernel_frame(fr: AnalysisFrames, checks: tuple[str, ...]) -> DataFrame:
    """(type, key, detail) rows of `checks`, as checks/runner.py tags every check's."""
    cfg = kernel_config(fr, checks)

    # Typed as batches in and out, so Spark hands the kernel a partition a record
    # batch at a time (applyInArrow's iterator form) instead of one table of it all.
    def per_partition(
        key: tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]
    ) -> Iterator[pa.RecordBatch]:
        return kernel(cfg, key, batches)

    skips = bool({"poll-skip", "int-poll-skip"} & set(checks))
    return kernel_input(fr, skips).groupBy(*TP).applyInArrow(per_partition, OUT_SCHEMA)
