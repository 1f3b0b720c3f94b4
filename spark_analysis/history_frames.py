"""Read a history.jsonl into the DataFrames the checks share.

The history is parsed once (read_json: each line of text into HISTORY_SCHEMA, and
marked damaged unless it is an op whose micro-ops all converted), either straight
from the JSON or from its columnar cache (columnar.py); `load` keeps those rows and
builds every frame from them. `value` is polymorphic: micro-ops for client ops, any
JSON for the nemesis, so only client ops' values are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args, get_type_hints

from kafka_trial.contracts.ops import MICRO_OPS as MICRO_OP_TYPES
from kafka_trial.contracts.ops import OFFSET_FIELDS, RECORD_FIELDS, FieldKind, micro_op_fields
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
)

_SCALARS = {"string": StringType(), "long": LongType(), "bool": BooleanType()}


def _struct(fields: dict[str, FieldKind]) -> StructType:
    return StructType([StructField(name, _type(kind)) for name, kind in fields.items()])


def _type(kind: FieldKind) -> DataType:
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "records":
        return ArrayType(_struct(RECORD_FIELDS))
    if kind == "offsets":
        return ArrayType(_struct(OFFSET_FIELDS))
    if kind == "longs":
        return ArrayType(LongType())
    raise ValueError(f"no Spark type for micro-op field kind {kind}")


# Derived from the one definition of the history format (contracts/ops.py).
MICRO_OPS = ArrayType(_struct(micro_op_fields()))

# `value` is polymorphic: micro-ops for client ops, any JSON for the nemesis. Reading
# it straight into the micro-op type parses each line once; a nemesis value that
# does not fit comes back null (with the line in _corrupt) and is not needed here.
HISTORY_SCHEMA = StructType(
    [
        StructField("index", LongType()),
        StructField("time", LongType()),
        StructField("type", StringType()),
        StructField("process", StringType()),
        StructField("f", StringType()),
        StructField("value", MICRO_OPS),
        StructField("error", StringType()),
        StructField("_corrupt", StringType()),
    ]
)

SEND_FS = ("send", "txn")
GROUP_FS = ("process", "commit", "group-offsets", "assign", "revoke", "lost", "crash")
READ_FS = ("poll", "txn")
# The ops whose micro-ops the frames read: a damaged one would lose records silently.
CLIENT_FS = (*SEND_FS, *READ_FS, *GROUP_FS)
OP_TYPES = ("invoke", "ok", "fail", "info")
REBALANCE_FS = ("assign", "revoke", "lost")


def _micro_op_names() -> tuple[str, ...]:
    """Every `op` a micro-op can carry, from the format's one definition."""
    names: list[str] = []
    for cls in MICRO_OP_TYPES:
        op = getattr(cls, "op", None)
        if isinstance(op, str):
            names.append(op)
        else:  # a property: the op is the value of the `kind` field
            names.extend(get_args(get_type_hints(cls)["kind"]))
    return tuple(names)


MICRO_OP_NAMES = _micro_op_names()

# The same line read leniently, `value` as its JSON text: a line that fails even this
# is not a JSON object or its index or time is not an integer. Only lines whose value
# does not fit the micro-ops (the nemesis's) are read again this way.
LINE_SCHEMA = StructType(
    [
        StructField("index", LongType()),
        StructField("time", LongType()),
        StructField("type", StringType()),
        StructField("process", StringType()),
        StructField("f", StringType()),
        StructField("value", StringType()),
        StructField("error", StringType()),
        StructField("_corrupt", StringType()),
    ]
)
_PERMISSIVE = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"}
_BAD_LINE_CHARS = 200

# The parsed rows, what the columnar cache holds: HISTORY_SCHEMA's columns less the
# corrupt text, plus whether the line is damaged and, if so, its start.
PARSED_SCHEMA = StructType(
    [
        *[f for f in HISTORY_SCHEMA.fields if f.name != "_corrupt"],
        StructField("damaged", BooleanType()),
        StructField("bad_line", StringType()),
    ]
)


