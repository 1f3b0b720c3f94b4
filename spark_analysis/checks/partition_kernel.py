"""The per-partition checks as one vectorised function: every check whose question is
about one (topic, partition)'s version order, its sends' order or its readers'
positions, computed at once from that partition's rows (numpy and pyarrow).

This module runs in Spark's Python workers, where it is shipped by value
(partition_pass.py registers it): it imports nothing of kafka_trial but
kernel_columns.py, shipped the same way, so a worker of a standalone cluster needs only
Spark's own Arrow dependencies. Each check emits the
rows the query it replaced emitted, as (type, key, detail): `detail` is the row as
Spark's `to_json` writes it (columns in order, nulls left out), and `key` is what
`checks/runner.py` counts distinct (the detail itself: no check here counts values).

Input rows (`is_send`): a send with `must_commit` (facts/derived.py's `writes`) and
`acked` (must_commit and ok), or a record some poll returned whatever its op's outcome
(`polled`) with `judged` (an ok poll op's: a read whose position counts). Flags, not
the strings they come from: fewer bytes to ship to the workers. The rebalance events
of the whole history come in `Config`: few, and named by partition number only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from kafka_trial.spark_analysis.checks.kernel_columns import (
    NULL,
    OUT,
    flag_array,
    long_array,
    out_table,
    scalar,
)
from kafka_trial.spark_analysis.checks.kernel_columns import py as _py
from kafka_trial.spark_analysis.checks.kernel_columns import to_json as _json

KERNEL_CHECKS = (
    "inconsistent-offsets",
    "reorder",
    "client-reorder",
    "nonmonotonic-poll",
    "int-nonmonotonic-poll",
    "int-nonmonotonic-send",
    "int-send-skip",
    "poll-skip",
    "int-poll-skip",
)
READ_CHECKS = {"nonmonotonic-poll", "int-nonmonotonic-poll", "poll-skip", "int-poll-skip"}


@dataclass(frozen=True)
class Config:
    """What every partition's kernel needs from the whole history: the checks to run,
    and the rebalance events (process, partition number, `at`: the op from which the
    new assignment holds, `exempt`: whether `at` is a poll whose records of that
    partition are not judged), as facts/rebalances.py's `rebalance_events` finds them."""

    checks: tuple[str, ...]
    events: tuple[tuple[str, int, int, bool], ...] = ()
    _by_part: dict[int, list[tuple[str, int, bool]]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_part: dict[int, list[tuple[str, int, bool]]] = {}
        for proc, part, at, exempt in self.events:
            by_part.setdefault(part, []).append((proc, at, exempt))
        object.__setattr__(self, "_by_part", by_part)

    def events_of(self, partition: int | None) -> list[tuple[str, int, bool]]:
        return self._by_part.get(partition, []) if partition is not None else []


Cols = dict[str, np.ndarray]
SEND_LONGS = ("value", "offset", "index", "pos", "client", "seq", "process")
SEND_FLAGS = ("must_commit", "acked")
POLL_LONGS = ("value", "offset", "index", "mpos", "rpos", "process")
POLL_FLAGS = ("judged", "ok", "never_written")
EMPTY = pa.RecordBatch.from_arrays([pa.array([], pa.string())] * 3, schema=OUT)


def _process_codes(col: pa.Array, codes: dict[Any, int]) -> np.ndarray:
    """A batch's process names as codes into `codes` (name to code, in order of first
    appearance), which grows across the partition's batches; a null is a name too."""
    enc = col.dictionary_encode()
    table = [codes.setdefault(x, len(codes)) for x in enc.dictionary.to_pylist()]
    table.append(codes.setdefault(None, len(codes)))
    idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)  # -1: the null's code
    return np.asarray(table, dtype=np.int64)[idx]


