"""A fenced producer session's writes: once a takeover of a transactional.id has
completed (nemesis op hijack-txn, `ok`), the session that held the id has a stale
epoch, and no transaction it begins after that may commit (claim: Kafka's
transactional fencing)."""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.derived import is_drain
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, check
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

_FENCES = StructType(
    [
        StructField("client", LongType()),
        StructField("fence_index", LongType()),
        StructField("fence_time", LongType()),
        StructField("transactional_id", StringType()),
    ]
)


def _first_fences(fr: AnalysisFrames) -> DataFrame:
    """Per fenced client, the takeover that fenced it first (fr.fences is by time)."""
    first: dict[int, tuple[int, int, int, str | None]] = {}
    for f in fr.fences:
        first.setdefault(f.client, (f.client, f.index, f.time, f.transactional_id))
    return fr.ops.sparkSession.createDataFrame(list(first.values()), _FENCES)


def _invoked_at(fr: AnalysisFrames, ops: DataFrame) -> DataFrame:
    """(process, index, invoked_at) for the given ops (process, index): the time of the
    op's invoke, the op of its process just before a completion (a process has one op
    outstanding), or the op itself if it never completed. Only their processes' ops
    are ordered."""
    procs = ops.select("process").distinct()
    by_process = Window.partitionBy("process").orderBy("index")
    lines = fr.ops.filter(F.col("process") != "nemesis").join(fr.small(procs), "process")
    invoked = F.when(F.col("type") == "invoke", F.col("time")).when(
        F.lag("type").over(by_process) == "invoke", F.lag("time").over(by_process)
    )
    return (
        lines.select("process", "index", invoked.alias("invoked_at"))
        .join(ops, ["process", "index"], "left_semi")
        .filter(F.col("invoked_at").isNotNull())
    )


@check("fenced-write")
def fenced_write(fr: AnalysisFrames) -> DataFrame:
    """A value of a transaction that a fenced session (a takeover's `client`) invoked
    after the takeover completed, observed committed: `reason` "committed" (the
    transaction ended ok) or "drain read" (the final drain, read_committed, returned
    it, and no other op's send that did not fail carried the value: a copier's retry of
    the same input, under a session not fenced, may have committed it)."""
    cols = ["value", *TP, "offset", "index", "process", "client", "outcome"]
    txn = fr.sends.filter((F.col("f") == "txn") & F.col("client").isNotNull()).select(*cols)
    if not fr.fences:
        # No takeover named a session (most runs): nothing is fenced, and nothing runs.
        return txn.limit(0)
    fenced = txn.join(fr.small(_first_fences(fr)), "client")
    ops = fenced.select("process", "index").distinct()
    after = fenced.join(_invoked_at(fr, ops), ["process", "index"]).filter(
        F.col("invoked_at") > F.col("fence_time")
    )
    others = (
        fr.sends.filter(F.col("outcome") != "fail")
        .select("value", F.col("index").alias("other_index"))
        .join(after.select("value"), "value", "left_semi")
    )
    # Values another op also sent, and not as a failure: a read of them proves nothing.
    shared = (
        after.select("value", "index")
        .join(others, "value")
        .filter(F.col("other_index") != F.col("index"))
        .select("value", "index")
        .distinct()
        .withColumn("shared", F.lit(1))
    )
    drained = fr.reads.filter(is_drain()).select("value").distinct()
    reason = (
        F.when(F.col("outcome") == "ok", "committed")
        .when(F.col("drained").isNotNull() & F.col("shared").isNull(), "drain read")
        .otherwise(None)
    )
    judged = (
        after.join(drained.withColumn("drained", F.lit(1)), "value", "left")
        .join(shared, ["value", "index"], "left")
        .withColumn("reason", reason)
        .filter(F.col("reason").isNotNull())
    )
    # One row per value (the unit): its first op, should two fenced sends carry it.
    keep = [*TP, "offset", "index", "process", "client", "transactional_id"]
    keep += ["fence_index", "fence_time", "invoked_at", "outcome", "reason"]
    first = F.min(F.struct("index", *[c for c in keep if c != "index"])).alias("w")
    return judged.groupBy("value").agg(first).select("value", *[F.col(f"w.{c}") for c in keep])
