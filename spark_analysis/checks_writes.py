"""Checks of what was written against what was read: losses, duplicates, offsets,
aborted and transactional reads (claims C1-C13)."""

from __future__ import annotations

from kafka_trial.spark_analysis.shared_frames import (
    TP,
    Plan,
    acked_sends,
    check,
    max_read_offsets,
    never_read_sends,
    never_written_values,
)
from pyspark.sql import DataFrame, Window, WindowSpec
from pyspark.sql import functions as F


@check("lost-write")
def lost_write(fr: Plan) -> DataFrame:
    """`reason`: "read past" (a read reached a higher offset), "truncated" (the final
    drain read the partition to its end, below the value's offset: the log lost it),
    or "read to end" (no offset known, as with acks=0, and the drain read it all)."""

    def build() -> DataFrame:
        cols = ["value", "topic", "partition", "offset", "process", "max_read_offset", "reason"]
        never = never_read_sends(fr)
        passed = (
            never.filter(F.col("offset").isNotNull())
            .join(fr.small(max_read_offsets(fr)), TP)
            .filter(F.col("max_read_offset") >= F.col("offset"))
            .withColumn("reason", F.lit("read past"))
            .select(*cols)
        )
        # The drain ran after a full heal and read to the end: a value acknowledged at
        # or beyond that end is gone, not late (what Jepsen has to call unseen).
        truncated = (
            never.filter(F.col("offset").isNotNull())
            .join(fr.small(fr.drain_ends), TP)
            .filter(F.col("offset") >= F.col("end_offset"))
            .join(fr.small(max_read_offsets(fr)), TP, "left")
            .withColumn("reason", F.lit("truncated"))
            .select(*cols)
        )
        read_to_end = (
            never.filter(F.col("offset").isNull() & F.col("partition").isNotNull())
            .join(fr.small(fr.drain_ends), TP, "left_semi")
            .join(fr.small(max_read_offsets(fr)), TP, "left")
            .withColumn("reason", F.lit("read to end"))
            .select(*cols)
        )
        return passed.unionByName(truncated).unionByName(read_to_end).dropDuplicates(["value"])

    return fr.shared("lost", build)


@check("unseen")
def unseen(fr: Plan) -> DataFrame:
    lost = lost_write(fr).select("value")
    return (
        never_read_sends(fr)
        .join(lost, "value", "left_anti")
        .select("value", "topic", "partition", "offset", "process")
    )


def _observations(fr: Plan) -> DataFrame:
    def build() -> DataFrame:
        acked = acked_sends(fr).filter(F.col("offset").isNotNull()).select("value", *TP, "offset")
        return fr.reads.select("value", *TP, "offset").unionByName(acked).distinct()

    return fr.shared("observations", build)


@check("duplicate")
def duplicate(fr: Plan) -> DataFrame:
    return (
        _observations(fr)
        .filter(F.col("value").isNotNull())
        .groupBy("value")
        .agg(
            F.count("*").alias("positions"),
            F.sort_array(F.collect_list(F.struct(*TP, "offset"))).alias("at"),
        )
        .filter(F.col("positions") > 1)
    )


@check("inconsistent-offsets")
def inconsistent_offsets(fr: Plan) -> DataFrame:
    return (
        _observations(fr)
        .groupBy(*TP, "offset")
        .agg(F.sort_array(F.collect_set("value")).alias("values"))
        .filter(F.size("values") > 1)
    )


@check("unexpected")
def unexpected(fr: Plan) -> DataFrame:
    reads = fr.reads.select("value", *TP, "offset")
    missing_value = reads.filter(F.col("value").isNull())
    never_sent = reads.filter(F.col("value").isNotNull()).join(fr.attempted, "value", "left_anti")
    return missing_value.unionByName(never_sent).dropDuplicates(["value", *TP, "offset"])


@check("aborted-read")
def aborted_read(fr: Plan) -> DataFrame:
    """Only a value none of whose sends could have committed: a value sent again (a
    copier's re-copy, an application's resend) counts if any send was ok or info."""
    failed = never_written_values(fr)
    return fr.reads.join(failed, "value").select("value", *TP, "offset").distinct()


def _acked_offsets_backwards(
    fr: Plan, w: WindowSpec, keys: list[str], of_clients: bool = False
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


@check("reorder")
def reorder(fr: Plan) -> DataFrame:
    w = Window.partitionBy("process", *TP).orderBy("index", "pos")
    return _acked_offsets_backwards(fr, w, ["process"])


@check("int-nonmonotonic-send")
def int_nonmonotonic_send(fr: Plan) -> DataFrame:
    """Within one op, a later send to a partition landed at a lower offset."""
    return _acked_offsets_backwards(
        fr, Window.partitionBy("index", *TP).orderBy("pos"), ["index", "process"]
    )


@check("client-reorder")
def client_reorder(fr: Plan) -> DataFrame:
    """Claim C7: what one client was asked to send in order, in its produce() order
    (`seq`), whichever of its processes asked. Sends that do not record their client
    (other tools' histories, transactions) are not judged here."""
    w = Window.partitionBy("client", *TP).orderBy("seq")
    return _acked_offsets_backwards(fr, w, ["client"], of_clients=True)


@check("torn-txn")
def torn_txn(fr: Plan) -> DataFrame:
    """A committed transaction of which the reads saw some values but not all."""
    read_values = fr.reads.select("value").distinct().withColumn("seen", F.lit(1))
    return (
        fr.sends.filter((F.col("f") == "txn") & (F.col("outcome") == "ok"))
        .join(read_values, "value", "left")
        .groupBy("index", "process")
        .agg(
            F.count("*").alias("values"),
            F.count("seen").alias("seen"),
            F.sort_array(F.collect_list(F.when(F.col("seen").isNull(), F.col("value")))).alias(
                "missing"
            ),
        )
        .filter((F.col("seen") > 0) & (F.col("seen") < F.col("values")))
    )


@check("precommitted-read")
def precommitted_read(fr: Plan) -> DataFrame:
    """A transaction's own poll returned a value that the same transaction sent,
    whatever the transaction's outcome."""
    own = fr.sends.filter(F.col("f") == "txn").select("index", "value")
    return (
        fr.txn_polls.join(own, ["index", "value"])
        .select("value", *TP, "offset", "index", "process", "type")
        .distinct()
    )


@check("vanished-read")
def vanished_read(fr: Plan) -> DataFrame:
    """A value some consumer read that the final drain did not read, although the
    drain read that partition up to that offset or beyond (claim C13: consumers see
    only records below the high watermark, which never disappear).

    The drain reads read_committed, which hides a transaction that did not commit;
    values sent in such a transaction (a read_uncommitted consumer may have seen
    them, which aborted-read judges) are left out."""
    is_drain = F.col("role").eqNullSafe("drain")
    drain = fr.reads.filter(is_drain)
    reach = drain.groupBy(*TP).agg(F.max("offset").alias("drain_max_offset"))
    uncommitted = (
        fr.sends.filter((F.col("f") == "txn") & (F.col("outcome") != "ok"))
        .select("value")
        .distinct()
    )
    return (
        fr.reads.filter(~is_drain & F.col("value").isNotNull() & F.col("offset").isNotNull())
        .join(fr.small(reach), TP)
        .filter(F.col("offset") <= F.col("drain_max_offset"))
        .join(drain.select("value").distinct(), "value", "left_anti")
        .join(uncommitted, "value", "left_anti")
        .groupBy("value", *TP, "offset", "drain_max_offset")
        .agg(
            F.min("index").alias("first_read_index"),
            F.sort_array(F.collect_set("process")).alias("processes"),
        )
    )
