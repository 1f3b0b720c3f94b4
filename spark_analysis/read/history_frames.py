"""The DataFrames the checks share, all filters of one history's flat rows
(history_parse.FLAT_SCHEMA): parsed once, from the JSON or from the columnar cache
(columnar.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafka_trial.contracts.ops import TXN_FENCE_OP
from kafka_trial.spark_analysis.read.history_parse import (
    OP_COLUMNS,
    READ_FS,
    REBALANCE_FS,
    SEND_FS,
    flatten,
    read_json,
)
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType


@dataclass(frozen=True)
class Fence:
    """A takeover of a transactional.id that completed `ok` (the nemesis op
    hijack-txn) and names the producer session it fenced: from `time` on, that
    session (`client`, as its send micro-ops carry it) holds a stale epoch."""

    index: int
    time: int
    client: int
    transactional_id: str | None


@dataclass(frozen=True)
class Frames:
    ops: DataFrame  # every parsed line, without `value`: index, time, type, process, f
    # lines that are not ops (see history_parse.mark_damaged), the cut-off last line too
    damaged: int
    open_invokes: int  # invokes with no completion (the history was cut off)
    attempted: DataFrame  # value: every value any send invoked
    # value, process, index, pos, f, topic, partition, offset, outcome, client, seq
    sends: DataFrame
    # value, topic, partition, offset, index, process, rpos, role, f, mpos (ok ops)
    reads: DataFrame
    processed: DataFrame  # value, topic, partition, offset, index, process
    group_offsets: DataFrame  # role, topic, partition, committed (each group's final offsets)
    # process, index, partition: each partition an ok assign / revoke / lost op moved
    rebalances: DataFrame
    # value, topic, partition, offset, index, process, type: the records a txn op's poll
    # micro-op returned, whatever the op's outcome (reads holds only the ok ones)
    txn_polls: DataFrame
    # topic, partition, end_offset: where the final drain read to the end, unless a
    # later poll of it found that end held (`held_ends`)
    drain_ends: DataFrame
    drain_ran: bool  # some poll of the final drain completed
    # value, topic, partition, offset, index, process, rpos, role, f, mpos, type: every
    # record any poll micro-op returned, whatever its op's outcome (`reads` is the ok
    # ones): what the log held at that offset, whether or not the read counts as one.
    # The application's output (role "app-output") is in none of these three: its
    # values are input ids, not values of their own, so the input's checks would take
    # each for a duplicate of its input.
    polled: DataFrame
    # value, topic, partition, offset, index, process: the records the ok polls of the
    # application's output drain returned, `value` the input id each carries (null if
    # none was recognised)
    app_output: DataFrame
    # topic, partition, end_offset: where the output drain read the output to its end
    app_output_ends: DataFrame
    # role, topic, partition, high_watermark: the partitions a drain (the final one or
    # the output's) last found held below the high watermark by an open transaction,
    # and so never proved read to the end (the watermark null where it was unknown)
    held_ends: DataFrame
    # (index if it has one, the line's start) of up to DAMAGED_EXAMPLES damaged lines
    damaged_examples: tuple[tuple[int | None, str], ...] = ()
    # The whole history is one partition (see `load`).
    one_task: bool = False
    # What some checks choose their plan by, from the one job that counts the damaged
    # lines (`_decisions`), not from a job each. The defaults choose the general plan.
    txn_ops: bool = True  # some op (not damaged) is a transaction
    lines: int = 0  # the history's lines, damaged ones too (0: not counted)
    # The first and last op's times, ns (None: not counted, or no op)
    span: tuple[int | None, int | None] = (None, None)
    rebalanced: bool = True  # some ok op moved a partition (`rebalances` is not empty)
    # `sends` may hold a transaction's send of outcome info: a completed txn op that
    # ended info, or an open invoke where some op is a transaction
    maybe_unknown_txn: bool = True
    # The application on trial took part: an app-output poll completed, an instance
    # was started, or its group's offsets were recorded. Without it the app checks
    # have nothing to judge and plan nothing.
    app_present: bool = False
    app_output_polls: int = 0  # completed polls of the application's output drain
    # Some ok read not the final drain's nor the app's output drain's (`reads` then
    # holds more than the drain's records).
    reader_polls: bool = True
    failed_sends: bool = True  # some send failed (`sends` holds an outcome "fail")
    # A group's final offsets were recorded, by the consumers' group (`consumer_offsets`)
    # and by the exactly-once copier's (`copier_offsets`), and a group member processed
    # records (`processed_records`). Without them the value pass neither collects the
    # offsets nor reads the processed records.
    consumer_offsets: bool = True
    copier_offsets: bool = True
    processed_records: bool = True
    # The takeovers that fenced a named session, by time (none in most runs): the
    # nemesis's values are not in the flat rows, so they are read apart (`_fences`).
    fences: tuple[Fence, ...] = ()
    # The nemesis's and the application's ops, each line whole in the history's order,
    # as the native parse kept them (native_parse.lanes): the flat rows keep no value
    # of theirs. None where it kept none; then the few lines are read from the text.
    lanes: tuple[dict[str, Any], ...] | None = None

    def small(self, df: DataFrame) -> DataFrame:
        return _small(df)


DAMAGED_EXAMPLES = 8


# Open invokes up to this many are found by a filter on their indexes, more by a join.
_OPEN_LISTED = 10_000


def _small(df: DataFrame) -> DataFrame:
    """A join's small side (a table per topic-partition or per process, rebalance
    events, open invokes): broadcast, in a one-task plan too. The broadcast is a job
    of its own, but the big side then streams past a hash table instead of being
    sorted for a merge join (2M lines, one task: the checks took 30.0 s, not 35.8)."""
    return F.broadcast(df)


def _sends(rows: DataFrame, outcome: Column) -> DataFrame:
    return rows.filter(F.col("kind") == "send").select(
        "value",
        "process",
        "index",
        F.col("mpos").alias("pos"),
        "f",
        "topic",
        "partition",
        "offset",
        outcome.alias("outcome"),
        "client",
        "seq",
    )


def _records(rows: DataFrame, op: str, keep: list[str]) -> DataFrame:
    """One row per record inside the `op` micro-ops of `rows`: the record's fields,
    then the `keep` columns of its op and micro-op, its position in the micro-op
    (`rpos`) after the first two."""
    return rows.filter((F.col("kind") == "record") & (F.col("op") == op)).select(
        "value",
        "topic",
        "partition",
        "offset",
        *keep[:2],
        F.col("ipos").alias("rpos"),
        *keep[2:],
    )


def _decisions(rows: DataFrame) -> dict[str, Any]:
    """In one job: how many lines are damaged, and how many rows of each kind some
    check chooses its plan by (a job each cost about 0.1 s on a warm session)."""
    line = F.col("kind") == "op"
    completed = ~line & F.col("type").isin("ok", "fail", "info")
    when = {
        "lines": line,
        "damaged": line & F.col("damaged"),
        # Every micro-op has a row (of kind "micro" if it holds no item).
        "drain_polls": completed & (F.col("f") == "poll") & (F.col("role") == "drain"),
        "txn_ops": line & ~F.col("damaged") & (F.col("f") == "txn"),
        # In a txn op the op's type is every send's outcome (`_all_sends`).
        "txn_info_sends": completed
        & (F.col("kind") == "send")
        & (F.col("f") == "txn")
        & (F.col("type") == "info"),
        "app_output_polls": completed & (F.col("f") == "poll") & _is_app_output(),
        # Sends that failed: without one, no value is never-written, and the checks
        # built on those values (aborted-read, the skips' known positions) join nothing.
        "failed_sends": completed
        & (F.col("kind") == "send")
        & F.col("f").isin(*SEND_FS)
        & (
            F.when(F.col("f") == "txn", F.col("type")).otherwise(
                F.coalesce(F.col("outcome"), F.col("type"))
            )
            == "fail"
        ),
        # Ok reads by anyone but the final drain and the app's output drain: a
        # producers-only run (the default) has none, and what only they judge is empty.
        "reader_polls": completed
        & (F.col("type") == "ok")
        & F.col("f").isin(*READ_FS)
        & ~F.col("role").eqNullSafe("drain")
        & ~F.coalesce(_is_app_output(), F.lit(False)),
        # Takeovers of a transactional.id that took effect: only then are the
        # nemesis's lines read again for the sessions they fenced (`_fences`).
        "fences": line
        & ~F.col("damaged")
        & (F.col("process") == "nemesis")
        & (F.col("f") == TXN_FENCE_OP)
        & (F.col("type") == "ok"),
        "app_starts": line & (F.col("f") == "app-start"),
        "app_offsets": completed & (F.col("f") == "group-offsets") & (F.col("role") == "app"),
        # `_group_offsets`' rows, by role (a null role is the consumers' group).
        "consumer_offsets": _offset_rows(completed)
        & (F.coalesce(F.col("role"), F.lit("consumer")) == "consumer"),
        "copier_offsets": _offset_rows(completed) & (F.col("role") == "copier"),
        # `_processed`' rows: what a consumers' group handled.
        "processed": completed
        & (F.col("type") == "ok")
        & (F.col("f") == "process")
        & (F.col("kind") == "record")
        & (F.col("op") == "process"),
        # `_rebalances`' rows.
        "rebalance_rows": completed
        & (F.col("type") == "ok")
        & F.col("f").isin(*REBALANCE_FS)
        & F.col("op").isin(*REBALANCE_FS)
        & (F.col("kind") == "partition"),
    }
    op_time = F.when(line & ~F.col("damaged"), F.col("time"))
    row = rows.agg(
        *[F.count(F.when(c, 1)).alias(k) for k, c in when.items()],
        # The first and last op's times, for the report's time axis.
        F.min(op_time).alias("t0"),
        F.max(op_time).alias("t1"),
    ).collect()[0]
    return {k: int(row[k]) for k in when} | {k: row[k] for k in ("t0", "t1")}


# What `_fences` reads of a nemesis line: the op's fields, and of its value the two a
# takeover's completion names the fenced session by.
_FENCE_LINE = StructType(
    [
        StructField("index", LongType()),
        StructField("time", LongType()),
        StructField("type", StringType()),
        StructField("process", StringType()),
        StructField("f", StringType()),
        StructField(
            "value",
            StructType(
                [
                    StructField("client", LongType()),
                    StructField("transactional_id", StringType()),
                ]
            ),
        ),
    ]
)


def _fences(
    spark: SparkSession, path: str, lanes: tuple[dict[str, Any], ...] | None
) -> tuple[Fence, ...]:
    """The ok takeovers that name the session they fenced, by time. The flat rows keep
    no nemesis value: it is in the `lanes` the native parse kept, or else the few
    lines that mention the op are parsed again (as the report reads the nemesis's
    ops); a line that does not parse, or names no client (a history written before
    completions carried it), fences nothing."""
    if lanes is not None:
        return _lane_fences(lanes)
    text = F.col("value")
    line = F.from_json(text, _FENCE_LINE).alias("j")
    rows = (
        spark.read.text(path)
        .filter(text.contains(f'"{TXN_FENCE_OP}"') & F.rtrim(text).endswith("}"))
        .select(line)
        .select("j.*")
        .filter(
            (F.col("process") == "nemesis")
            & (F.col("f") == TXN_FENCE_OP)
            & (F.col("type") == "ok")
            & F.col("index").isNotNull()
            & F.col("time").isNotNull()
            & F.col("value.client").isNotNull()
        )
        .select("index", "time", "value.client", "value.transactional_id")
        .collect()
    )
    fences = [Fence(r["index"], r["time"], r["client"], r["transactional_id"]) for r in rows]
    return tuple(sorted(fences, key=lambda f: (f.time, f.index)))


_LONG = (-(1 << 63), (1 << 63) - 1)


def _lane_fences(lanes: tuple[dict[str, Any], ...]) -> tuple[Fence, ...]:
    """`_fences` from the lanes: what Spark's reading of those lines would give."""
    fences = []
    for op in lanes:
        value = op.get("value")
        if (op["process"], op["f"], op["type"]) != ("nemesis", TXN_FENCE_OP, "ok"):
            continue
        client = value.get("client") if isinstance(value, dict) else None
        if type(client) is not int or not _LONG[0] <= client <= _LONG[1] or op.get("time") is None:
            continue  # Spark reads what is not a long as null: no client named
        tid = value.get("transactional_id")
        if tid is not None and not isinstance(tid, str):
            tid = json.dumps(tid, separators=(",", ":"))  # as Spark reads it into a string
        fences.append(Fence(op["index"], op["time"], client, tid))
    return tuple(sorted(fences, key=lambda f: (f.time, f.index)))


