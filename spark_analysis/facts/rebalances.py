"""The rebalance events that bound each consumer's assignments: the per-partition
kernel (checks/partition_kernel.py), which judges every read's position, starts from
them."""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
from kafka_trial.spark_analysis.read.history_parse import REBALANCE_FS
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def _rebalance_events(fr: AnalysisFrames) -> DataFrame:
    """One row per rebalance event and partition number it moved: process, partition,
    `at` (the op from which the new assignment holds) and `exempt` (whether `at` is a
    poll whose records of that partition are not judged).

    The group workload records assign / revoke / lost after the poll during which the
    client ran the callback, so an event that directly follows a poll of its process
    belongs to that poll: the poll may return records from before and after the move,
    so its records of the moved partitions are exempt (as Jepsen exempts a partition
    whose assignment changed during the op) and the new assignment holds from that poll
    on. Any other event (a close's revoke, after a crash or a leave) takes effect from
    its own op on.

    A rebalance names partition numbers without their topic: a group member reads one
    topic. Partitions no event names stay judged."""
    # The anchor of an event is the last op of its process before it that is not an
    # event itself; only processes that have events need the window.
    with_events = fr.rebalances.select("process").distinct()
    ops = fr.ops.join(fr.small(with_events), "process")
    by_time = (
        Window.partitionBy("process").orderBy("index").rowsBetween(Window.unboundedPreceding, -1)
    )
    not_event = ~F.col("f").isin(*REBALANCE_FS)
    anchor = F.last(F.when(not_event, F.struct("index", "f", "type")), ignorenulls=True).over(
        by_time
    )
    anchored = ops.withColumn("anchor", anchor).select("process", "index", "anchor")
    after_poll = (F.col("anchor.f") == "poll") & (F.col("anchor.type") == "ok")
    return fr.rebalances.join(anchored, ["process", "index"]).select(
        "process",
        "partition",
        F.when(after_poll, F.col("anchor.index")).otherwise(F.col("index")).alias("at"),
        F.coalesce(after_poll, F.lit(False)).alias("exempt"),
    )


def rebalance_events(fr: AnalysisFrames) -> DataFrame:
    """`_rebalance_events`, computed once per analysis (checks/partition_pass.py ships
    them to the per-partition kernel)."""
    return fr.shared("rebalance_events", lambda: _rebalance_events(fr))
