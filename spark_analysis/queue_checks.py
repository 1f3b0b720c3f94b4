"""The anomaly checks over the shared frames: each returns a count and examples.

Every check is a function Frames -> DataFrame of anomaly rows; `run_checks`
counts them. A check that crashes reports count None (unknown), never a trace.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.history_frames import Frames

EXAMPLES = 8
TP = ["topic", "partition"]


_memo: dict[tuple[int, str], DataFrame] = {}


def _shared(fr: Frames, name: str, build: Callable[[], DataFrame]) -> DataFrame:
    """Intermediate frames used by several checks are built and cached once."""
    key = (id(fr), name)
    if key not in _memo:
        _memo[key] = build().cache()
    return _memo[key]


def release(fr: Frames) -> None:
    for key in [k for k in _memo if k[0] == id(fr)]:
        _memo.pop(key).unpersist()


def _acked(fr: Frames) -> DataFrame:
    return _shared(fr, "acked", lambda: fr.sends.filter(F.col("outcome") == "ok"))


def _never_read(fr: Frames) -> DataFrame:
    def build() -> DataFrame:
        read_values = fr.reads.select("value").distinct()
        return _acked(fr).join(read_values, "value", "left_anti")

    return _shared(fr, "never_read", build)


def _max_read(fr: Frames) -> DataFrame:
    return _shared(
        fr, "max_read", lambda: fr.reads.groupBy(*TP).agg(F.max("offset").alias("max_read_offset"))
    )


def lost_write(fr: Frames) -> DataFrame:
    def build() -> DataFrame:
        passed = (
            _never_read(fr)
            .filter(F.col("offset").isNotNull())
            .join(F.broadcast(_max_read(fr)), TP)
            .filter(F.col("max_read_offset") >= F.col("offset"))
            .select("value", "topic", "partition", "offset", "process", "max_read_offset")
        )
        # No offset known (acks=0): lost once the drain read its partition to the end.
        read_to_end = (
            _never_read(fr)
            .filter(F.col("offset").isNull() & F.col("partition").isNotNull())
            .join(F.broadcast(fr.drain_ends), TP, "left_semi")
            .join(F.broadcast(_max_read(fr)), TP, "left")
            .select("value", "topic", "partition", "offset", "process", "max_read_offset")
        )
        return passed.unionByName(read_to_end)

    return _shared(fr, "lost", build)


def unseen(fr: Frames) -> DataFrame:
    lost = lost_write(fr).select("value")
    return (
        _never_read(fr)
        .join(lost, "value", "left_anti")
        .select("value", "topic", "partition", "offset", "process")
    )


def _observations(fr: Frames) -> DataFrame:
    def build() -> DataFrame:
        acked = _acked(fr).filter(F.col("offset").isNotNull()).select("value", *TP, "offset")
        return fr.reads.select("value", *TP, "offset").unionByName(acked).distinct()

    return _shared(fr, "observations", build)


def duplicate(fr: Frames) -> DataFrame:
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


def inconsistent_offsets(fr: Frames) -> DataFrame:
    return (
        _observations(fr)
        .groupBy(*TP, "offset")
        .agg(F.sort_array(F.collect_set("value")).alias("values"))
        .filter(F.size("values") > 1)
    )


def unexpected(fr: Frames) -> DataFrame:
    reads = fr.reads.select("value", *TP, "offset")
    missing_value = reads.filter(F.col("value").isNull())
    never_sent = reads.filter(F.col("value").isNotNull()).join(fr.attempted, "value", "left_anti")
    return missing_value.unionByName(never_sent).dropDuplicates(["value", *TP, "offset"])


def aborted_read(fr: Frames) -> DataFrame:
    failed = fr.sends.filter(F.col("outcome") == "fail").select("value").distinct()
    return fr.reads.join(failed, "value").select("value", *TP, "offset").distinct()


def reorder(fr: Frames) -> DataFrame:
    w = Window.partitionBy("process", *TP).orderBy("index", "pos")
    return (
        _acked(fr)
        .filter(F.col("offset").isNotNull())
        .withColumn("prev_value", F.lag("value").over(w))
        .withColumn("prev_offset", F.lag("offset").over(w))
        .filter(F.col("prev_offset") > F.col("offset"))
        .select("process", *TP, "prev_value", "prev_offset", "value", "offset")
    )


def int_nonmonotonic_send(fr: Frames) -> DataFrame:
    """Within one op, a later send to a partition landed at a lower offset."""
    w = Window.partitionBy("index", *TP).orderBy("pos")
    return (
        _acked(fr)
        .filter(F.col("offset").isNotNull())
        .withColumn("prev_value", F.lag("value").over(w))
        .withColumn("prev_offset", F.lag("offset").over(w))
        .filter(F.col("prev_offset") > F.col("offset"))
        .select("index", "process", *TP, "prev_value", "prev_offset", "value", "offset")
    )


def torn_txn(fr: Frames) -> DataFrame:
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


def _consecutive_reads(fr: Frames) -> DataFrame:
    """Each read paired with the previous read of the same process and partition,
    within one assignment: a rebalance legitimately moves a consumer's position.
    `prev_index` is the op of the previous read: equal to `index` within one op.
    Only poll ops: a transaction's reads (the copier's, or a producer's txn_poll,
    which seeks to its own sends on purpose) make no promise about position."""
    events = fr.rebalances.select(
        "process", "index", F.lit(-1).cast("long").alias("rpos"), F.lit(1).alias("event")
    )
    reads = fr.reads.filter(F.col("f") == "poll").drop("f").withColumn("event", F.lit(0))
    by_time = (
        Window.partitionBy("process")
        .orderBy("index", "rpos")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    epoch = (
        reads.unionByName(events, allowMissingColumns=True)
        .withColumn("epoch", F.sum("event").over(by_time))
        .filter(F.col("event") == 0)
    )
    w = Window.partitionBy("process", "epoch", *TP).orderBy("index", "rpos")
    return (
        epoch.withColumn("prev_offset", F.lag("offset").over(w))
        .withColumn("prev_value", F.lag("value").over(w))
        .withColumn("prev_index", F.lag("index").over(w))
        .filter(F.col("prev_offset").isNotNull())
    )


def _pairs(fr: Frames, within_op: bool) -> DataFrame:
    """Consecutive reads whose previous read is in the same op, or in an earlier one."""
    same_op = F.col("prev_index") == F.col("index")
    return _shared(fr, "consecutive", lambda: _consecutive_reads(fr)).filter(
        same_op if within_op else ~same_op
    )


def nonmonotonic_poll(fr: Frames) -> DataFrame:
    """A consumer read an offset at or below one its previous read, in an earlier op,
    had returned (no rebalance in assign mode; a replaced consumer has a new process id)."""
    return (
        _pairs(fr, within_op=False)
        .filter(F.col("offset") <= F.col("prev_offset"))
        .select(
            "process", *TP, "prev_index", "prev_offset", "prev_value", "index", "offset", "value"
        )
    )


def int_nonmonotonic_poll(fr: Frames) -> DataFrame:
    """Within one op, a record of a partition at or below the one just before it."""
    return (
        _pairs(fr, within_op=True)
        .filter(F.col("offset") <= F.col("prev_offset"))
        .select("index", "process", *TP, "prev_offset", "prev_value", "offset", "value")
    )


def _skips(fr: Frames, within_op: bool) -> DataFrame:
    """Consecutive reads that jumped over offsets holding acknowledged values."""
    keys = ["index", "process", *TP, "prev_offset", "offset"]
    if not within_op:
        keys.insert(0, "prev_index")
    gaps = (
        _pairs(fr, within_op)
        .filter(F.col("offset") > F.col("prev_offset") + 1)
        .select("prev_index", "index", "process", *TP, "prev_offset", "offset")
    )
    acked = (
        _acked(fr)
        .filter(F.col("offset").isNotNull())
        .select(*TP, F.col("offset").alias("skipped_offset"), F.col("value").alias("skipped_value"))
    )
    return (
        gaps.join(acked, TP)
        .filter(
            (F.col("skipped_offset") > F.col("prev_offset"))
            & (F.col("skipped_offset") < F.col("offset"))
        )
        .groupBy(*keys)
        .agg(F.sort_array(F.collect_list("skipped_value")).alias("skipped_values"))
    )


def poll_skip(fr: Frames) -> DataFrame:
    """A consumer's read jumped, from its previous read in an earlier op, over an
    offset that holds an acknowledged value."""
    return _skips(fr, within_op=False)


def int_poll_skip(fr: Frames) -> DataFrame:
    """Within one op, consecutive records of a partition jumped over an offset that
    holds an acknowledged value."""
    return _skips(fr, within_op=True)


def precommitted_read(fr: Frames) -> DataFrame:
    """A transaction's own poll returned a value that the same transaction sent,
    whatever the transaction's outcome."""
    own = fr.sends.filter(F.col("f") == "txn").select("index", "value")
    return (
        fr.txn_polls.join(own, ["index", "value"])
        .select("value", *TP, "offset", "index", "process", "type")
        .distinct()
    )


