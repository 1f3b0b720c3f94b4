"""The query checks of transactions: torn and precommitted reads. The other checks of
what was written against what was read (claims C1-C13) are the kernels' (value_kernel.py
and partition_kernel.py)."""

from __future__ import annotations

from kafka_trial.spark_analysis.checks.value_pass import values_of
from kafka_trial.spark_analysis.facts.derived import committed_sends, read_values
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, check
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


@check("torn-txn")
def torn_txn(fr: AnalysisFrames) -> DataFrame:
    """A transaction that must have committed (ok, or info with a value the drain read)
    of which reads saw some values while others are proven gone (lost-write's proof: a
    read past the offset, or the drain's end). A value that is only unseen proves
    nothing yet: it makes the verdict unknown through `unseen` instead."""
    txn_sends = committed_sends(fr).filter(F.col("f") == "txn")
    if not fr.txn_ops:
        # No transaction (most runs): no distinct of every value read to join it with.
        return txn_sends.select("index", "process", "outcome")
    seen = read_values(fr).withColumn("seen", F.lit(1))
    lost = values_of(fr, "lost-write").withColumn("lost", F.lit(1))
    missing = F.when(F.col("seen").isNull(), F.col("value"))
    return (
        txn_sends.join(seen, "value", "left")
        .join(lost, "value", "left")
        .groupBy("index", "process", "outcome")
        .agg(
            F.count("*").alias("values"),
            F.count("seen").alias("seen"),
            F.count("lost").alias("lost"),
            F.sort_array(F.collect_list(missing)).alias("missing"),
        )
        .filter((F.col("seen") > 0) & (F.col("lost") > 0))
    )


@check("precommitted-read")
def precommitted_read(fr: AnalysisFrames) -> DataFrame:
    """A transaction's own poll returned a value that the same transaction sent,
    whatever the transaction's outcome."""
    own = fr.sends.filter(F.col("f") == "txn").select("index", "value")
    return (
        fr.txn_polls.join(own, ["index", "value"])
        .select("value", *TP, "offset", "index", "process", "type")
        .distinct()
    )