def _select(
    b: pa.RecordBatch, keep: np.ndarray, proc: np.ndarray, names: tuple[tuple, tuple]
) -> Cols:
    """The rows `keep` of one batch, as the numpy columns `names` (longs, flags) holds;
    a column the input lacks (never_written, when no skip is asked) reads as null."""
    have, n = set(b.schema.names), int(keep.sum())
    out: Cols = {"process": proc[keep]}
    for flag, cols in ((False, names[0]), (True, names[1])):
        for c in cols:
            if c == "process":
                continue
            if c not in have:
                out[c] = np.zeros(n, bool) if flag else np.full(n, NULL, np.int64)
            else:
                out[c] = (flag_array if flag else long_array)(b.column(c))[keep]
    return out


def _concat(parts: list[Cols], names: tuple[tuple, tuple]) -> Cols:
    cols = [*names[0], *names[1]]
    if not parts:
        return {c: np.empty(0, bool if c in names[1] else np.int64) for c in cols}
    return {c: np.concatenate([p.pop(c) for p in parts]) for c in cols}


class Part:
    """One partition's rows, split by source, as numpy columns (a null long is NULL,
    a null flag False, a process its code into `names`). Built a record batch at a
    time, each batch cut down to those columns as it comes: the partition is held at
    58 bytes a send and 51 a read, never as Spark's rows of every column."""

    def __init__(
        self, topic: str | None, partition: int | None, batches: Iterable[pa.RecordBatch]
    ) -> None:
        self.topic, self.partition = topic, partition
        self.codes: dict[Any, int] = {}
        sends: list[Cols] = []
        polled: list[Cols] = []
        for b in batches:
            if not b.num_rows:
                continue
            is_send = flag_array(b.column("is_send"))
            proc = _process_codes(b.column("process"), self.codes)
            sends.append(_select(b, is_send, proc, (SEND_LONGS, SEND_FLAGS)))
            polled.append(_select(b, ~is_send, proc, (POLL_LONGS, POLL_FLAGS)))
        self.names = np.asarray(list(self.codes), dtype=object)
        self.sends = _concat(sends, (SEND_LONGS, SEND_FLAGS))
        self.polled = _concat(polled, (POLL_LONGS, POLL_FLAGS))

    def tp(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition}


def _emit(out: list[tuple[str, str]], name: str, rows: Iterator[dict[str, Any]]) -> None:
    for r in rows:
        out.append((name, _json(r)))


