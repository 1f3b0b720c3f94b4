"""Checks of what was written against what was read: losses, duplicates, offsets,
aborted and transactional reads (claims C1-C13)."""

from __future__ import annotations

from kafka_trial.spark_analysis.facts.derived import (
    committed_sends,
    drain_frontier,
    drain_values,
    is_drain,
    never_read_sends,
    never_written_values,
    read_reach,
    read_values,
    version_order,
    writes,
)
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, check
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


@check("lost-write")
def lost_write(fr: AnalysisFrames) -> DataFrame:
    """A value that must have committed, never read, where the history proves someone
    looked. `reason`: "read past" (a read returned an offset at or beyond the value's),
    or, where the final drain read the partition to its end: "below the drain's end"
    (the end lies beyond the value's offset, though no record at or above it came back,
    as when only aborted records follow it), "truncated" (the end lies at or below the
    offset: the log lost it) or "read to end" (no offset known, as with acks=0)."""

    def build() -> DataFrame:
        off, end = F.col("offset"), F.col("drain_end")
        reason = (
            F.when(off.isNotNull() & (F.col("max_read_offset") >= off), "read past")
            .when(end.isNull(), None)
            .when(off.isNull(), "read to end")
            .when(off >= end, "truncated")
            .otherwise("below the drain's end")
        )
        return (
            never_read_sends(fr)
            .join(fr.small(read_reach(fr).select(*TP, "max_read_offset")), TP, "left")
            .join(fr.small(drain_frontier(fr).select(*TP, "drain_end")), TP, "left")
            .withColumn("reason", reason)
            .filter(F.col("reason").isNotNull())
            .select("value", *TP, "offset", "process", "max_read_offset", "drain_end", "reason")
            .dropDuplicates(["value"])
        )

    return fr.shared("lost", build)


@check("unseen")
def unseen(fr: AnalysisFrames) -> DataFrame:
    """Never read, and nothing proves it gone: late and lost look the same (the verdict
    is unknown, never invalid, for these)."""
    lost = lost_write(fr).select("value")
    return (
        never_read_sends(fr)
        .join(lost, "value", "left_anti")
        .select("value", "topic", "partition", "offset", "process")
    )


@check("duplicate")
def duplicate(fr: AnalysisFrames) -> DataFrame:
    return (
        version_order(fr)
        .filter(F.col("value").isNotNull())
        .groupBy("value")
        .agg(
            F.count("*").alias("positions"),
            F.sort_array(F.collect_list(F.struct(*TP, "offset"))).alias("at"),
        )
        .filter(F.col("positions") > 1)
    )


@check("unexpected")
def unexpected(fr: AnalysisFrames) -> DataFrame:
    reads = fr.reads.select("value", *TP, "offset")
    missing_value = reads.filter(F.col("value").isNull())
    never_sent = reads.filter(F.col("value").isNotNull()).join(fr.attempted, "value", "left_anti")
    return missing_value.unionByName(never_sent).dropDuplicates(["value", *TP, "offset"])


@check("aborted-read")
def aborted_read(fr: AnalysisFrames) -> DataFrame:
    """Only a value none of whose sends could have committed: a value sent again (a
    copier's re-copy, an application's resend) counts if any send was ok or info."""
    failed = never_written_values(fr)
    return fr.reads.join(failed, "value").select("value", *TP, "offset").distinct()


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
    lost = lost_write(fr).select("value").withColumn("lost", F.lit(1))
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


@check("vanished-read")
def vanished_read(fr: AnalysisFrames) -> DataFrame:
    """A value some consumer read that the final drain did not read, although the drain
    read past that offset or read the partition to its end (claim C13: consumers see
    only records below the high watermark, which never disappear). An end marker at
    or below the offset proves the offset gone (a truncated tail).

    The drain reads read_committed, which hides a transaction that did not commit;
    values sent only in transactions not proven committed (a read_uncommitted
    consumer may have seen them, which aborted-read judges) are left out."""
    uncommitted = (
        writes(fr)
        .filter(F.col("f") == "txn")
        .groupBy("value")
        .agg(F.max(F.col("must_commit").cast("int")).alias("c"))
        .filter(F.col("c") == 0)
        .select("value")
    )
    reach = drain_frontier(fr).select(*TP, "drain_max_offset", "drain_end")
    passed = F.col("drain_end").isNotNull() | (F.col("offset") <= F.col("drain_max_offset"))
    # With no reader but the drain (most runs) no read is left to judge: an empty
    # relation, which Spark plans to nothing instead of joining every drain value.
    reads = fr.reads if fr.reader_polls else fr.reads.limit(0)
    return (
        reads.filter(~is_drain() & F.col("value").isNotNull() & F.col("offset").isNotNull())
        .join(fr.small(reach), TP)
        .filter(passed)
        .join(drain_values(fr), "value", "left_anti")
        .join(uncommitted, "value", "left_anti")
        .groupBy("value", *TP, "offset", "drain_max_offset", "drain_end")
        .agg(
            F.min("index").alias("first_read_index"),
            F.sort_array(F.collect_set("process")).alias("processes"),
        )
    )