def vanished_read(fr: Frames) -> DataFrame:
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
        .join(F.broadcast(reach), TP)
        .filter(F.col("offset") <= F.col("drain_max_offset"))
        .join(drain.select("value").distinct(), "value", "left_anti")
        .join(uncommitted, "value", "left_anti")
        .groupBy("value", *TP, "offset", "drain_max_offset")
        .agg(
            F.min("index").alias("first_read_index"),
            F.sort_array(F.collect_set("process")).alias("processes"),
        )
    )


def group_missed(fr: Frames) -> DataFrame:
    """An acknowledged value below the group's final committed offset that the
    group's application never processed."""
    return (
        _acked(fr)
        .filter(F.col("offset").isNotNull())
        .join(F.broadcast(fr.group_offsets.filter(F.col("role") == "consumer")), TP)
        .filter(F.col("offset") < F.col("committed"))
        .join(fr.processed.select("value").distinct(), "value", "left_anti")
        .select("value", *TP, "offset", "committed")
    )


def group_redelivered(fr: Frames) -> DataFrame:
    """A value the group's application processed more than once."""
    return (
        fr.processed.groupBy("value")
        .agg(
            F.countDistinct("index").alias("times"),
            F.sort_array(F.collect_set("process")).alias("processes"),
        )
        .filter(F.col("times") > 1)
    )


