"""Parse a history.jsonl: each line into HISTORY_SCHEMA, marked damaged unless it is
an op whose micro-ops all converted (PARSED_SCHEMA), then flattened into one row per
line and per item inside its micro-ops (FLAT_SCHEMA), what every frame of the
analysis (history_frames.py) and the columnar cache (columnar.py) are made of.

`value` is polymorphic: micro-ops for client ops, any JSON for the nemesis, so only
client ops' values are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args, get_type_hints

from kafka_trial.contracts.ops import MICRO_OPS as MICRO_OP_TYPES
from kafka_trial.contracts.ops import OFFSET_FIELDS, RECORD_FIELDS, FieldKind, micro_op_fields
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
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
# The fields every line has, whatever its `value`.
_OP_FIELDS = [
    StructField("index", LongType()),
    StructField("time", LongType()),
    StructField("type", StringType()),
    StructField("process", StringType()),
    StructField("f", StringType()),
]
OP_COLUMNS = tuple(f.name for f in _OP_FIELDS)


def _line_schema(value: DataType) -> StructType:
    return StructType(
        [
            *_OP_FIELDS,
            StructField("value", value),
            StructField("error", StringType()),
            StructField("_corrupt", StringType()),
        ]
    )


HISTORY_SCHEMA = _line_schema(MICRO_OPS)

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
LINE_SCHEMA = _line_schema(StringType())
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


# One row per line (kind "op", which alone carries `damaged` and `bad_line`) and one
# per item inside its micro-ops: a send ("send"), a record a poll or process micro-op
# holds ("record"), a committed offset ("offset"), a partition end the drain reached
# ("end"), an end it found held below the high watermark ("held", `offset` that high
# watermark), a partition a rebalance moved ("partition"); a micro-op with none of these
# is one row of kind "micro", so every micro-op's fields are seen. `mpos` is the
# micro-op's position in its op, `ipos` the item's in its list (a record's rpos).
# Every frame is a filter of these rows: primitive columns, which a columnar scan
# reads without rebuilding the nested micro-ops.
FLAT_SCHEMA = StructType(
    [
        *_OP_FIELDS,
        StructField("damaged", BooleanType()),
        StructField("bad_line", StringType()),
        StructField("kind", StringType()),
        StructField("mpos", IntegerType()),
        StructField("op", StringType()),
        StructField("role", StringType()),
        StructField("outcome", StringType()),
        StructField("client", LongType()),
        StructField("seq", LongType()),
        StructField("ipos", IntegerType()),
        StructField("value", LongType()),
        StructField("topic", StringType()),
        StructField("partition", LongType()),
        StructField("offset", LongType()),
    ]
)
_ITEM = ("kind", "ipos", "value", "topic", "partition", "offset")
_MICRO = ("mpos", "op", "role", "outcome", "client", "seq")
_ITEM_TYPE = StructType([FLAT_SCHEMA[name] for name in _ITEM])


def _null(name: str) -> Column:
    return F.lit(None).cast(FLAT_SCHEMA[name].dataType)


def _item(kind: str, ipos: Column | None, **cols: Column) -> Column:
    return F.struct(
        F.lit(kind).alias("kind"),
        (ipos if ipos is not None else F.lit(0)).cast("int").alias("ipos"),
        *[cols.get(name, _null(name)).alias(name) for name in _ITEM[2:]],
    )


def _none() -> Column:
    return F.array().cast(ArrayType(_ITEM_TYPE))


def _listed(arr: Column, kind: str, item: Callable[[Column], dict[str, Column]]) -> Column:
    return F.coalesce(F.transform(arr, lambda x, i: _item(kind, i, **item(x))), _none())


def _tpo(o: Column) -> dict[str, Column]:
    return {"topic": o.topic, "partition": o.partition, "offset": o.offset}


def _micro_items(m: Column, mpos: Column) -> Column:
    """The items of micro-op `m`, each with the micro-op's own fields."""
    items = F.concat(
        F.when(
            m.op == "send",
            F.array(_item("send", None, value=m.value, **_tpo(m))),
        ).otherwise(_none()),
        _listed(m.records, "record", lambda r: {"value": r.value, **_tpo(r)}),
        _listed(m.offsets, "offset", _tpo),
        _listed(m.at_end, "end", _tpo),
        _listed(m.held, "held", _tpo),
        _listed(m.partitions, "partition", lambda p: {"partition": p}),
    )
    items = F.when(F.size(items) == 0, F.array(_item("micro", None))).otherwise(items)
    return F.transform(
        items,
        lambda it: F.struct(
            *[it[name].alias(name) for name in _ITEM],
            mpos.cast("int").alias("mpos"),
            *[m[name].alias(name) for name in _MICRO[1:]],
        ),
    )


def flatten(parsed: DataFrame) -> DataFrame:
    """FLAT_SCHEMA rows of PARSED_SCHEMA rows (or HISTORY_SCHEMA rows, which are
    marked first). Only client ops that are not damaged contribute items."""
    if "damaged" not in parsed.columns:
        parsed = mark_damaged(parsed)
    is_client = (F.col("process") != "nemesis") & F.col("f").isin(*CLIENT_FS)
    micro = F.when(is_client & ~F.col("damaged"), F.col("value"))
    line_row = F.struct(
        F.lit("op").alias("kind"),
        *[_null(name).alias(name) for name in (*_ITEM[1:], *_MICRO)],
    )
    items = F.flatten(F.transform(F.coalesce(micro, F.array()), _micro_items))
    rows = parsed.select(
        *OP_COLUMNS,
        "damaged",
        "bad_line",
        F.explode(F.concat(F.array(line_row), items)).alias("it"),
    )
    line_only = F.col("it.kind") == "op"
    return rows.select(
        *OP_COLUMNS,
        F.when(line_only, F.col("damaged")).alias("damaged"),
        F.when(line_only, F.col("bad_line")).alias("bad_line"),
        *[F.col(f"it.{name}").alias(name) for name in FLAT_SCHEMA.names[7:]],
    ).select(*[F.col(f.name).cast(f.dataType) for f in FLAT_SCHEMA.fields])
