"""Checks of consumer groups and the exactly-once copier (claims C11, C16-C19)."""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.derived import committed_sends, version_order
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, check
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


@check("group-missed")
def group_missed(fr: AnalysisFrames) -> DataFrame:
    """A value that must have committed, below the group's final committed offset,
    that the group's application never processed."""
    found = (
        committed_sends(fr)
        .filter(F.col("offset").isNotNull())
        .join(fr.small(fr.group_offsets.filter(F.col("role") == "consumer")), TP)
        .filter(F.col("offset") < F.col("committed"))
        .join(fr.processed.select("value").distinct(), "value", "left_anti")
        .select("value", *TP, "offset", "committed")
    )
    return found if fr.consumer_offsets else _nothing(found)


def _nothing(found: DataFrame) -> DataFrame:
    """`found`'s columns and no row, planned as an empty relation: nothing of what it
    would have read (the committed sends' cache, the version order) is built."""
    return found.limit(0)


@check("group-redelivered")
def group_redelivered(fr: AnalysisFrames) -> DataFrame:
    """A value the group's application processed more than once: deliveries are
    records in process micro-ops, so one op that handled a value twice counts too."""
    return (
        fr.processed.groupBy("value")
        .agg(
            F.count("*").alias("times"),
            F.countDistinct("index").alias("ops"),
            F.sort_array(F.collect_set("process")).alias("processes"),
        )
        .filter(F.col("times") > 1)
    )


def _copier_input(fr: AnalysisFrames) -> DataFrame:
    """Input values that must have committed and that the copier group committed past:
    each must appear in the output, as -(v + 1)."""
    found = (
        committed_sends(fr)
        .filter((F.col("value") >= 0) & F.col("offset").isNotNull())
        .join(fr.small(fr.group_offsets.filter(F.col("role") == "copier")), TP)
        .filter(F.col("offset") < F.col("committed"))
        .select("value", *TP, "offset", "committed")
    )
    return found if fr.copier_offsets else _nothing(found)


@check("eos-output-lost")
def eos_output_lost(fr: AnalysisFrames) -> DataFrame:
    out = fr.reads.filter(F.col("value") < 0).select((-F.col("value") - 1).alias("value"))
    return _copier_input(fr).join(out.distinct(), "value", "left_anti")


@check("eos-output-duplicate")
def eos_output_duplicate(fr: AnalysisFrames) -> DataFrame:
    """Any input value whose output appears at two or more positions of the output
    (from the version order: what reads returned and what committed sends were told),
    whether or not the input was acknowledged or committed past: once is the promise."""
    found = (
        version_order(fr)
        .filter(F.col("value") < 0)
        .groupBy((-F.col("value") - 1).alias("value"))
        .agg(
            F.count("*").alias("copies"),
            F.sort_array(F.collect_list(F.struct(*TP, "offset"))).alias("at"),
        )
        .filter(F.col("copies") > 1)
    )
    return found if fr.negative_values else _nothing(found)