def _copier_input(fr: Frames) -> DataFrame:
    """Acknowledged input values the copier group committed past: each must appear
    exactly once in the output, as -(v + 1)."""
    return (
        _acked(fr)
        .filter((F.col("value") >= 0) & F.col("offset").isNotNull())
        .join(F.broadcast(fr.group_offsets.filter(F.col("role") == "copier")), TP)
        .filter(F.col("offset") < F.col("committed"))
        .select("value", *TP, "offset", "committed")
    )


def eos_output_lost(fr: Frames) -> DataFrame:
    out = fr.reads.filter(F.col("value") < 0).select((-F.col("value") - 1).alias("value"))
    return _copier_input(fr).join(out.distinct(), "value", "left_anti")


def eos_output_duplicate(fr: Frames) -> DataFrame:
    out = (
        fr.reads.filter(F.col("value") < 0)
        .select((-F.col("value") - 1).alias("value"), *TP, "offset")
        .distinct()
        .groupBy("value")
        .agg(
            F.count("*").alias("copies"),
            F.sort_array(F.collect_list(F.struct(*TP, "offset"))).alias("at"),
        )
        .filter(F.col("copies") > 1)
    )
    return _copier_input(fr).select("value").join(out, "value")


CHECKS: dict[str, tuple[Callable[[Frames], DataFrame], str]] = {
    "lost-write": (lost_write, "values"),
    "unseen": (unseen, "values"),
    "vanished-read": (vanished_read, "values"),
    "duplicate": (duplicate, "values"),
    "inconsistent-offsets": (inconsistent_offsets, "offsets"),
    "unexpected": (unexpected, "values"),
    "aborted-read": (aborted_read, "values"),
    "reorder": (reorder, "pairs"),
    "int-nonmonotonic-send": (int_nonmonotonic_send, "pairs"),
    "torn-txn": (torn_txn, "txns"),
    "precommitted-read": (precommitted_read, "values"),
    "nonmonotonic-poll": (nonmonotonic_poll, "pairs"),
    "int-nonmonotonic-poll": (int_nonmonotonic_poll, "pairs"),
    "poll-skip": (poll_skip, "skips"),
    "int-poll-skip": (int_poll_skip, "skips"),
    "group-missed": (group_missed, "values"),
    "group-redelivered": (group_redelivered, "values"),
    "eos-output-lost": (eos_output_lost, "values"),
    "eos-output-duplicate": (eos_output_duplicate, "values"),
}