def _distinct_pairs(o: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (offset, value) pairs of known offsets, sorted by offset then value
    (a null value, NULL, first)."""
    known = o != NULL  # a join on a null offset matches nothing; distinct keeps it apart
    o, v = o[known], v[known]
    idx = np.lexsort((v, o))
    o, v = o[idx], v[idx]
    first = np.r_[True, (o[1:] != o[:-1]) | (v[1:] != v[:-1])] if len(o) else np.empty(0, bool)
    return o[first], v[first]


def _committed_at(p: Part) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of the sends that must have committed at a known offset (a
    send of unknown partition is in no partition's order)."""
    s = p.sends
    if p.partition is None:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    keep = s["must_commit"] & (s["offset"] != NULL)
    return s["offset"][keep], s["value"][keep]


# --- the version order and what it says of offsets ------------------------------------


def version_order(p: Part) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of derived.version_order in this partition, distinct, sorted
    by offset then value: every polled record, and every send that must have committed
    at a known offset."""
    o, v = _committed_at(p)
    return _distinct_pairs(
        np.concatenate([p.polled["offset"], o]), np.concatenate([p.polled["value"], v])
    )


def inconsistent_offsets(p: Part, vo: tuple[np.ndarray, np.ndarray]) -> Iterator[dict]:
    offs, vals = vo
    real = vals != NULL  # collect_set leaves out nulls
    o, v = offs[real], vals[real]
    if not len(o):
        return
    starts = np.flatnonzero(np.r_[True, o[1:] != o[:-1]])
    ends = np.r_[starts[1:], len(o)]
    for a, b in zip(starts, ends, strict=True):
        if b - a > 1:
            yield {**p.tp(), "offset": int(o[a]), "values": [int(x) for x in v[a:b]]}


# --- sends in the order they were asked for -------------------------------------------


def _lagged(order: list[np.ndarray], group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sort (np.lexsort of `order`, last key first) and, for each sorted row after
    the first of its group, True where the previous row is of the same group."""
    idx = np.lexsort(order[::-1]) if len(group) else np.empty(0, np.int64)
    g = group[idx]
    same = np.r_[False, g[1:] == g[:-1]] if len(g) else np.empty(0, bool)
    return idx, same


def offsets_backwards(p: Part, who: str) -> Iterator[dict]:
    """reorder (who: process, by index and pos) or client-reorder (who: client, by seq):
    an acknowledged send at an offset below the previous acknowledged one's."""
    s = p.sends
    acked = s["acked"] & (s["offset"] != NULL)
    if who == "client":
        acked &= s["client"] != NULL
    rows = np.flatnonzero(acked)
    if not len(rows):
        return
    group = s[who][rows]
    order = (
        [group, s["index"][rows], s["pos"][rows]] if who == "process" else [group, s["seq"][rows]]
    )
    idx, same = _lagged(order, group)
    rows = rows[idx]
    off, val = s["offset"][rows], s["value"][rows]
    hit = np.flatnonzero(same & np.r_[False, off[:-1] > off[1:]])
    for i in hit.tolist():
        yield {
            who: p.names[s["process"][rows[i]]] if who == "process" else _py(s["client"][rows[i]]),
            **p.tp(),
            "prev_value": _py(val[i - 1]),
            "prev_offset": _py(off[i - 1]),
            "value": _py(val[i]),
            "offset": _py(off[i]),
        }


def send_positions(p: Part, vo: tuple[np.ndarray, np.ndarray]) -> Iterator[tuple[str, dict]]:
    """int-nonmonotonic-send and int-send-skip: each send at its own offset if it must
    have committed, else at the lowest offset the version order holds its value at
    here (sends at no known position left out); one op's consecutive sends to the
    partition (by pos) as pairs. Yields (name, row)."""
    s = p.sends
    if p.partition is None or not len(s["value"]):
        return
    off, val = s["offset"], s["value"]
    own = np.where(s["must_commit"], off, NULL)
    at = own.copy()
    vo_off, vo_val = vo
    lookup = (own == NULL) & (val != NULL)
    if lookup.any() and len(vo_off):
        # The version order is sorted by offset: a value's first place is its lowest.
        known, first = np.unique(vo_val, return_index=True)
        wanted = val[lookup]
        i = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
        at[lookup] = np.where(known[i] == wanted, vo_off[first[i]], NULL)
    placed = np.flatnonzero(at != NULL)
    index, pos = s["index"][placed], s["pos"][placed]
    idx, same = _lagged([index, pos], index)
    rows = placed[idx]
    a, v, ops = at[rows], val[rows], index[idx]
    prev = np.maximum(np.arange(len(a)) - 1, 0)
    back = same & (a[prev] > a)
    gap = same & (a > a[prev] + 1)
    for i in np.flatnonzero(back | gap).tolist():
        row = {
            "index": int(ops[i]),
            "process": p.names[s["process"][rows[i]]],
            **p.tp(),
            "prev_value": _py(v[i - 1]),
            "prev_offset": _py(a[i - 1]),
            "value": _py(v[i]),
            "offset": _py(a[i]),
        }
        if back[i]:
            yield "int-nonmonotonic-send", row
        else:
            skipped = _known_between(vo, a[i - 1], a[i], (v[i - 1], v[i]))
            if skipped is not None:
                yield "int-send-skip", row | skipped


def _known_between(
    vo: tuple[np.ndarray, np.ndarray], lo: int, hi: int, other_than: tuple[int, ...]
) -> dict[str, list[int]] | None:
    """tests/query_checks.py's known_between for one gap: the records of `vo` (sorted
    offsets and their values: the version order, or the known positions) strictly
    between `lo` and `hi`, but for copies of `other_than` (null equal to null)."""
    offs, vals = vo
    a, b = np.searchsorted(offs, lo, "right"), np.searchsorted(offs, hi, "left")
    o, v = offs[a:b], vals[a:b]
    keep = ~np.isin(v, np.asarray(other_than, dtype=np.int64))
    if not keep.any():
        return None
    return {
        "skipped_values": sorted({int(x) for x in v[keep] if x != NULL}),
        "skipped_offsets": sorted({int(x) for x in o[keep]}),
    }


# --- readers' positions ---------------------------------------------------------------

_POLL_COLS = ("index", "mpos", "rpos", "offset", "value", "process")


def _judged_reads(p: Part, cfg: Config) -> Cols:
    """The ok reads of poll ops, less the records exempt by a rebalance, and
    one start row (rpos -1, no offset) per event that starts a new assignment of this
    partition for a process that read it."""
    r = p.polled
    cols = {c: r[c][r["judged"]] for c in _POLL_COLS}
    # An event's process that holds no row here has no read to exempt or start.
    events = [(p.codes[pr], at, ex) for pr, at, ex in cfg.events_of(p.partition) if pr in p.codes]
    if not events:
        return cols
    keep = np.ones(len(cols["index"]), bool)
    for code, at, ex in events:
        if ex:
            keep &= (cols["process"] != code) | (cols["index"] != at)
    cols = {c: a[keep] for c, a in cols.items()}
    readers = set(np.unique(cols["process"]).tolist())
    starts = [(code, at) for code, at, _ in events if code in readers]
    if starts:
        add = {
            "process": [code for code, _ in starts],
            "index": [at for _, at in starts],
            "mpos": [-1] * len(starts),
            "rpos": [-1] * len(starts),
        }
        for c in _POLL_COLS:
            extra = np.asarray(add.get(c, [NULL] * len(starts)), dtype=np.int64)
            cols[c] = np.concatenate([cols[c], extra])
    return cols


class Reads:
    """One partition's judged reads (`_judged_reads`) sorted by process and position,
    each paired with the read before it of its process within one assignment: `pairs`
    marks the rows whose previous row (row - 1) is such a read, both at known
    positions (a start row, rpos -1, has none)."""

    def __init__(self, p: Part, cfg: Config) -> None:
        c = _judged_reads(p, cfg)
        self.names = p.names
        group = c["process"]
        self.idx, same = _lagged([group, c["index"], c["mpos"], c["rpos"]], group)
        self.proc, self.off, self.val, self.index, rpos = (
            c[k][self.idx] for k in ("process", "offset", "value", "index", "rpos")
        )
        prev = np.r_[0, np.arange(len(self.idx) - 1)] if len(self.idx) else self.idx
        self.pairs = same & (rpos >= 0) & (rpos[prev] >= 0) & (self.off[prev] != NULL)

    def process(self, i: int) -> Any:
        return self.names[self.proc[i]]


def poll_order(p: Part, rd: Reads) -> Iterator[tuple[str, dict]]:
    """nonmonotonic-poll and int-nonmonotonic-poll: a read at or below its process's
    previous read of the partition, in an earlier op or in the same one."""
    off, val, index = rd.off, rd.val, rd.index
    prev = np.r_[0, np.arange(len(off) - 1)] if len(off) else np.empty(0, np.int64)
    back = rd.pairs & (off != NULL) & (off <= off[prev])
    for i in np.flatnonzero(back).tolist():
        j = i - 1
        if index[i] != index[j]:
            yield (
                "nonmonotonic-poll",
                {
                    "process": rd.process(i),
                    **p.tp(),
                    "prev_index": _py(index[j]),
                    "prev_offset": _py(off[j]),
                    "prev_value": _py(val[j]),
                    "index": _py(index[i]),
                    "offset": _py(off[i]),
                    "value": _py(val[i]),
                },
            )
        else:
            yield (
                "int-nonmonotonic-poll",
                {
                    "index": _py(index[i]),
                    "process": rd.process(i),
                    **p.tp(),
                    "prev_offset": _py(off[j]),
                    "prev_value": _py(val[j]),
                    "offset": _py(off[i]),
                    "value": _py(val[i]),
                },
            )


def known_positions(p: Part) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values), distinct, sorted: every offset known to hold a record, as
    Jepsen knows positions from reads and acknowledged writes. The offsets of sends that
    must have committed, and of every record an ok read returned (any op, the drain's
    too), but for a value none of whose sends could have committed (`never_written`:
    a read_uncommitted reader returns such a record, a read_committed one is right to
    jump over it). A position nobody read or acknowledged (a transaction marker, a
    write of unknown outcome nobody read) is no skip."""
    r = p.polled
    read = r["ok"] & ~r["never_written"]
    o, v = _committed_at(p)
    return _distinct_pairs(
        np.concatenate([r["offset"][read], o]), np.concatenate([r["value"][read], v])
    )


def poll_skips(p: Part, rd: Reads) -> Iterator[tuple[str, dict]]:
    """poll-skip and int-poll-skip: consecutive reads of a process (as `poll_order`
    pairs them) that jumped over offsets known to hold a record (`known_positions`),
    with what they jumped over: `skipped_offsets`, and `skipped_values` (a record whose
    value did not decode adds its offset, not a value)."""
    off, index = rd.off, rd.index
    if not len(off) or p.partition is None or p.topic is None:
        return  # a position of no known partition is compared with none
    prev = np.r_[0, np.arange(len(off) - 1)]
    gaps = np.flatnonzero(rd.pairs & (off != NULL) & (off > off[prev] + 1))
    if not len(gaps):
        return
    known = known_positions(p)
    for i in gaps.tolist():
        j = i - 1
        skipped = _known_between(known, int(off[j]), int(off[i]), ())
        if skipped is None:
            continue
        row = {
            "index": _py(index[i]),
            "process": rd.process(i),
            **p.tp(),
            "prev_offset": _py(off[j]),
            "offset": _py(off[i]),
            **skipped,
        }
        if index[i] != index[j]:
            yield "poll-skip", {"prev_index": _py(index[j]), **row}
        else:
            yield "int-poll-skip", row


# --- the kernel -----------------------------------------------------------------------


def kernel(
    cfg: Config, key: tuple[Any, ...], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Every check of `cfg.checks` for one (topic, partition), its rows taken a record
    batch at a time: its anomaly rows."""
    p = Part(scalar(key[0]), scalar(key[1]), batches)
    want = set(cfg.checks)
    out: list[tuple[str, str]] = []
    vo = version_order(p)
    if "inconsistent-offsets" in want:
        _emit(out, "inconsistent-offsets", inconsistent_offsets(p, vo))
    for name, who in (("reorder", "process"), ("client-reorder", "client")):
        if name in want:
            _emit(out, name, offsets_backwards(p, who))
    rd = Reads(p, cfg) if want & READ_CHECKS else None
    reads: tuple[tuple[str, dict], ...] = ()
    if rd is not None:
        skips = poll_skips(p, rd) if want & {"poll-skip", "int-poll-skip"} else ()
        reads = (*poll_order(p, rd), *skips)
    seen: set[tuple[str, str]] = set()
    for name, row in (*send_positions(p, vo), *reads):
        # A check's rows are a set, as the queries' grouped rows were: two equal gaps
        # in one op (a record read twice) are one row.
        if name in want and (name, d := _json(row)) not in seen:
            seen.add((name, d))
            out.append((name, d))
    yield from out_table([(n, d, d) for n, d in out]).to_batches() or [EMPTY]
