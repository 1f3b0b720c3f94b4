"""The facts a history proves, derived once per analysis before any check runs (as
Jepsen's `analysis` derives writes-by-type, reads-by-type, must-have-committed?,
version-orders).

Every check starts from these frames: the query checks, and the kernels' passes
(checks/partition_pass.py, checks/value_pass.py), whose inputs are built from
`writes` and whose per-partition facts are `read_reach` and `drain_frontier`. So no
two checks can disagree about what "committed", "how far the drain read" or "where a
record sits" means. The plain-Python
reference (tests/reference_checker.py) derives the same facts on its own, and the
differential test holds the two together.

- `writes`: every send with `must_commit`, whether it must have committed: acknowledged
  (`ok`), or sent in a transaction that ended `info` of which the final drain, a
  read_committed reader, read some value that no other op may have sent (a reader
  that saw one value of a transaction saw it commit; consumers may read
  read_uncommitted, so only the drain's reads prove it).
- `version_order`: per partition, offset -> value, from every record any read
  returned (whatever its op's outcome: a poller returns what the log holds) and every
  send that must have committed whose offset is known.
- `drain_frontier`: per partition, how far the final drain is proven to have read:
  its end markers and the records it returned.
- Where each send sits in its partition (its own offset, or where the version order
  holds its value) is the per-partition kernel's (checks/partition_kernel.py).
- Read positions are columns of `reads`: (index, mpos, rpos) orders one op's records.
"""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def is_drain() -> Column:
    return F.col("role").eqNullSafe("drain")


def unknown_txn_sends(fr: AnalysisFrames) -> DataFrame:
    """Sends of transactions that ended `info`: few, and none in most runs."""
    return fr.shared(
        "unknown_txns",
        lambda: fr.sends.filter((F.col("f") == "txn") & (F.col("outcome") == "info")).select(
            "index", "value"
        ),
    )


def proven_txns(fr: AnalysisFrames) -> DataFrame:
    """Transactions that ended `info` of which the drain read a value that no other op
    may have written: they committed. A value that another op's send, not failed, also
    carries (an exactly-once copier's retry of the same input, a resend) proves nothing
    about this one: the drain may have read the other's copy."""

    def build() -> DataFrame:
        unknown = unknown_txn_sends(fr)
        writers = (
            fr.sends.filter(F.col("outcome") != "fail")
            .join(fr.small(unknown.select("value").distinct()), "value", "left_semi")
            .groupBy("value")
            .agg(F.countDistinct("index").alias("writers"))
            .filter(F.col("writers") == 1)
            .select("value")
        )
        sole = unknown.join(writers, "value", "left_semi")
        drained = fr.reads.filter(is_drain()).join(fr.small(sole), "value", "left_semi")
        return sole.join(drained.select("value"), "value", "left_semi").select("index")

    return fr.shared("proven_txns", build)


def writes(fr: AnalysisFrames) -> DataFrame:
    """Every send (history_frames' `sends`) with `must_commit`."""
    acked = F.col("outcome") == "ok"
    if not fr.maybe_unknown_txn:
        # No transaction of unknown outcome (most runs): a projection of the sends'
        # cache, nothing to join or cache again.
        return fr.sends.withColumn("must_commit", acked)

    def build() -> DataFrame:
        proven = proven_txns(fr).distinct().withColumn("proven", F.lit(True))
        return (
            fr.sends.join(fr.small(proven), "index", "left")
            .withColumn("must_commit", acked | F.coalesce(F.col("proven"), F.lit(False)))
            .drop("proven")
        )

    return fr.shared("writes", build)


def committed_sends(fr: AnalysisFrames) -> DataFrame:
    return fr.shared("committed", lambda: writes(fr).filter(F.col("must_commit")))


def read_reach(fr: AnalysisFrames) -> DataFrame:
    """Per partition any ok read returned a record of: `max_read_offset`, the highest
    offset any read returned, and `drain_max_offset`, the drain's (one pass for both)."""

    def build() -> DataFrame:
        return fr.reads.groupBy(*TP).agg(
            F.max("offset").alias("max_read_offset"),
            F.max(F.when(is_drain(), F.col("offset"))).alias("drain_max_offset"),
        )

    return fr.shared("read_reach", build)


def version_order(fr: AnalysisFrames) -> DataFrame:
    """(value, topic, partition, offset), distinct: what each offset is known to hold.
    A record whose value did not decode has a null value."""

    def build() -> DataFrame:
        sent = (
            committed_sends(fr)
            .filter(F.col("offset").isNotNull() & F.col("partition").isNotNull())
            .select("value", *TP, "offset")
        )
        return fr.polled.select("value", *TP, "offset").unionByName(sent).distinct()

    return fr.shared("version_order", build)


def drain_frontier(fr: AnalysisFrames) -> DataFrame:
    """Per partition the drain touched: `drain_end` (its end marker: it read the
    partition to its end there; null if it never did), `drain_max_offset` (the highest
    offset it returned) and `frontier`, the first offset it is not proven to have read."""

    def build() -> DataFrame:
        returned = (
            read_reach(fr).filter(F.col("drain_max_offset").isNotNull()).drop("max_read_offset")
        )
        ends = fr.drain_ends.withColumnRenamed("end_offset", "drain_end")
        return returned.join(ends, TP, "full").withColumn(
            "frontier", F.greatest("drain_end", F.col("drain_max_offset") + 1)
        )

    return fr.shared("drain_frontier", build)


def never_written_values(fr: AnalysisFrames) -> DataFrame:
    """Values none of whose sends could have committed (every send failed): a value
    sent again (a copier's re-copy, an application's resend) is maybe written if any
    of its sends was ok or info."""
    if not fr.failed_sends:
        # No send failed (most runs): none, and what joins them plans to nothing.
        return fr.sends.select("value").limit(0)

    def build() -> DataFrame:
        by_value = fr.sends.groupBy("value").agg(
            F.max(F.when(F.col("outcome") != "fail", 1).otherwise(0)).alias("maybe_written")
        )
        return by_value.filter(F.col("maybe_written") == 0).select("value")

    return fr.shared("never_written", build)