def _tagged(name: str, df: DataFrame, unit: str) -> DataFrame:
    """One shape for every check: (type, key, detail), key being what `count` counts."""
    detail = F.to_json(F.struct(*[F.col(c) for c in df.columns]))
    key = F.coalesce(F.col("value").cast("string"), detail) if unit == "values" else detail
    return df.select(F.lit(name).alias("type"), key.alias("key"), detail.alias("detail"))


def run_checks(fr: Frames) -> dict[str, dict[str, Any]]:
    """All checks in one pass: two Spark jobs instead of two per check."""
    out: dict[str, dict[str, Any]] = {}
    tagged: list[DataFrame] = []
    for name, (check, unit) in CHECKS.items():
        try:
            tagged.append(_tagged(name, check(fr), unit))
            out[name] = {"count": 0, "unit": unit, "examples": []}
        except Exception as e:  # a check that cannot even be planned is unknown
            out[name] = _crashed(unit, e)
    if not tagged:
        return out
    try:
        allrows = reduce(DataFrame.unionByName, tagged).cache()
        for r in allrows.groupBy("type").agg(F.countDistinct("key").alias("n")).collect():
            out[r["type"]]["count"] = r["n"]
        w = Window.partitionBy("type").orderBy("key")
        ex = (
            allrows.withColumn("rank", F.row_number().over(w))
            .filter(F.col("rank") <= EXAMPLES)
            .orderBy("type", "rank")
            .collect()
        )
        for r in ex:
            out[r["type"]]["examples"].append(json.loads(r["detail"]))
        allrows.unpersist()
    except Exception:
        # Something failed at run time: fall back to one job per check, so only the
        # check that really crashes is unknown.
        for name, (check, unit) in CHECKS.items():
            if out[name].get("count") is None:
                continue
            try:
                df = _tagged(name, check(fr), unit)
                out[name]["count"] = df.select("key").distinct().count()
                rows = df.orderBy("key").limit(EXAMPLES).collect()
                out[name]["examples"] = [json.loads(r["detail"]) for r in rows]
            except Exception as e:
                out[name] = _crashed(unit, e)
    release(fr)
    return out


def _crashed(unit: str, e: Exception) -> dict[str, Any]:
    return {
        "count": None,
        "unit": unit,
        "examples": [],
        "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}",
        "trace": traceback.format_exc(limit=3)[-1500:],
    }


# What the workload did to itself, shown next to what the nemesis did.
CLIENT_EVENTS = ("crash", "leave", "join", "stall", "assign", "revoke", "lost")


def stats(fr: Frames) -> dict[str, Any]:
    by_type = {r["type"]: r["count"] for r in fr.ops.groupBy("type").count().collect()}
    outcomes = {r["outcome"]: r["count"] for r in fr.sends.groupBy("outcome").count().collect()}
    nemesis = fr.ops.filter(F.col("process") == "nemesis").filter(F.col("type") == "invoke")
    span = fr.ops.agg(F.min("time").alias("t0"), F.max("time").alias("t1")).collect()[0]
    done = fr.ops.filter(F.col("type") == "ok")
    faults = done.filter(F.col("process") == "nemesis")
    events = done.filter((F.col("process") != "nemesis") & F.col("f").isin(*CLIENT_EVENTS))
    return {
        "ops": sum(by_type.values()),
        "ops_by_type": by_type,
        "sends_attempted": fr.attempted.count(),
        "send_outcomes": outcomes,
        "records_read": fr.reads.count(),
        "nemesis_ops": nemesis.count(),
        "nemesis_done": {r["f"]: r["count"] for r in faults.groupBy("f").count().collect()},
        "client_events": {r["f"]: r["count"] for r in events.groupBy("f").count().collect()},
        "span_s": round(((span["t1"] or 0) - (span["t0"] or 0)) / 1e9, 3),
    }