def _is_app_output() -> Column:
    return F.col("role").eqNullSafe("app-output")


def _damaged_examples(rows: DataFrame, damaged: int) -> tuple[tuple[int | None, str], ...]:
    """(index, the line's start) of the first few damaged lines."""
    if not damaged:
        return ()
    bad = rows.filter((F.col("kind") == "op") & F.col("damaged"))
    return tuple(
        (r["index"], r["bad_line"])
        for r in bad.select("index", "bad_line").limit(DAMAGED_EXAMPLES).collect()
    )


def _open_invokes(ops: DataFrame, invoked: DataFrame) -> tuple[int, DataFrame]:
    """How many invokes have no completion, and the send items of those among
    `invoked` (the send invokes' items)."""
    # The op that completes an invoke is the next op of the same process, so an
    # invoke without one is its process's last op: an aggregate per process finds
    # it, where a window sorted every op.
    open_idx = (
        ops.filter(F.col("process") != "nemesis")
        .groupBy("process")
        .agg(F.max_by("type", "index").alias("last_type"), F.max("index").alias("index"))
        .filter(F.col("last_type") == "invoke")
        .select("index")
    )
    # At most one per process: a list the driver holds, so finding their invokes is a
    # filter. A join sorted every send invoke with its micro-ops in a one-task
    # analysis (2M lines: the sends took 7.7 s to build).
    open_list = [r["index"] for r in open_idx.limit(_OPEN_LISTED + 1).collect()]
    if len(open_list) <= _OPEN_LISTED:
        # One SQL expression: isin() makes a JVM call per value.
        listed = ",".join(str(int(i)) for i in open_list)
        open_sends = invoked.filter(F.expr(f"index IN ({listed})") if open_list else F.lit(False))
        return len(open_list), open_sends
    open_idx = open_idx.cache()
    open_invokes = open_idx.count()
    return open_invokes, invoked.join(_small(open_idx), "index")


