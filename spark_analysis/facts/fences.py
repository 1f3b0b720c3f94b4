"""A fenced producer session's writes: once a takeover of a transactional.id has
completed (nemesis op hijack-txn, `ok`), the session that held the id has a stale
epoch, and no transaction it begins after that may commit (claim: Kafka's
transactional fencing). Here, which sends such a session invoked after its fence;
the value pass judges whether any was observed committed (fenced-write)."""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames
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


def first_fences(fr: AnalysisFrames) -> DataFrame:
    """Per fenced client, the takeover that fenced it first (fr.fences is by time)."""
    first: dict[int, tuple[int, int, int, str | None]] = {}
    for f in fr.fences:
        first.setdefault(f.client, (f.client, f.index, f.time, f.transactional_id))
    return fr.ops.sparkSession.createDataFrame(list(first.values()), _FENCES)


def invoked_at(fr: AnalysisFrames, ops: DataFrame) -> DataFrame:
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


def fenced_sends(fr: AnalysisFrames) -> DataFrame:
    """The transactional sends a fenced session (a takeover's `client`) invoked after
    the takeover that fenced it first completed: value, topic, partition, offset,
    index, process, client, outcome, transactional_id, fence_index, fence_time and
    invoked_at. The value pass judges which of them were observed committed
    (value_kernel.py's fenced-write). Only with a takeover that named a session."""
    cols = ["value", *TP, "offset", "index", "process", "client", "outcome"]
    txn = fr.sends.filter((F.col("f") == "txn") & F.col("client").isNotNull()).select(*cols)
    fenced = txn.join(fr.small(first_fences(fr)), "client")
    ops = fenced.select("process", "index").distinct()
    return fenced.join(invoked_at(fr, ops), ["process", "index"]).filter(
        F.col("invoked_at") > F.col("fence_time")
    )
