"""The queries the kernels replaced (spark_analysis/checks/partition_kernel.py and
value_kernel.py), kept as a second opinion: tests/unit/test_kernels.py holds the
kernels to them, row for row, beside the plain-Python reference. They are the queries
as they stood in package code, over the same shared frames (facts/derived.py)."""

from __future__ import annotations

from collections.abc import Callable

from kafka_trial.spark_analysis.facts.app_output import app_ids, missing_inputs
from kafka_trial.spark_analysis.facts.derived import (
    committed_sends,
    drain_frontier,
    is_drain,
    never_written_values,
    read_reach,
    version_order,
    writes,
)
from kafka_trial.spark_analysis.facts.fences import first_fences, invoked_at
from kafka_trial.spark_analysis.facts.rebalances import rebalance_events
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


def acked_sends(fr: AnalysisFrames) -> DataFrame:
    """Sends acknowledged as such: a filter of `committed_sends`' cache."""
    return committed_sends(fr).filter(F.col("outcome") == "ok")


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


def _consecutive_reads(fr: AnalysisFrames) -> DataFrame:
    """Each judged read paired with the previous read of the same process and
    partition, within one assignment: a rebalance legitimately moves a consumer's
    position. `prev_index` is the op of the previous read: equal to `index` within
    one op. Only poll ops: a transaction's reads (the copier's, or a producer's
    txn_poll, which seeks to its own sends on purpose) make no promise about position.
    The records of a partition in the poll during which it moved are neither judged
    nor a previous read: the history does not say which of them came before the move
    and which after, so the new assignment's position is known from the next read on."""
    reads = fr.reads.filter(F.col("f") == "poll").drop("f")
    # With no assignment ever moved (no group, or assign mode) every read is judged,
    # and the window needs no exchange for the union of the epoch starts.
    rows = reads if not fr.rebalanced else _with_epoch_starts(fr, reads)
    # An op may hold several poll micro-ops, each numbering its records from 0: a
    # record's place in its op is (micro-op, record), not the record's number alone.
    w = Window.partitionBy("process", *TP).orderBy("index", "mpos", "rpos")
    return (
        rows.withColumn("prev_rpos", F.lag("rpos").over(w))
        .withColumn("prev_offset", F.lag("offset").over(w))
        .withColumn("prev_value", F.lag("value").over(w))
        .withColumn("prev_index", F.lag("index").over(w))
        .filter((F.col("rpos") >= 0) & (F.col("prev_rpos") >= 0) & F.col("prev_offset").isNotNull())
        .drop("prev_rpos")
    )


def _with_epoch_starts(fr: AnalysisFrames, reads: DataFrame) -> DataFrame:
    """`reads` less the exempt records, plus one row per rebalance event and topic
    that starts a new assignment of a partition."""
    # Computed once: exempt, moved and starts below each read it.
    events = rebalance_events(fr)
    exempt = (
        events.filter(F.col("exempt"))
        .select("process", F.col("at").alias("index"), "partition")
        .distinct()
    )
    kept = reads.join(fr.small(exempt), ["process", "index", "partition"], "left_anti")
    # An event names a partition number, not its topic: it starts a new assignment of
    # that partition of every topic its process read. Only processes with events are
    # looked at for those topics.
    moved = events.select("process").distinct()
    read_topics = (
        kept.join(fr.small(moved), "process", "left_semi").select(*TP, "process").distinct()
    )
    # An event row sorts before every record of its `at` op (rpos -1) and has no
    # offset, so the read after it has no previous read: one window over each
    # process's partition, where an epoch number needed a second one.
    starts = events.join(read_topics, ["process", "partition"]).select(
        "process",
        *TP,
        F.col("at").alias("index"),
        F.lit(-1).cast("int").alias("mpos"),
        F.lit(-1).cast("int").alias("rpos"),
    )
    return kept.unionByName(starts, allowMissingColumns=True)