def _all_sends(completions: DataFrame, open_sends: DataFrame, one_task: bool) -> DataFrame:
    """Every send with its outcome: the completed ones', then the open invokes'."""
    completed_sends = _sends(
        completions.filter(F.col("f").isin(*SEND_FS)),
        # Inside a txn the op's type is the outcome of every send in it.
        F.when(F.col("f") == "txn", F.col("type")).otherwise(
            F.coalesce(F.col("outcome"), F.col("type"))
        ),
    )
    # An invoke with no completion (the history was cut off) is indeterminate.
    unmatched = _sends(open_sends, F.lit("info")).withColumn("offset", F.lit(None).cast(LongType()))
    sends = completed_sends.unionByName(unmatched)
    if one_task:
        sends = sends.coalesce(1)  # a union is no longer one partition
    return sends.cache()


def _polled(completions: DataFrame, app_polls: bool) -> tuple[DataFrame, DataFrame]:
    """Every record a poll micro-op returned, with the op's type and the poll's role
    ("drain" for the final drain), cached (only ok ops' records count as reads); and
    apart, the ok records of the application's output drain (role "app-output")."""
    records = _records(
        completions.filter(F.col("f").isin(*READ_FS)),
        "poll",
        ["index", "process", "role", "f", "mpos", "type"],
    )
    app_output = records.filter(_is_app_output() & (F.col("type") == "ok")).select(
        "value", "topic", "partition", "offset", "index", "process"
    )
    if not app_polls:
        # No app-output poll: the filter is left out, and the app's frame is planned
        # as an empty relation, so a run without an app reads nothing more.
        return records.cache(), app_output.limit(0)
    # Cached whole, not only its ok part: every record is evidence (the version order,
    # where one op's sends sit), and a filter of the cache is cheaper than a second
    # pass over the rows. The app's output is left out in the same pass, and cached
    # too: four checks and the undecided findings read it.
    return records.filter(~_is_app_output()).cache(), app_output.cache()