@dataclass(frozen=True)
class Frames:
    ops: DataFrame  # every parsed line, without `value`: index, time, type, process, f
    damaged: int  # lines that are not ops (see mark_damaged), the cut-off last line too
    open_invokes: int  # invokes with no completion (the history was cut off)
    attempted: DataFrame  # value: every value any send invoked
    # value, process, index, pos, f, topic, partition, offset, outcome, client, seq
    sends: DataFrame
    reads: DataFrame  # value, topic, partition, offset, index, process, rpos, role, f (ok ops)
    processed: DataFrame  # value, topic, partition, offset, index, process
    group_offsets: DataFrame  # role, topic, partition, committed (each group's final offsets)
    # process, index, partitions (what it moved) of each ok assign / revoke / lost op
    rebalances: DataFrame
    # value, topic, partition, offset, index, process, type: the records a txn op's poll
    # micro-op returned, whatever the op's outcome (reads holds only the ok ones)
    txn_polls: DataFrame
    drain_ends: DataFrame  # topic, partition, end_offset: where the final drain read to the end
    drain_ran: bool  # some poll of the final drain completed
    # (index if it has one, the line's start) of up to DAMAGED_EXAMPLES damaged lines
    damaged_examples: tuple[tuple[int | None, str], ...] = ()
    # The whole history is one partition (see `load`): joins need no broadcast.
    one_task: bool = False

    def small(self, df: DataFrame) -> DataFrame:
        return _small(df, self.one_task)


DAMAGED_EXAMPLES = 8


# Open invokes up to this many are found by a filter on their indexes, more by a join.
_OPEN_LISTED = 10_000


def _small(df: DataFrame, one_task: bool) -> DataFrame:
    """A join's small side: broadcast, unless the plan runs in one task anyway
    (a broadcast is a job of its own, and there is nothing to spread)."""
    return df if one_task else F.broadcast(df)


def _send_rows(df: DataFrame, outcome: Column) -> DataFrame:
    return (
        df.select("index", "process", "f", "type", F.posexplode("micro").alias("pos", "m"))
        .filter(F.col("m.op") == "send")
        .select(
            F.col("m.value").alias("value"),
            "process",
            "index",
            "pos",
            "f",
            F.col("m.topic").alias("topic"),
            F.col("m.partition").alias("partition"),
            F.col("m.offset").alias("offset"),
            outcome.alias("outcome"),
            F.col("m.client").alias("client"),
            F.col("m.seq").alias("seq"),
        )
    )


def _records(ops: DataFrame, op: str, keep: list[str], with_role: bool = False) -> DataFrame:
    """One row per record inside the `op` micro-ops of `ops`: the record's fields, the
    `keep` columns of its op, its position in the micro-op (`rpos`) and, if asked,
    the micro-op's role."""
    role = [F.col("m.role").alias("role")] if with_role else []
    return (
        ops.select(*keep, F.explode("micro").alias("m"))
        .filter(F.col("m.op") == op)
        .select(*keep, *role, F.posexplode("m.records").alias("rpos", "r"))
        .select(
            *[F.col(f"r.{name}").alias(name) for name in ("value", "topic", "partition", "offset")],
            *keep[:2],
            "rpos",
            *(["role"] if with_role else []),
            *keep[2:],
        )
    )


def mark_damaged(rows: DataFrame, line: Column | None = None) -> DataFrame:
    """PARSED_SCHEMA rows from HISTORY_SCHEMA rows (and, if known, each row's text).

    Every line is an op or damaged, never dropped silently. A field that does not
    convert (a value beyond int64, an offset that is text) nulls only itself and marks
    the line corrupt, so a client op would lose that record without a trace; the
    nemesis's values never fit the micro-ops, so its lines count as damaged only when
    they fail the lenient read too."""
    is_client = (F.col("process") != "nemesis") & F.col("f").isin(*CLIENT_FS)
    micro_ok = F.forall(
        "value",
        lambda m: (
            m.isNotNull()
            & m.op.isin(*MICRO_OP_NAMES)
            & ~F.coalesce(F.exists(m.records, lambda r: r.isNull()), F.lit(False))
        ),
    )
    client_ok = F.col("_corrupt").isNull() & F.coalesce(micro_ok, F.lit(False))
    other_ok = F.when(F.col("_corrupt").isNull(), True).otherwise(
        F.from_json("_corrupt", LINE_SCHEMA, _PERMISSIVE)["_corrupt"].isNull()
    )
    ok = (
        F.col("index").isNotNull()
        & F.col("type").isin(*OP_TYPES)
        & F.col("process").isNotNull()
        & F.col("f").isNotNull()
        & F.when(is_client, client_ok).otherwise(other_ok)
    )
    if line is not None:
        # The JSON reader stops after the first object: `{op} junk` and an op followed
        # by the cut-off start of another would parse as the first op alone.
        ok = ok & F.rtrim(line).endswith("}")
    damaged = ~F.coalesce(ok, F.lit(False))
    bad = F.substring(line if line is not None else F.col("_corrupt"), 1, _BAD_LINE_CHARS)
    keep = [f.name for f in HISTORY_SCHEMA.fields if f.name != "_corrupt"]
    return rows.select(
        *keep, damaged.alias("damaged"), F.when(damaged, bad).alias("bad_line")
    ).select(*[F.col(f.name).cast(f.dataType) for f in PARSED_SCHEMA.fields])


