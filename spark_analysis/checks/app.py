"""Checks of the application on trial: a black box between the run's topic
(the input, judged by every other check) and its output topic, whose records each
carry the id of the input they came from. The output drain's records are
`Frames.app_output`, kept out of the input's reads (history_frames). The checks of
one input's outputs (lost, duplicate, unexpected) are the value pass's
(value_kernel.py); here are the facts they and undecided.py share, and the order of
each output partition.

Which of these a run allows is its declared guarantee's business
(checkers/app_guarantees.py); what the history cannot decide (outputs without an id,
an app that did not catch up, an output not read to its end) is undecided.py's.
"""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.derived import committed_sends, version_order
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, check
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

APP_ROLE = "app"  # the app group's group-offsets op


def _with_app(fr: AnalysisFrames, found: DataFrame) -> DataFrame:
    """Without an app in the history, an empty relation: the optimizer then drops the
    check's whole plan, so a run without an app reads nothing for it."""
    return found if fr.app_present else found.limit(0)


def app_ids(fr: AnalysisFrames) -> DataFrame:
    """The output records that carry an id (one without is undecided, never judged)."""
    return fr.app_output.filter(F.col("value").isNotNull())


def app_offsets(fr: AnalysisFrames) -> DataFrame:
    """The app group's final committed offsets: topic, partition, committed."""
    return fr.group_offsets.filter(F.col("role") == APP_ROLE).drop("role")


def consumed_inputs(fr: AnalysisFrames) -> DataFrame:
    """Inputs that must have committed, with `committed`, the app group's committed
    offset of their partition (null where it committed none), and `below`, whether
    the group committed past them: the app consumed them, so each owes an output."""
    return (
        committed_sends(fr)
        .filter(F.col("offset").isNotNull())
        .join(fr.small(app_offsets(fr)), TP, "left")
        .withColumn("below", F.coalesce(F.col("offset") < F.col("committed"), F.lit(False)))
        .select("value", *TP, "offset", "committed", "below")
    )


def missing_inputs(fr: AnalysisFrames) -> DataFrame:
    """`consumed_inputs` that no output record carries."""
    out = app_ids(fr).select("value").distinct()
    return consumed_inputs(fr).join(out, "value", "left_anti")


def _input_positions(fr: AnalysisFrames) -> DataFrame:
    """value -> key_topic, key_partition, input_offset: where the input sits, the lowest
    position the version order (what reads returned, where committed sends were told)
    holds it at; its partition is its key (the producer keys each value by it)."""
    inp = F.min(F.struct("topic", "partition", "offset")).alias("inp")
    return (
        version_order(fr)
        .filter(F.col("value").isNotNull())
        .groupBy("value")
        .agg(inp)
        .select(
            "value",
            F.col("inp.topic").alias("key_topic"),
            F.col("inp.partition").alias("key_partition"),
            F.col("inp.offset").alias("input_offset"),
        )
    )


@check("app-output-reorder")
def app_output_reorder(fr: AnalysisFrames) -> DataFrame:
    """In one output partition, each input's first output, per key in output order: an
    adjacent pair whose inputs sit the other way round in their partition. Later
    outputs of an input are redeliveries (duplicates), not reorders."""
    firsts = (
        app_ids(fr)
        .groupBy("value", *TP)
        .agg(F.min("offset").alias("offset"))
        .join(_input_positions(fr), "value")
    )
    w = Window.partitionBy(*TP, "key_topic", "key_partition").orderBy("offset", "value")
    pairs = (
        firsts.select(
            "*",
            F.lag("value").over(w).alias("prev_value"),
            F.lag("offset").over(w).alias("prev_offset"),
            F.lag("input_offset").over(w).alias("prev_input_offset"),
        )
        .filter(F.col("prev_input_offset") > F.col("input_offset"))
        .select(
            *TP,
            "key_topic",
            "key_partition",
            "prev_value",
            "prev_offset",
            "prev_input_offset",
            "value",
            "offset",
            "input_offset",
            F.lit("key order").alias("reason"),
        )
    )
    return _with_app(fr, pairs)