def _processed(ok: DataFrame) -> DataFrame:
    """The records the ok process micro-ops hold: what group members handled."""
    rows = ok.filter(F.col("f") == "process")
    return _records(rows, "process", ["index", "process"]).drop("rpos")


def _offset_rows(completed: Column) -> Column:
    """The rows of groups' final offsets (`_group_offsets`) among the flat rows."""
    return (
        completed
        & (F.col("type") == "ok")
        & (F.col("f") == "group-offsets")
        & (F.col("kind") == "offset")
        & F.col("offset").isNotNull()
    )


def _group_offsets(ok: DataFrame) -> DataFrame:
    return ok.filter(_offset_rows(F.lit(True))).select(
        F.coalesce(F.col("role"), F.lit("consumer")).alias("role"),
        "topic",
        "partition",
        F.col("offset").alias("committed"),
    )


def _end_events(ok: DataFrame) -> DataFrame:
    """Per drain role and partition, the last index at which a drain poll found the
    partition at its end (`end_at`, with the furthest such end, `end_offset`) and
    found its end held below the high watermark (`held_at`, with the highest such
    watermark, `high_watermark`): what `_drain_ends` and `_held_ends` both read."""
    kind, index, offset = F.col("kind"), F.col("index"), F.col("offset")
    return (
        ok.filter(
            (F.col("f") == "poll")
            & kind.isin("end", "held")
            & F.col("role").isin("drain", "app-output")
        )
        .groupBy("role", "topic", "partition")
        .agg(
            F.max(F.when(kind == "end", offset)).alias("end_offset"),
            F.max(F.when(kind == "end", index)).alias("end_at"),
            F.max(F.when(kind == "held", offset)).alias("high_watermark"),
            F.max(F.when(kind == "held", index)).alias("held_at"),
        )
    )