def _pairs(fr: AnalysisFrames, within_op: bool) -> DataFrame:
    """Consecutive reads whose previous read is in the same op, or in an earlier one."""
    same_op = F.col("prev_index") == F.col("index")
    return fr.shared("consecutive", lambda: _consecutive_reads(fr)).filter(
        same_op if within_op else ~same_op
    )


# Gaps up to this many offsets are joined offset by offset.
_LISTED_GAP = 10_000
# Up to this many listed offsets are a broadcast join's side (a few MB on the driver).
_BROADCAST_ROWS = 200_000


def _known_positions(fr: AnalysisFrames) -> DataFrame:
    """Every offset known to hold a record, with its value: the offsets of sends that
    must have committed, and of every record any ok read returned (any process or role, the final
    drain's included), as Jepsen knows positions from reads and acknowledged writes.
    A position nobody read or acknowledged (a transaction marker, a write whose
    outcome is unknown and nobody read) is no skip, and neither is a record of a
    transaction that never committed: a read_uncommitted consumer returns it, and a
    read_committed one (the final drain always) is right to jump over it."""
    acked = (
        committed_sends(fr)
        .filter(F.col("offset").isNotNull() & F.col("partition").isNotNull())
        .select(*TP, "offset", "value")
    )
    # left_anti keeps records whose value did not decode (null matches nothing).
    read = fr.reads.select(*TP, "offset", "value").join(
        never_written_values(fr), "value", "left_anti"
    )
    return acked.unionByName(read)


def _skips(fr: AnalysisFrames, within_op: bool) -> DataFrame:
    """Consecutive reads that jumped over offsets known to hold a record:
    `skipped_offsets`, and `skipped_values`, what they are known to hold (a record
    whose value did not decode adds its offset, not a value)."""
    keys = ["index", "process", *TP, "prev_offset", "offset"]
    if not within_op:
        keys.insert(0, "prev_index")
    gaps = _pairs(fr, within_op).filter(F.col("offset") > F.col("prev_offset") + 1).select(*keys)
    known = _known_positions(fr).select(
        *TP, F.col("offset").alias("skipped_offset"), F.col("value").alias("skipped_value")
    )
    return known_between(gaps, keys, known)


def known_between(
    gaps: DataFrame, keys: list[str], known: DataFrame, other_than: tuple[str, ...] = ()
) -> DataFrame:
    """The `gaps` rows (`keys`, among them topic, partition, prev_offset and offset)
    with an offset of `known` (topic, partition, skipped_offset, skipped_value)
    strictly between prev_offset and offset, with `skipped_values` and
    `skipped_offsets`: what they jumped over. A known record whose value is in one of
    the `other_than` key columns does not count (a copy of one end of the gap)."""
    # A gap is usually one transaction marker: listing the offsets inside it keeps the
    # join near the number of gaps, where a range join pairs every gap with every
    # known offset of its partition. The few wide gaps (a reset, a damaged offset)
    # would list too many: they take the range join.
    wide = F.col("offset") - F.col("prev_offset") > _LISTED_GAP
    listed = gaps.filter(~wide).select(
        *keys,
        F.explode(F.sequence(F.col("prev_offset") + 1, F.col("offset") - 1)).alias(
            "skipped_offset"
        ),
    )
    # Counted first, in one job (the pairs are cached): most histories have no gap,
    # or few, and then the known positions are not sorted for a join, only scanned once.
    sizes = gaps.agg(
        F.sum(
            F.when(~wide, F.size(F.sequence(F.col("prev_offset") + 1, F.col("offset") - 1)))
        ).alias("listed"),
        F.count(F.when(wide, 1)).alias("wide"),
    ).collect()[0]
    n_listed = sizes["listed"] or 0
    found: list[DataFrame] = []
    if n_listed:
        small = F.broadcast(listed) if n_listed <= _BROADCAST_ROWS else listed
        found.append(small.join(known, [*TP, "skipped_offset"]))
    if sizes["wide"]:
        found.append(
            gaps.filter(wide)
            .join(known, TP)
            .filter(
                (F.col("skipped_offset") > F.col("prev_offset"))
                & (F.col("skipped_offset") < F.col("offset"))
            )
        )
    if not found:
        return gaps.filter(F.lit(False)).select(
            *keys,
            F.array().cast("array<bigint>").alias("skipped_values"),
            F.array().cast("array<bigint>").alias("skipped_offsets"),
        )
    hits = found[0] if len(found) == 1 else found[0].unionByName(found[1])
    for c in other_than:
        hits = hits.filter(~F.col("skipped_value").eqNullSafe(F.col(c)))
    return hits.groupBy(*keys).agg(
        F.sort_array(F.collect_set("skipped_value")).alias("skipped_values"),
        F.sort_array(F.collect_set("skipped_offset")).alias("skipped_offsets"),
    )