def parse_lines(lines: DataFrame) -> DataFrame:
    """PARSED_SCHEMA rows of text lines (a DataFrame with one string column `value`,
    as spark.read.text gives): one per line that is not blank."""
    text = F.col("_line")
    # `null` and other non-objects parse to nothing rather than to a corrupt row.
    nothing = F.struct(
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in HISTORY_SCHEMA.fields[:-1]],
        text.alias("_corrupt"),
    )
    parsed = (
        lines.select(F.col(lines.columns[0]).alias("_line"))
        .filter(F.trim(text) != "")
        .select(
            F.coalesce(F.from_json(text, HISTORY_SCHEMA, _PERMISSIVE), nothing).alias("j"), text
        )
        .select("j.*", text)
    )
    return mark_damaged(parsed, text)


def read_json(spark: SparkSession, path: str) -> DataFrame:
    """The history's lines, parsed once into PARSED_SCHEMA's rows.

    Read as text and then parsed, so every line is one row: the JSON reader turns a
    line holding an array into one row per element, or none for `[]`."""
    return parse_lines(spark.read.text(path))


def line_is_damaged(spark: SparkSession, line: str) -> bool:
    """Whether the analysis counts this one line as damaged (blank lines are no line)."""
    rows = parse_lines(spark.createDataFrame([(line,)], "value string"))
    return bool(rows.filter("damaged").limit(1).count())


