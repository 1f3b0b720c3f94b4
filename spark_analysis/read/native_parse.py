"""history.jsonl into the analysis's flat rows (history_parse.FLAT_SCHEMA) without
Spark: Python's JSON parser and a loop, written as Parquet with Arrow.

Spark's parse of the JSON was most of what a default run's analysis cost beyond
its checks (docs/findings.md, "Analysis speed"). This parse runs beside the JVM's
start-up and hands Spark a Parquet file instead.

It is a strict subset of Spark's parse, never a second definition of it: it accepts
a history only if every line is an op that Spark's parse takes as undamaged, with
every key known and every value of exactly its kind, and then yields the rows
Spark's flatten would (tests/unit/test_native_parse.py compares the two on random
and edge-case histories). Anything else, a single damaged or unusual line among
millions, and it declines (`None`), and Spark parses the JSON as before: damaged
lines, their count and examples, and the cut-off last line stay Spark's to judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from kafka_trial.contracts.ops import OFFSET_FIELDS, RECORD_FIELDS, FieldKind, micro_op_fields
from kafka_trial.spark_analysis.read.history_parse import (
    CLIENT_FS,
    FLAT_SCHEMA,
    MICRO_OP_NAMES,
    OP_COLUMNS,
    OP_TYPES,
)

_INT64 = (-(1 << 63), (1 << 63) - 1)
_LINE_KEYS = frozenset((*OP_COLUMNS, "value", "error"))
_MICRO_FIELDS = micro_op_fields()
# A record and an offset are read by their keys below: the format's change fails here.
if set(RECORD_FIELDS) != {"topic", "partition", "offset", "value"} or set(OFFSET_FIELDS) != {
    "topic",
    "partition",
    "offset",
}:
    raise ImportError("native_parse reads records and offsets by keys the format no longer has")
# The micro-op fields every flat row carries (Arrow checks them): the rest are checked here.
_MICRO_EMITTED = frozenset(("op", "role", "outcome", "client", "seq"))
_SEND_EMITTED = _MICRO_EMITTED | {"value", "topic", "partition", "offset"}
_MICRO_NAMES = frozenset(MICRO_OP_NAMES)
_CLIENT_FS = frozenset(CLIENT_FS)
_ARROW = {"StringType()": pa.string(), "LongType()": pa.int64(), "IntegerType()": pa.int32()}
_ARROW_BOOL = pa.bool_()
# Rows per Parquet row group (and rows held in memory as tuples before it is written).
_GROUP_ROWS = 1 << 18
# The Parquet file's key-value metadata that holds the lanes (`lanes`): the nemesis's
# and the application's ops, whole. Beyond LANES_MAX of them none are kept, and the
# analysis reads them from the text as it does for a history this parser declined.
LANES_KEY = b"kafka_trial.lanes"
LANES_MAX = 100_000


class Declined(Exception):
    """The line is not one this parser vouches for; Spark parses the history."""


def arrow_schema() -> pa.Schema:
    fields = []
    for f in FLAT_SCHEMA.fields:
        t = _ARROW_BOOL if repr(f.dataType) == "BooleanType()" else _ARROW[repr(f.dataType)]
        fields.append(pa.field(f.name, t))
    return pa.schema(fields)


def _no_constant(name: str) -> Any:
    raise Declined(f"non-numeric number {name}")


class _Float:
    """A JSON number with a fraction or exponent: Spark reads none of them into a
    long, and Arrow would (2.0 as 2), so they become a type nothing takes."""

    def __init__(self, text: str) -> None:
        self.text = text


def _string(v: Any) -> None:
    if v is not None and type(v) is not str:
        raise Declined("not a string")


def _check(v: Any, kind: FieldKind) -> None:
    """A micro-op field that is not emitted, of exactly its kind (or null)."""
    if v is None:
        return
    if kind == "long":
        ok = type(v) is int and _INT64[0] <= v <= _INT64[1]
    elif kind == "string":
        ok = type(v) is str
    elif kind == "bool":
        ok = type(v) is bool
    else:  # records, offsets, longs: lists, emitted item by item
        ok = type(v) is list
    if not ok:
        raise Declined(f"not a {kind}")


def _process(v: Any) -> str:
    # Spark reads a number into a string column as its JSON text.
    if type(v) is str:
        return v
    if type(v) is int:
        return str(v)
    raise Declined("process is neither a string nor an integer")


def _rows_of_line(d: Any, emit: Callable[..., None]) -> None:
    """The flat rows of one parsed line (see history_parse.flatten).

    Emitted values are checked by Arrow when the batch becomes columns: a string, a
    list or a float (`_Float`) where an integer goes, a number where a string goes,
    or an integer beyond int64 fails the whole conversion. What is not emitted, and
    what Arrow would take but Spark would not, is checked here."""
    op = _op_of_line(d)
    # The line's own row: the only one with `damaged` (never, here) and `bad_line`.
    emit(*op, False, None, "op", None, None, None, None, None, None, None, None, None, None, None)
    _, _, _, process, f = op
    if process == "nemesis" or f not in _CLIENT_FS:
        return  # its value is not read (any JSON)
    value = d.get("value")
    if type(value) is not list:
        raise Declined("a client op's value is not a list of micro-ops")
    for mpos, m in enumerate(value):
        _rows_of_micro_op(op, mpos, m, emit)


def _op_of_line(d: Any) -> tuple[Any, ...]:
    """The columns every row of the line repeats: index, time, type, process, f."""
    if type(d) is not dict or not d.keys() <= _LINE_KEYS:
        raise Declined("not an op, or a key the format does not have")
    index = d.get("index")
    type_ = d.get("type")
    f = d.get("f")
    if index is None or type_ not in OP_TYPES or type(f) is not str:
        raise Declined("not an op")
    process = _process(d.get("process"))
    _string(d.get("error"))
    return (index, d.get("time"), type_, process, f)


def _micro_op_name(m: Any) -> str:
    """The name of a micro-op whose keys are all known and whose fields that are not
    emitted are of their kind."""
    if type(m) is not dict:
        raise Declined("a micro-op that is not an object")
    name = m.get("op")
    if name not in _MICRO_NAMES:
        raise Declined("unknown micro-op")
    for k in m.keys() - (_SEND_EMITTED if name == "send" else _MICRO_EMITTED):
        kind = _MICRO_FIELDS.get(k)
        if kind is None:
            raise Declined(f"a micro-op key the format does not have: {k}")
        _check(m[k], kind)
    return name


def _rows_of_micro_op(op: tuple[Any, ...], mpos: int, m: Any, emit: Callable[..., None]) -> None:
    """A row per send, record, offset and partition of the micro-op, or one `micro`
    row if it has none."""
    name = _micro_op_name(m)
    micro = (mpos, name, m.get("role"), m.get("outcome"), m.get("client"), m.get("seq"))
    n = 0
    if name == "send":
        emit(
            *op,
            None,
            None,
            "send",
            *micro,
            0,
            m.get("value"),
            m.get("topic"),
            m.get("partition"),
            m.get("offset"),
        )
        n += 1
    records = m.get("records")
    if records:
        n += _record_rows(op, micro, records, emit)
    for kind, key in (("offset", "offsets"), ("end", "at_end"), ("held", "held")):
        offsets = m.get(key)
        if offsets:
            n += _offset_rows(op, micro, kind, offsets, emit)
    parts = m.get("partitions")
    if parts:
        n += _partition_rows(op, micro, parts, emit)
    if not n:
        emit(*op, None, None, "micro", *micro, 0, None, None, None, None)


def _record_rows(
    op: tuple[Any, ...], micro: tuple[Any, ...], records: list[Any], emit: Callable[..., None]
) -> int:
    for i, r in enumerate(records):
        # Every record has exactly these four keys (contracts/ops.Record).
        if type(r) is not dict or len(r) != 4:
            raise Declined("a record that is not its four keys")
        emit(
            *op,
            None,
            None,
            "record",
            *micro,
            i,
            r["value"],
            r["topic"],
            r["partition"],
            r["offset"],
        )
    return len(records)


def _offset_rows(
    op: tuple[Any, ...],
    micro: tuple[Any, ...],
    kind: str,
    offsets: list[Any],
    emit: Callable[..., None],
) -> int:
    for i, o in enumerate(offsets):
        if type(o) is not dict or len(o) != 3:
            raise Declined("an offset that is not its three keys")
        emit(*op, None, None, kind, *micro, i, None, o["topic"], o["partition"], o["offset"])
    return len(offsets)


def _partition_rows(
    op: tuple[Any, ...], micro: tuple[Any, ...], parts: list[Any], emit: Callable[..., None]
) -> int:
    if None in parts:
        raise Declined("a null partition")
    for i, p in enumerate(parts):
        emit(*op, None, None, "partition", *micro, i, None, None, p, None)
    return len(parts)


def _line_body(raw: bytes) -> str | None:
    """One line's text as Spark reads it (`raw` without its newline), or None for a
    line Spark drops."""
    if b"\r" in raw:
        raise Declined("a carriage return (Spark splits lines there too)")
    body = raw.decode("utf-8")  # UnicodeDecodeError: declined by the caller
    if body.strip(" ") == "":
        return None  # Spark drops lines that are blank (spaces only)
    if not body.rstrip(" ").endswith("}"):
        raise Declined("text after the object")
    return body


def _decoder() -> Callable[[str], Any]:
    return json.JSONDecoder(parse_float=_Float, parse_constant=_no_constant).decode


# What a line can raise when this parser does not vouch for it. ValueError: bad JSON
# or UTF-8; the others: a value Arrow does not take for its column (an integer beyond
# int64 too), a record without one of its keys.
DECLINES = (Declined, ValueError, TypeError, KeyError, OverflowError, RecursionError,
            pa.ArrowException)  # fmt: skip


class RowWriter:
    """Flat rows into one Parquet file, a row group at a time. Rows are kept as
    tuples and turned into columns once per group (in C)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.schema = arrow_schema()
        self.rows = 0
        self._decode = _decoder()
        self._batch: list[tuple[Any, ...]] = []
        self._add = self._batch.append
        # The flat rows keep no value of the nemesis's or the application's ops: their
        # lines are kept whole here instead, so nothing reads the text again for them.
        self._lanes: list[dict[str, Any]] | None = []
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
            out, self.schema, compression="snappy"
        )

    def _emit(self, *row: Any) -> None:
        self._add(row)

    def line(self, raw: bytes) -> None:
        """Parse one line (without its newline); raises one of DECLINES."""
        body = _line_body(raw)
        if body is None:
            return
        d = self._decode(body)
        _rows_of_line(d, self._emit)
        if self._lanes is not None and _in_lane(d["process"]):
            if len(self._lanes) < LANES_MAX:
                self._lanes.append(d)
            else:
                self._lanes = None
        if len(self._batch) >= _GROUP_ROWS:
            self._write()

    def _write(self) -> None:
        cols = list(zip(*self._batch, strict=True)) or [()] * len(self.schema)
        table = pa.Table.from_arrays(
            [pa.array(c, type=self.schema.field(i).type) for i, c in enumerate(cols)],
            schema=self.schema,
        )
        assert self._writer is not None
        self._writer.write_table(table, row_group_size=_GROUP_ROWS)
        self.rows += len(self._batch)
        self._batch.clear()

    def close(self) -> int:
        """Write what is left and close: the number of rows written."""
        if self._batch or self.rows == 0:
            self._write()
        assert self._writer is not None
        if self._lanes is not None:
            lanes = json.dumps(self._lanes, separators=(",", ":"), default=_float_of)
            self._writer.add_key_value_metadata({LANES_KEY: lanes.encode()})
        self._writer.close()
        self._writer = None
        return self.rows

    def discard(self) -> None:
        """Close without finishing, and remove the file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.out.unlink(missing_ok=True)


def _in_lane(process: Any) -> bool:
    """An op of the nemesis, or of an application instance's lifecycle (`app-<i>`)."""
    return type(process) is str and (process == "nemesis" or process.startswith("app-"))