@query("poll-skip")
def poll_skip(fr: AnalysisFrames) -> DataFrame:
    """A consumer's read jumped, from its previous read in an earlier op, over an
    offset known to hold a record (acknowledged, or read by anyone)."""
    return _skips(fr, within_op=False)


@query("int-poll-skip")
def int_poll_skip(fr: AnalysisFrames) -> DataFrame:
    """Within one op, consecutive records of a partition jumped over an offset known
    to hold a record (acknowledged, or read by anyone)."""
    return _skips(fr, within_op=True)


# --- the value-keyed checks (value_kernel.py) ----------------------------------------


def read_values(fr: AnalysisFrames) -> DataFrame:
    """Values some ok read returned: what counts as read."""
    return fr.reads.select("value").distinct()


def drain_values(fr: AnalysisFrames) -> DataFrame:
    """Values the drain read. Not cached: in most runs one check asks, once."""
    return fr.reads.filter(is_drain()).select("value").distinct()


def never_read_sends(fr: AnalysisFrames) -> DataFrame:
    """Sends that must have committed whose value no ok read returned."""
    return fr.shared(
        "never_read", lambda: committed_sends(fr).join(read_values(fr), "value", "left_anti")
    )


@query("lost-write")
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
        )

    # Every candidate row of a lost value: the query in package code kept one per value
    # (dropDuplicates, whichever came first), the kernel its first send by index.
    return fr.shared("query_lost", build)


@query("unseen")
def unseen(fr: AnalysisFrames) -> DataFrame:
    """Never read, and nothing proves it gone: late and lost look the same (the verdict
    is unknown, never invalid, for these)."""
    lost = lost_write(fr).select("value")
    return (
        never_read_sends(fr)
        .join(lost, "value", "left_anti")
        .select("value", "topic", "partition", "offset", "process")
    )


@query("duplicate")
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


@query("unexpected")
def unexpected(fr: AnalysisFrames) -> DataFrame:
    reads = fr.reads.select("value", *TP, "offset")
    missing_value = reads.filter(F.col("value").isNull())
    never_sent = reads.filter(F.col("value").isNotNull()).join(fr.attempted, "value", "left_anti")
    return missing_value.unionByName(never_sent).dropDuplicates(["value", *TP, "offset"])


@query("aborted-read")
def aborted_read(fr: AnalysisFrames) -> DataFrame:
    """Only a value none of whose sends could have committed: a value sent again (a
    copier's re-copy, an application's resend) counts if any send was ok or info."""
    failed = never_written_values(fr)
    return fr.reads.join(failed, "value").select("value", *TP, "offset").distinct()


@query("vanished-read")
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


@query("torn-txn")
def torn_txn(fr: AnalysisFrames) -> DataFrame:
    """A committed transaction some of whose values reads saw while others are lost."""
    txn_sends = committed_sends(fr).filter(F.col("f") == "txn")
    seen = read_values(fr).withColumn("seen", F.lit(1))
    lost = lost_write(fr).select("value").distinct().withColumn("lost", F.lit(1))
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