def load(
    spark: SparkSession,
    path: str,
    raw: DataFrame | None = None,
    one_task: bool = False,
    columnar: bool = False,
) -> Frames:
    """The frames of the history at `path`, or of its parsed rows `raw`: PARSED_SCHEMA
    rows (the columnar cache of it, see columnar.py) or HISTORY_SCHEMA rows.

    `one_task` puts the parsed rows in one partition. Every window, aggregate and
    join of the checks then finds its input already clustered, so Spark plans no
    exchange: a small history is judged in a handful of stages instead of ~80, each
    with its own scheduling, shuffle files and (with AQE) re-planning, which were
    most of a small analysis's cost. Only for histories one core reads quickly.

    `columnar`: `raw` is read from Parquet (the cache), whose columns each frame
    below reads again for less than caching the nested rows costs: on a 2M-line
    history, 1.7 s to read every column against 7 s to cache them."""
    rows = read_json(spark, path) if raw is None else raw
    if "damaged" not in rows.columns:
        rows = mark_damaged(rows)
    is_client = (F.col("process") != "nemesis") & F.col("f").isin(*CLIENT_FS)
    # Parsed once: every frame below is built from these rows. Memory and disk, since
    # a large history's rows need not fit the driver's heap.
    parsed = rows.select(
        "index",
        "time",
        "type",
        "process",
        "f",
        "damaged",
        "bad_line",
        F.when(is_client & ~F.col("damaged"), F.col("value")).alias("micro"),
    )
    if one_task:
        parsed = parsed.coalesce(1)
    if not columnar:
        parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    damaged = parsed.filter(F.col("damaged")).count()
    examples: tuple[tuple[int | None, str], ...] = ()
    if damaged:
        examples = tuple(
            (r["index"], r["bad_line"])
            for r in parsed.filter(F.col("damaged"))
            .select("index", "bad_line")
            .limit(DAMAGED_EXAMPLES)
            .collect()
        )
    ok_rows = parsed.filter(~F.col("damaged"))
    ops = ok_rows.select("index", "time", "type", "process", "f")

    client = ok_rows.filter(F.col("micro").isNotNull())
    invokes = client.filter((F.col("type") == "invoke") & F.col("f").isin(*SEND_FS))

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
        open_invokes = len(open_list)
        # One SQL expression: isin() makes a JVM call per value.
        listed = ",".join(str(int(i)) for i in open_list)
        open_sends = invokes.filter(F.expr(f"index IN ({listed})") if open_list else F.lit(False))
    else:
        open_idx = open_idx.cache()
        open_invokes = open_idx.count()
        open_sends = invokes.join(_small(open_idx, one_task), "index")

    attempted = (
        invokes.select(F.explode("micro").alias("m"))
        .filter(F.col("m.op") == "send")
        .select(F.col("m.value").alias("value"))
        .distinct()
        .cache()
    )
    completions = client.filter(F.col("type").isin("ok", "fail", "info"))
    completed_sends = _send_rows(
        completions.filter(F.col("f").isin(*SEND_FS)),
        # Inside a txn the op's type is the outcome of every send in it.
        F.when(F.col("f") == "txn", F.col("type")).otherwise(
            F.coalesce(F.col("m.outcome"), F.col("type"))
        ),
    )
    # An invoke with no completion (the history was cut off) is indeterminate.
    unmatched = _send_rows(open_sends, F.lit("info")).withColumn(
        "offset", F.lit(None).cast(LongType())
    )
    sends = completed_sends.unionByName(unmatched)
    if one_task:
        sends = sends.coalesce(1)  # a union is no longer one partition
    sends = sends.cache()

    # Every record a poll micro-op returned, with the op's type and the poll's role
    # ("drain" for the final drain); only ok ops' records count as reads.
    polled = _records(
        completions.filter(F.col("f").isin(*READ_FS)),
        "poll",
        ["index", "process", "f", "type"],
        with_role=True,
    )
    reads = polled.filter(F.col("type") == "ok").drop("type").cache()
    txn_polls = polled.filter(F.col("f") == "txn").select(
        "value", "topic", "partition", "offset", "index", "process", "type"
    )
    processed = _records(
        completions.filter((F.col("type") == "ok") & (F.col("f") == "process")),
        "process",
        ["index", "process"],
    ).drop("rpos")
    group_offsets = (
        completions.filter((F.col("type") == "ok") & (F.col("f") == "group-offsets"))
        .select(F.explode("micro").alias("m"))
        .select(
            F.coalesce(F.col("m.role"), F.lit("consumer")).alias("role"),
            F.explode("m.offsets").alias("o"),
        )
        .select(
            "role",
            F.col("o.topic").alias("topic"),
            F.col("o.partition").alias("partition"),
            F.col("o.offset").alias("committed"),
        )
        .filter(F.col("committed").isNotNull())
    )
    drain_ends = (
        completions.filter((F.col("type") == "ok") & (F.col("f") == "poll"))
        .select(F.explode("micro").alias("m"))
        .filter(F.col("m.role") == "drain")
        .select(F.explode("m.at_end").alias("e"))
        .groupBy(F.col("e.topic").alias("topic"), F.col("e.partition").alias("partition"))
        .agg(F.max("e.offset").alias("end_offset"))
    )
    drain_ran = (
        completions.filter(F.col("f") == "poll")
        .select(F.explode("micro").alias("m"))
        .filter(F.col("m.role") == "drain")
        .limit(1)
        .count()
        > 0
    )
    rebalances = completions.filter(
        (F.col("type") == "ok") & F.col("f").isin(*REBALANCE_FS)
    ).select(
        "process",
        "index",
        F.flatten(
            F.transform(
                F.filter("micro", lambda m: m.op.isin(*REBALANCE_FS)),
                lambda m: F.coalesce(m.partitions, F.array().cast(ArrayType(LongType()))),
            )
        ).alias("partitions"),
    )
    return Frames(
        ops,
        damaged,
        open_invokes,
        attempted,
        sends,
        reads,
        processed,
        group_offsets,
        rebalances,
        txn_polls,
        drain_ends,
        drain_ran,
        examples,
        one_task,
    )