# An end a later poll of the same drain found held (or the same poll: a tie) is
# withdrawn: records arrived past it behind an open transaction, so it no longer
# proves the partition read. A partition's last word is its end or its hold.
def _end_stands() -> Column:
    return F.col("held_at").isNull() | (
        F.col("end_at").isNotNull() & (F.col("end_at") > F.col("held_at"))
    )


def _drain_ends(events: DataFrame, role: str) -> DataFrame:
    return events.filter(
        (F.col("role") == role) & F.col("end_offset").isNotNull() & _end_stands()
    ).select("topic", "partition", "end_offset")


def _held_ends(events: DataFrame) -> DataFrame:
    return events.filter(F.col("held_at").isNotNull() & ~_end_stands()).select(
        "role", "topic", "partition", "high_watermark"
    )


def _rebalances(ok: DataFrame) -> DataFrame:
    return (
        ok.filter(
            F.col("f").isin(*REBALANCE_FS)
            & F.col("op").isin(*REBALANCE_FS)
            & (F.col("kind") == "partition")
        )
        .select("process", "index", "partition")
        .distinct()
    )


def _flat_rows(spark: SparkSession, path: str, raw: DataFrame | None, columnar: bool) -> DataFrame:
    """The history's flat rows (FLAT_SCHEMA), from `raw` in any of the schemas `load`
    takes, or read from `path`."""
    if raw is None:
        raw = read_json(spark, path)
    rows = raw if "kind" in raw.columns else flatten(raw)
    if columnar:
        return rows
    # Parsed once: every frame is a filter of these rows. Memory and disk, since a
    # large history's rows need not fit the driver's heap.
    return rows.persist(StorageLevel.MEMORY_AND_DISK)