@query("precommitted-read")
def precommitted_read(fr: AnalysisFrames) -> DataFrame:
    """A transaction's own poll returned a value that the same transaction sent."""
    own = fr.sends.filter(F.col("f") == "txn").select("index", "value")
    return (
        fr.txn_polls.join(own, ["index", "value"])
        .select("value", *TP, "offset", "index", "process", "type")
        .distinct()
    )


# --- consumer groups and the copier (value_kernel.py) --------------------------------


@query("group-missed")
def group_missed(fr: AnalysisFrames) -> DataFrame:
    return (
        committed_sends(fr)
        .filter(F.col("offset").isNotNull())
        .join(fr.small(fr.group_offsets.filter(F.col("role") == "consumer")), TP)
        .filter(F.col("offset") < F.col("committed"))
        .join(fr.processed.select("value").distinct(), "value", "left_anti")
        .select("value", *TP, "offset", "committed")
    )


@query("group-redelivered")
def group_redelivered(fr: AnalysisFrames) -> DataFrame:
    return (
        fr.processed.groupBy("value")
        .agg(
            F.count("*").alias("times"),
            F.countDistinct("index").alias("ops"),
            F.sort_array(F.collect_set("process")).alias("processes"),
        )
        .filter(F.col("times") > 1)
    )


@query("eos-output-lost")
def eos_output_lost(fr: AnalysisFrames) -> DataFrame:
    inputs = (
        committed_sends(fr)
        .filter((F.col("value") >= 0) & F.col("offset").isNotNull())
        .join(fr.small(fr.group_offsets.filter(F.col("role") == "copier")), TP)
        .filter(F.col("offset") < F.col("committed"))
        .select("value", *TP, "offset", "committed")
    )
    out = fr.reads.filter(F.col("value") < 0).select((-F.col("value") - 1).alias("value"))
    return inputs.join(out.distinct(), "value", "left_anti")


@query("eos-output-duplicate")
def eos_output_duplicate(fr: AnalysisFrames) -> DataFrame:
    return (
        version_order(fr)
        .filter(F.col("value") < 0)
        .groupBy((-F.col("value") - 1).alias("value"))
        .agg(
            F.count("*").alias("copies"),
            F.sort_array(F.collect_list(F.struct(*TP, "offset"))).alias("at"),
        )
        .filter(F.col("copies") > 1)
    )


# --- the application on trial's outputs (value_kernel.py) ----------------------------


@query("app-output-lost")
def app_output_lost(fr: AnalysisFrames) -> DataFrame:
    return (
        missing_inputs(fr)
        .filter(F.col("below"))
        .select("value", *TP, "offset", "committed", F.lit("committed past").alias("reason"))
    )


@query("app-output-duplicate")
def app_output_duplicate(fr: AnalysisFrames) -> DataFrame:
    return (
        app_ids(fr)
        .join(fr.attempted, "value", "left_semi")
        .groupBy("value")
        .agg(F.sort_array(F.collect_set(F.struct(*TP, "offset"))).alias("at"))
        .filter(F.size("at") > 1)
        .select("value", F.size("at").alias("copies"), "at", F.lit("output twice").alias("reason"))
    )


@query("app-output-unexpected")
def app_output_unexpected(fr: AnalysisFrames) -> DataFrame:
    return (
        app_ids(fr)
        .join(fr.attempted, "value", "left_anti")
        .select("value", *TP, "offset", F.lit("never sent").alias("reason"))
    )


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


@query("app-output-reorder")
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
    return pairs


# --- fenced sessions (value_kernel.py) --------------------------------------------


@query("fenced-write")
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
    fenced = txn.join(fr.small(first_fences(fr)), "client")
    ops = fenced.select("process", "index").distinct()
    after = fenced.join(invoked_at(fr, ops), ["process", "index"]).filter(
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
