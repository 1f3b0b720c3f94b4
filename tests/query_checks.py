"""The queries the per-partition kernel replaced (spark_analysis/checks/
partition_kernel.py), kept as a second opinion: tests/unit/test_partition_kernel.py
holds the kernel to them, row for row, beside the plain-Python reference. They are
the queries as they stood in package code, over the same shared frames."""

from __future__ import annotations

from collections.abc import Callable

from kafka_trial.spark_analysis.checks.reads import _pairs, known_between
from kafka_trial.spark_analysis.facts.derived import acked_sends, version_order, writes
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames
from pyspark.sql import DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

QUERIES: dict[str, Callable[[AnalysisFrames], DataFrame]] = {}


def query(name: str) -> Callable:
    def register(fn: Callable[[AnalysisFrames], DataFrame]) -> Callable:
        QUERIES[name] = fn
        return fn

    return register


@query("inconsistent-offsets")
def inconsistent_offsets(fr: AnalysisFrames) -> DataFrame:
    return (
        version_order(fr)
        .groupBy(*TP, "offset")
        .agg(F.sort_array(F.collect_set("value")).alias("values"))
        .filter(F.size("values") > 1)
    )


def _acked_offsets_backwards(
    fr: AnalysisFrames, w: WindowSpec, keys: list[str], of_clients: bool = False
) -> DataFrame:
    """Acknowledged sends whose offset is below the previous one's in window `w`
    (adjacent pairs), with the previous send; `of_clients`: only sends that record
    their client."""
    acked = acked_sends(fr).filter(F.col("offset").isNotNull())
    if of_clients:
        acked = acked.filter(F.col("client").isNotNull())
    return (
        acked.withColumn("prev_value", F.lag("value").over(w))
        .withColumn("prev_offset", F.lag("offset").over(w))
        .filter(F.col("prev_offset") > F.col("offset"))
        .select(*keys, *TP, "prev_value", "prev_offset", "value", "offset")
    )


@query("reorder")
def reorder(fr: AnalysisFrames) -> DataFrame:
    w = Window.partitionBy("process", *TP).orderBy("index", "pos")
    return _acked_offsets_backwards(fr, w, ["process"])


def _adjacent_sends(fr: AnalysisFrames) -> DataFrame:
    """Each send of an op paired with the op's previous send to the same partition,
    both at known positions (`send_positions`): `prev_value`, `prev_offset`, and
    `offset`, where the send sits."""

    def build() -> DataFrame:
        w = Window.partitionBy("index", *TP).orderBy("pos")
        return (
            send_positions(fr)
            .select("index", "process", *TP, "pos", "value", F.col("at").alias("offset"))
            .withColumn("prev_value", F.lag("value").over(w))
            .withColumn("prev_offset", F.lag("offset").over(w))
            .filter(F.col("prev_offset").isNotNull())
        )

    return fr.shared("adjacent_sends", build)


@query("int-nonmonotonic-send")
def int_nonmonotonic_send(fr: AnalysisFrames) -> DataFrame:
    """Within one op, a later send to a partition sits at a lower offset: its
    acknowledged offset, or, where it has none, the offset at which reads found it."""
    return (
        _adjacent_sends(fr)
        .filter(F.col("prev_offset") > F.col("offset"))
        .select("index", "process", *TP, "prev_value", "prev_offset", "value", "offset")
    )


@query("int-send-skip")
def int_send_skip(fr: AnalysisFrames) -> DataFrame:
    """Within one op, two consecutive sends to a partition sit at offsets with a record
    known between them (any record the version order holds: a transaction's aborted
    record too, which is in the log all the same). Normal for a client with several
    sends in flight beside other clients' (Jepsen allows it), so allowed by default."""
    keys = ["index", "process", *TP, "prev_value", "prev_offset", "value", "offset"]
    gaps = _adjacent_sends(fr).filter(F.col("offset") > F.col("prev_offset") + 1).select(*keys)
    known = version_order(fr).select(
        *TP, F.col("offset").alias("skipped_offset"), F.col("value").alias("skipped_value")
    )
    # A copy of one of the two sends' own values between them is no third record.
    return known_between(gaps, keys, known, other_than=("prev_value", "value"))


@query("client-reorder")
def client_reorder(fr: AnalysisFrames) -> DataFrame:
    """Claim C7: what one client was asked to send in order, in its produce() order
    (`seq`), whichever of its processes asked. Sends that do not record their client
    (other tools' histories, transactions) are not judged here."""
    w = Window.partitionBy("client", *TP).orderBy("seq")
    return _acked_offsets_backwards(fr, w, ["client"], of_clients=True)


@query("nonmonotonic-poll")
def nonmonotonic_poll(fr: AnalysisFrames) -> DataFrame:
    """A consumer read an offset at or below one its previous read, in an earlier op,
    had returned (no rebalance in assign mode; a replaced consumer has a new process id)."""
    return (
        _pairs(fr, within_op=False)
        .filter(F.col("offset") <= F.col("prev_offset"))
        .select(
            "process", *TP, "prev_index", "prev_offset", "prev_value", "index", "offset", "value"
        )
    )


@query("int-nonmonotonic-poll")
def int_nonmonotonic_poll(fr: AnalysisFrames) -> DataFrame:
    """Within one op, a record of a partition at or below the one just before it."""
    return (
        _pairs(fr, within_op=True)
        .filter(F.col("offset") <= F.col("prev_offset"))
        .select("index", "process", *TP, "prev_offset", "prev_value", "offset", "value")
    )


def send_positions(fr: AnalysisFrames) -> DataFrame:
    """Sends with `at`, the offset the send sits at in its partition: its own offset if
    it must have committed and the offset is known, else the lowest offset the version
    order holds its value at there (as Jepsen orders one op's sends). Sends at no known
    position are left out."""
    sends = writes(fr).filter(F.col("partition").isNotNull())
    own = F.when(F.col("must_commit"), F.col("offset"))
    # Only the few sends without an offset of their own look themselves up, and what
    # they find is a broadcast side: the sends are not sorted for a join.
    wanted = sends.filter(own.isNull()).select("value").distinct()
    found = (
        version_order(fr)
        .join(fr.small(wanted), "value", "left_semi")
        .groupBy("value", *TP)
        .agg(F.min("offset").alias("found"))
    )
    return (
        sends.join(fr.small(found), ["value", *TP], "left")
        .withColumn("at", F.coalesce(own, F.col("found")))
        .filter(F.col("at").isNotNull())
        .drop("found")
    )