def load(
    spark: SparkSession,
    path: str,
    raw: DataFrame | None = None,
    one_task: bool = False,
    columnar: bool = False,
    lanes: tuple[dict[str, Any], ...] | None = None,  # as Frames.lanes
) -> Frames:
    """The frames of the history at `path`, or of its rows `raw`: flat rows
    (FLAT_SCHEMA, what the columnar cache holds), PARSED_SCHEMA or HISTORY_SCHEMA rows.

    `one_task` puts the rows in one partition. Every window, aggregate and join of
    the checks then finds its input already clustered, so Spark plans no exchange:
    a small history is judged in a handful of stages instead of ~80, each with its
    own scheduling, shuffle files and (with AQE) re-planning, which were most of a
    small analysis's cost. Only for histories one core reads quickly.

    `columnar`: `raw` is read from Parquet (the cache), whose columns each frame
    below reads again for less than holding the rows in memory costs."""
    rows = _flat_rows(spark, path, raw, columnar)
    # Counted before the rows are one partition: the parse runs on every core, and the
    # one-task plan reads what it cached.
    decided = _decisions(rows)
    damaged = decided["damaged"]
    examples = _damaged_examples(rows, damaged)
    if one_task:
        rows = rows.coalesce(1)
    lines = rows.filter(F.col("kind") == "op")
    ops = lines.filter(~F.col("damaged")).select(*OP_COLUMNS)
    # Items exist only for client ops that are not damaged (history_parse.flatten).
    items = rows.filter(F.col("kind") != "op")
    invoked = items.filter((F.col("type") == "invoke") & F.col("f").isin(*SEND_FS))
    open_invokes, open_sends = _open_invokes(ops, invoked)

    attempted = invoked.filter(F.col("kind") == "send").select("value").distinct().cache()
    completions = items.filter(F.col("type").isin("ok", "fail", "info"))
    sends = _all_sends(completions, open_sends, one_task)
    polled, app_output = _polled(completions, decided["app_output_polls"] > 0)
    reads = polled.filter(F.col("type") == "ok").drop("type")
    txn_polls = polled.filter(F.col("f") == "txn").select(
        "value", "topic", "partition", "offset", "index", "process", "type"
    )
    ok = completions.filter(F.col("type") == "ok")
    ends = _end_events(ok)
    return Frames(
        ops,
        damaged,
        open_invokes,
        attempted,
        sends,
        reads,
        _processed(ok),
        _group_offsets(ok),
        _rebalances(ok),
        txn_polls,
        _drain_ends(ends, "drain"),
        decided["drain_polls"] > 0,
        polled,
        app_output,
        _drain_ends(ends, "app-output"),
        _held_ends(ends),
        examples,
        one_task,
        txn_ops=decided["txn_ops"] > 0,
        lines=decided["lines"],
        span=(decided["t0"], decided["t1"]),
        rebalanced=decided["rebalance_rows"] > 0,
        # An open invoke's sends are info: if it is a transaction's, they count too.
        maybe_unknown_txn=decided["txn_info_sends"] > 0
        or (open_invokes > 0 and decided["txn_ops"] > 0),
        app_present=any(decided[k] for k in ("app_output_polls", "app_starts", "app_offsets")),
        app_output_polls=decided["app_output_polls"],
        reader_polls=decided["reader_polls"] > 0,
        failed_sends=decided["failed_sends"] > 0,
        consumer_offsets=decided["consumer_offsets"] > 0,
        copier_offsets=decided["copier_offsets"] > 0,
        processed_records=decided["processed"] > 0,
        fences=_fences(spark, path, lanes) if decided["fences"] else (),
        lanes=lanes,
    )
