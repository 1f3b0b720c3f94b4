"""What the checks of the application on trial share with undecided.py. The app is a
black box between the run's topic (the input, judged by every other check) and its
output topic, whose records each carry the id of the input they came from. The output
drain's records are `Frames.app_output`, kept out of the input's reads
(history_frames). Its checks are the value pass's (value_kernel.py: lost, duplicate,
unexpected; order_kernel.py: the order of each output partition).

Which of these a run allows is its declared guarantee's business
(checkers/app_guarantees.py); what the history cannot decide (outputs without an id,
an app that did not catch up, an output not read to its end) is undecided.py's.
"""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.derived import committed_sends
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

APP_ROLE = "app"  # the app group's group-offsets op


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