def _float_of(x: Any) -> float:
    if isinstance(x, _Float):
        return float(x.text)  # as json.loads reads the line's text
    raise TypeError(f"{type(x).__name__} is not JSON")


def lanes(parquet: Path) -> tuple[dict[str, Any], ...] | None:
    """The nemesis's and the application's ops (each line whole, in the history's
    order) that this parser kept in the Parquet at `parquet` (a file, or a directory
    of one file); None where it kept none: written by Spark, or by an older version,
    or with more than LANES_MAX of them."""
    files = sorted(parquet.glob("*.parquet")) if parquet.is_dir() else [parquet]
    if len(files) != 1:
        return None
    try:
        meta = pq.read_metadata(files[0]).metadata or {}
        kept = meta.get(LANES_KEY)
        return None if kept is None else tuple(json.loads(kept))
    except (OSError, ValueError, pa.ArrowException):
        return None


def to_parquet(history: Path, out: Path) -> int | None:
    """Write history's flat rows to the Parquet file `out`: the number of rows, or
    None if this parser declines the history (nothing is left at `out` then)."""
    w: RowWriter | None = None
    try:
        w = RowWriter(out)
        with history.open("rb") as fh:
            for raw in fh:
                w.line(raw[:-1] if raw.endswith(b"\n") else raw)
        return w.close()
    except DECLINES:
        if w is not None:
            w.discard()
        out.unlink(missing_ok=True)
        return None


def rows_by_line(history: Path) -> Iterator[list[tuple[Any, ...]]]:
    """Each line's flat rows (FLAT_SCHEMA's columns, in order), a list a line, with
    neither Arrow nor Spark. A line this parser declines is left out (Spark's parse
    would count it damaged) and the rest still come; the values' types are not
    checked (Arrow checks them when RowWriter writes them)."""
    decode = _decoder()
    rows: list[tuple[Any, ...]] = []

    def emit(*row: Any) -> None:
        rows.append(row)

    with history.open("rb") as fh:
        for raw in fh:
            rows.clear()
            try:
                body = _line_body(raw[:-1] if raw.endswith(b"\n") else raw)
                if body is None:
                    continue
                _rows_of_line(decode(body), emit)
            except DECLINES:
                continue
            yield list(rows)
