"""The value-keyed checks as one vectorised function: every check whose question is
about one value's life (was it read, where does it sit, who may have written it),
computed at once from a bucket of values with all their rows (numpy and pyarrow).

As partition_kernel.py, this runs in Spark's Python workers, shipped by value
(value_pass.py registers it), and imports nothing of kafka_trial but
kernel_columns.py. Each check emits the rows the query it replaced emitted
(tests/query_checks.py keeps those queries), as (type, key, detail): `detail` as
Spark's `to_json` writes the row, `key` the value (what `checks/runner.py` counts
distinct for a check whose unit is values), or the detail where the value is null.

Input rows (`kind`): a send (SEND) with `must_commit`, `written` (its outcome is not
fail) and `txn`; a record some poll returned whatever its op's outcome (POLLED) with
`ok` (a read: an ok op's), `drain` (the final drain's) and `ptype` (a transaction's
own poll: its op's type, else null); a value some send invoked (ATTEMPTED); a record
a group member's process micro-op handled (PROCESSED); a record the application's
output drain returned that carries an input id (APP_OUTPUT, `value` the id); a
transactional send a fenced session invoked after its fence (FENCED, facts/fences.py's
`fenced_sends`, with `outcome` and the fence's fields). A bucket holds every row of
each of its values, and the copier's output of input v, -(v + 1), goes with v
(value_pass.py's `input_id`), so any set of values asked of it (read, attempted,
written, drained, processed, copied) is whole. What is per partition comes in
`Config`: how far reads and the final drain reached in each, and the groups' final
committed offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from kafka_trial.spark_analysis.checks.kernel_columns import (
    NULL,
    codes,
    flags,
    longs,
    out_table,
    py,
    to_json,
)

VALUE_CHECKS = (
    "lost-write",
    "unseen",
    "duplicate",
    "unexpected",
    "aborted-read",
    "vanished-read",
    "precommitted-read",
    # A transaction's values span buckets: the kernel gives each committed
    # transaction's sends that no read returned (TXN_MISSING), and value_pass.py sums
    # them per transaction.
    "torn-txn",
    "group-missed",
    "group-redelivered",
    "eos-output-lost",
    "eos-output-duplicate",
    "app-output-lost",
    "app-output-duplicate",
    "app-output-unexpected",
    # Per output partition: order_kernel.py, from the kernel's APP_FIRST rows.
    "app-output-reorder",
    "fenced-write",
)
SEND, POLLED, ATTEMPTED, PROCESSED, APP_OUTPUT, FENCED = 0, 1, 2, 3, 4, 5
# Not checks. A committed transactional send no read returned, keyed by its op's
# index, with whether its value is proven lost (lost-write's proof); and an input's
# first output in an output partition, with where the input sits, which
# order_kernel.py judges per output partition (app-output-reorder).
TXN_MISSING = "txn-missing"
APP_FIRST = "app-first"


@dataclass(frozen=True)
class Config:
    """What every bucket needs from the whole history. `reach`: per (topic, partition)
    some read or the final drain reached, (topic, partition, max_read_offset: the
    highest offset any read returned, drain_max_offset: the drain's, drain_end: where
    the drain read it to its end), facts/derived.py's read_reach and drain_frontier.
    `reader_polls` and `failed_sends`: the history's flags (history_frames.Frames),
    without which vanished-read and aborted-read cannot find anything."""

    reach: tuple[tuple[str, int, int | None, int | None, int | None], ...] = ()
    reader_polls: bool = True
    failed_sends: bool = True
    # (role, topic, partition, committed): each group's final committed offsets, as
    # history_frames' `group_offsets` (role "consumer", "copier" or "app"; a partition
    # may have more than one).
    offsets: tuple[tuple[str, str, int, int], ...] = ()
    _by_tp: dict[tuple[str, int], tuple[int, int, int]] = field(
        init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        by_tp = {
            (t, p): tuple(NULL if x is None else x for x in (mx, dmx, end))
            for t, p, mx, dmx, end in self.reach
        }
        object.__setattr__(self, "_by_tp", by_tp)

    def committed(self, role: str) -> dict[tuple[str, int], list[int]]:
        """(topic, partition) -> the `role` group's final committed offsets there."""
        out: dict[tuple[str, int], list[int]] = {}
        for r, t, p, c in self.offsets:
            if r == role and None not in (t, p, c):
                out.setdefault((t, p), []).append(c)
        return out

    def of(self, topic: Any, partition: Any) -> tuple[int, int, int] | None:
        """(max_read_offset, drain_max_offset, drain_end), NULL for unknown, or None
        where no read of the partition is recorded."""
        return self._by_tp.get((topic, partition))


class Bucket:
    """One bucket's rows as columns, and the value sets every check asks of them."""

    def __init__(self, t: pa.Table, cfg: Config) -> None:
        self.t, self.cfg = t, cfg
        kind = longs(t, "kind")
        self.val, self.off = longs(t, "value"), longs(t, "offset")
        self.part, self.index = longs(t, "partition"), longs(t, "index")
        self.send, self.polled = kind == SEND, kind == POLLED
        self.attempted, self.processed = kind == ATTEMPTED, kind == PROCESSED
        self.app_output, self.fenced = kind == APP_OUTPUT, kind == FENCED
        self.must = flags(t, "must_commit") & self.send
        self.read = flags(t, "ok") & self.polled  # history_frames' reads
        self.drained = flags(t, "drain") & self.read
        self.tcode = codes(t["topic"])
        self._topics: list[Any] | None = None
        # One sort by value, for every "is the value of this row ever ..." question
        # (`of_value`): a set lookup per question cost most of the kernel's time.
        self._order = np.argsort(self.val, kind="stable")
        sv = self.val[self._order]
        new = np.r_[True, sv[1:] != sv[:-1]] if len(sv) else np.empty(0, bool)
        self._starts = np.flatnonzero(new)
        self._group = np.empty(len(sv), np.int64)
        self._group[self._order] = np.cumsum(new) - 1
        self.was_read = self.of_value(self.read)

    def of_value(self, rows: np.ndarray) -> np.ndarray:
        """Per row: whether any row of its value is one of `rows`; never for a null
        value (a join on it matches nothing)."""
        if not len(rows):
            return rows
        hit = np.maximum.reduceat((rows & (self.val != NULL))[self._order], self._starts)
        return hit[self._group]

    def of_pair(self, rows: np.ndarray, key: np.ndarray) -> np.ndarray:
        """Per row: whether any row of its value with the same `key` is one of `rows`;
        never where either is null."""
        if not len(rows):
            return rows
        order = np.lexsort((key, self.val))
        sv, sk = self.val[order], key[order]
        new = np.r_[True, (sv[1:] != sv[:-1]) | (sk[1:] != sk[:-1])]
        hit = np.maximum.reduceat(
            (rows & (self.val != NULL) & (key != NULL))[order], np.flatnonzero(new)
        )
        out = np.empty(len(rows), bool)
        out[order] = hit[np.cumsum(new) - 1]
        return out

    def rows_of_value(self, r: int) -> np.ndarray:
        """Every row of row `r`'s value."""
        g = int(self._group[r])
        end = self._starts[g + 1] if g + 1 < len(self._starts) else len(self._order)
        return self._order[self._starts[g] : end]

    def topic(self, i: int) -> Any:
        if self._topics is None:
            self._topics = self.t["topic"].to_pylist()
        return self._topics[i]

    def process(self, rows: np.ndarray) -> list[Any]:
        return self.t["process"].take(pa.array(rows, pa.int64())).to_pylist()

    def tp(self, i: int) -> dict[str, Any]:
        return {"topic": self.topic(i), "partition": py(self.part[i])}

    def record(self, i: int) -> tuple[int, int, int, int]:
        return int(self.val[i]), int(self.tcode[i]), int(self.part[i]), int(self.off[i])

    def distinct(self, rows: np.ndarray) -> np.ndarray:
        """The first of each set of `rows` equal in (value, topic, partition, offset)."""
        if not len(rows):
            return rows
        keys = [self.val[rows], self.tcode[rows], self.part[rows], self.off[rows]]
        order = np.lexsort(keys[::-1])
        s = [k[order] for k in keys]
        new = np.ones(len(order), bool)
        new[1:] = np.any([k[1:] != k[:-1] for k in s], axis=0)
        return rows[order[new]]

    def by_tp(self, rows: np.ndarray) -> Iterator[tuple[Any, Any, np.ndarray]]:
        """`rows` by (topic, partition): each pair once, with its rows."""
        if not len(rows):
            return
        keys = np.stack([self.tcode[rows], self.part[rows]])
        uniq, inverse = np.unique(keys, axis=1, return_inverse=True)
        inverse = inverse.reshape(-1)
        for g in range(uniq.shape[1]):
            at = np.flatnonzero(inverse == g)
            first = int(rows[at[0]])
            yield self.topic(first), py(self.part[first]), at

    def reach_of(self, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """For `rows`: max_read_offset, drain_max_offset, drain_end (NULL where not
        known), and whether `Config.reach` has the row's partition at all."""
        n = len(rows)
        mx, dmx, end = (np.full(n, NULL, np.int64) for _ in range(3))
        known = np.zeros(n, bool)
        for topic, partition, at in self.by_tp(rows):
            r = self.cfg.of(topic, partition)
            if r is not None:
                mx[at], dmx[at], end[at] = r
                known[at] = True
        return mx, dmx, end, known


# --- what must have committed and was never read ---------------------------------------


def _reason(off: int, mx: int, end: int) -> str | None:
    """lost-write's proof, or None: unseen. "read past": a read returned an offset at
    or beyond the value's; where the final drain read the partition to its end: "read
    to end" (no offset known, as with acks=0), "truncated" (the end lies at or below
    the offset: the log lost it) or "below the drain's end" (no record at or above it
    came back, as when only aborted records follow it)."""
    if off != NULL and mx != NULL and mx >= off:
        return "read past"
    if end == NULL:
        return None
    if off == NULL:
        return "read to end"
    return "truncated" if off >= end else "below the drain's end"


def never_read(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """lost-write (one row per value: its first send by index that has a proof) and
    unseen (every never-read send of a value with no proof): sends that must have
    committed whose value no read returned. Of those a transaction sent, a TXN_MISSING
    row each, for torn-txn."""
    rows = np.flatnonzero(b.must & ~b.was_read)
    if not len(rows):
        return
    rows = rows[np.lexsort([b.index[rows], b.val[rows]])]
    mx, _, end, _ = b.reach_of(rows)
    procs = b.process(rows)
    reasons = [_reason(b.off[r], mx[k], end[k]) for k, r in enumerate(rows.tolist())]
    lost: set[int] = set()
    for k, r in enumerate(rows.tolist()):
        v = int(b.val[r])
        if reasons[k] is None or v in lost:
            continue
        # A null value is one value to dropDuplicates: its first send stands for all.
        lost.add(v)
        row = {
            "value": py(b.val[r]),
            **b.tp(r),
            "offset": py(b.off[r]),
            "process": procs[k],
            "max_read_offset": py(mx[k]),
            "drain_end": py(end[k]),
            "reason": reasons[k],
        }
        yield _keyed("lost-write", row)
    txn = flags(b.t, "txn")
    for k, r in enumerate(rows.tolist()):
        v = int(b.val[r])
        proven = v in lost and v != NULL  # a null value is never joined away
        if txn[r]:
            missing = {"value": py(b.val[r]), "lost": proven}
            yield TXN_MISSING, str(py(b.index[r])), to_json(missing)
        if proven:
            continue
        row = {"value": py(b.val[r]), **b.tp(r), "offset": py(b.off[r]), "process": procs[k]}
        yield _keyed("unseen", row)


def _keyed(name: str, row: dict[str, Any]) -> tuple[str, str, str]:
    """(type, key, detail): the key is the value, or the detail where it is null."""
    detail = to_json(row)
    value = row.get("value")
    return name, detail if value is None else str(value), detail


# --- where values sit -----------------------------------------------------------------


def duplicate(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """A value the version order (every polled record, every send that must have
    committed at a known offset) holds at two or more positions; for a copier's
    output, also eos-output-duplicate of its input."""
    placed = b.must & (b.off != NULL) & (b.part != NULL)
    rows = b.distinct(np.flatnonzero((b.polled | placed) & (b.val != NULL)))
    if not len(rows):
        return
    for v, positions in _at_two_or_more(b, rows):
        yield _keyed("duplicate", {"value": v, "positions": len(positions), "at": positions})
        if v < 0:
            # The copier's output of input -(v + 1), at two positions or more: whether
            # or not the input was acknowledged or committed past, once is the promise.
            row = {"value": -v - 1, "copies": len(positions), "at": positions}
            yield _keyed("eos-output-duplicate", row)


_POS = ("topic", "partition", "offset")


def _at_two_or_more(b: Bucket, rows: np.ndarray) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Of distinct records `rows`, each value at two or more, with its positions as
    sort_array orders structs of (topic, partition, offset). One sort, then a slice
    per such value: a scan of `rows` per value cost rows x duplicated values."""
    if not len(rows):
        return
    vals = b.val[rows]
    order = np.argsort(vals, kind="stable")
    sv = vals[order]
    starts = _firsts(sv)
    ends = np.r_[starts[1:], len(sv)]
    for a, e in zip(starts.tolist(), ends.tolist(), strict=True):
        if e - a < 2:
            continue
        at = [(b.topic(r), py(b.part[r]), py(b.off[r])) for r in rows[order[a:e]].tolist()]
        at.sort(key=_nulls_first)
        # to_json leaves a struct's null fields out inside an array too.
        yield (
            int(sv[a]),
            [
                {
                    k: x
                    for k, x in zip(("topic", "partition", "offset"), pos, strict=True)
                    if x is not None
                }
                for pos in at
            ],
        )


def _nulls_first(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """sort_array's order of structs: field by field, a null before any value."""
    return tuple(x for f in key for x in (f is not None, f if f is not None else 0))


def _record_rows(b: Bucket, name: str, rows: np.ndarray) -> Iterator[tuple[str, str, str]]:
    """One (value, topic, partition, offset) row per distinct record of `rows`."""
    for r in b.distinct(rows).tolist():
        yield _keyed(name, {"value": py(b.val[r]), **b.tp(r), "offset": py(b.off[r])})


def unexpected(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """A read whose value did not decode, or that no send ever attempted."""
    odd = b.read & ((b.val == NULL) | ~b.of_value(b.attempted))
    return _record_rows(b, "unexpected", np.flatnonzero(odd))


def aborted_read(b: Bucket, cfg: Config) -> Iterator[tuple[str, str, str]]:
    """A read of a value none of whose sends could have committed (every one failed)."""
    if not cfg.failed_sends:
        return iter(())
    never = b.of_value(b.send) & ~b.of_value(b.send & flags(b.t, "written"))
    return _record_rows(b, "aborted-read", np.flatnonzero(b.read & never))


def vanished_read(b: Bucket, cfg: Config) -> Iterator[tuple[str, str, str]]:
    """A value some consumer read that the final drain did not, although the drain read
    past that offset or to the partition's end (claim C13: consumers see only records
    below the high watermark, which never disappear). The drain reads
    read_committed, which hides a transaction that did not commit, so values sent only
    in transactions not proven committed are left out (aborted-read judges a
    read_uncommitted consumer's view of them)."""
    if not cfg.reader_polls:
        return
    txn = b.send & flags(b.t, "txn")
    uncommitted = b.of_value(txn) & ~b.of_value(txn & b.must)
    cand = np.flatnonzero(
        b.read
        & ~flags(b.t, "drain")
        & (b.val != NULL)
        & (b.off != NULL)
        & ~b.of_value(b.drained)
        & ~uncommitted
    )
    _, dmx, end, known = b.reach_of(cand)
    passed = known & ((end != NULL) | ((dmx != NULL) & (b.off[cand] <= dmx)))
    cand, dmx, end = cand[passed], dmx[passed], end[passed]
    procs = b.process(cand)
    # Per record: its first row, its lowest read index and its readers. The drain's
    # reach is the partition's, so any row of the record gives it.
    groups: dict[tuple[int, ...], tuple[int, int, set[Any]]] = {}
    for k, r in enumerate(cand.tolist()):
        first, lo, who = groups.setdefault(b.record(r), (k, int(b.index[r]), set()))
        who.add(procs[k])
        groups[b.record(r)] = (first, min(lo, int(b.index[r])), who)
    for k, lo, who in groups.values():
        r = int(cand[k])
        row = {
            "value": py(b.val[r]),
            **b.tp(r),
            "offset": py(b.off[r]),
            "drain_max_offset": py(dmx[k]),
            "drain_end": py(end[k]),
            "first_read_index": lo,
            "processes": sorted(p for p in who if p is not None),
        }
        yield _keyed("vanished-read", row)


# --- transactions --------------------------------------------------------------------


def precommitted_read(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """A transaction's own poll returned a value that the same transaction sent,
    whatever the transaction's outcome: one row per distinct (record, op, type)."""
    ptype = b.t["ptype"]
    own_poll = b.polled & ~np.asarray(ptype.is_null().to_numpy(zero_copy_only=False), bool)
    if not own_poll.any():
        return
    rows = np.flatnonzero(own_poll & b.of_pair(b.send & flags(b.t, "txn"), b.index))
    types = ptype.take(pa.array(rows, pa.int64())).to_pylist()
    procs = b.process(rows)
    seen: set[tuple[Any, ...]] = set()
    for k, r in enumerate(rows.tolist()):
        row = {
            "value": py(b.val[r]),
            **b.tp(r),
            "offset": py(b.off[r]),
            "index": py(b.index[r]),
            "process": procs[k],
            "type": types[k],
        }
        if (key := tuple(row.values())) not in seen:
            seen.add(key)
            yield _keyed("precommitted-read", row)


# --- consumer groups and the exactly-once copier (claims C11, C16-C19) ---------------


def _below(
    b: Bucket,
    rows: np.ndarray,
    committed: dict[tuple[str, int], list[int]],
    name: str,
    **more: Any,
) -> Iterator[tuple[str, str, str]]:
    """A `name` row per row of `rows` and committed offset of its partition above it,
    with `more` fields."""
    for topic, partition, at in b.by_tp(rows):
        for c in committed.get((topic, partition), ()):
            for r in rows[at[b.off[rows[at]] < c]].tolist():
                row = {"value": py(b.val[r]), **b.tp(r), "offset": py(b.off[r]), "committed": c}
                yield _keyed(name, row | more)


def group_missed(b: Bucket, cfg: Config) -> Iterator[tuple[str, str, str]]:
    """A value that must have committed, below the consumer group's final committed
    offset, that the group's application never processed."""
    committed = cfg.committed("consumer")
    if not committed:
        return iter(())
    rows = np.flatnonzero(b.must & (b.off != NULL) & ~b.of_value(b.processed))
    return _below(b, rows, committed, "group-missed")


def group_redelivered(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """A value the group's application processed more than once: deliveries are
    records in process micro-ops, so one op that handled a value twice counts too."""
    rows = np.flatnonzero(b.processed)
    if len(rows) < 2:
        return
    rows = rows[np.argsort(b.val[rows], kind="stable")]
    _, starts, counts = np.unique(b.val[rows], return_index=True, return_counts=True)
    procs = b.process(rows)
    for s, n in zip(starts[counts > 1].tolist(), counts[counts > 1].tolist(), strict=True):
        at = rows[s : s + n]
        ops = {int(i) for i in b.index[at].tolist() if i != NULL}
        who = sorted({p for p in procs[s : s + n] if p is not None})
        row = {"value": py(b.val[at[0]]), "times": n, "ops": len(ops), "processes": who}
        yield _keyed("group-redelivered", row)


def eos_output_lost(b: Bucket, cfg: Config) -> Iterator[tuple[str, str, str]]:
    """An input value that must have committed and that the copier group committed
    past, whose output, -(v + 1), no read returned."""
    committed = cfg.committed("copier")
    if not committed:
        return iter(())
    copied = -b.val[b.read & (b.val < 0) & (b.val != NULL)] - 1
    inputs = b.must & (b.val >= 0) & (b.off != NULL) & ~np.isin(b.val, copied)
    return _below(b, np.flatnonzero(inputs), committed, "eos-output-lost")


# --- the application on trial (facts/app_output.py has the rest) ----------------------------


def app_output_lost(b: Bucket, cfg: Config) -> Iterator[tuple[str, str, str]]:
    """An input that must have committed, below the app group's committed offset of its
    partition, that no output record carries. Inputs at or above it are undecided
    (undecided.py), as is the whole finding where the output drain did not read every
    output partition to its end."""
    committed = cfg.committed("app")
    if not committed:
        return
    rows = np.flatnonzero(b.must & (b.off != NULL) & ~b.of_value(b.app_output))
    yield from _below(b, rows, committed, "app-output-lost", reason="committed past")


def app_output_duplicate(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """An input value (some send attempted it) that output records carry at two or
    more distinct positions; the same record read twice is one position."""
    rows = b.distinct(np.flatnonzero(b.app_output & b.of_value(b.attempted)))
    for v, positions in _at_two_or_more(b, rows):
        row = {"value": v, "copies": len(positions), "at": positions, "reason": "output twice"}
        yield _keyed("app-output-duplicate", row)


def app_output_unexpected(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """An output record whose id no send ever attempted (a row per record as read;
    the count is of distinct ids)."""
    for r in np.flatnonzero(b.app_output & ~b.of_value(b.attempted)).tolist():
        row = {"value": py(b.val[r]), **b.tp(r), "offset": py(b.off[r]), "reason": "never sent"}
        yield _keyed("app-output-unexpected", row)


def app_firsts(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """Per input id and output partition, its first output (the lowest offset), with
    where the input sits (`key_topic`, `key_partition`, `input_offset`): the lowest
    position the version order holds the id at, its partition being its key. An id
    the version order does not hold has no position, and no row. Both are found by
    one sort each and the first row of each group."""
    out = np.flatnonzero(b.app_output)
    if not len(out):
        return
    placed = b.must & (b.off != NULL) & (b.part != NULL)
    order = b.distinct(np.flatnonzero((b.polled | placed) & (b.val != NULL)))
    # The lowest (topic, partition, offset) per value, nulls first (NULL is int64's
    # least, and a null topic's rank the least).
    trank = _ranks(b.t["topic"])
    o = order[np.lexsort((b.off[order], b.part[order], trank[order], b.val[order]))]
    inputs = o[_firsts(b.val[o])]
    in_vals = b.val[inputs]
    # The lowest offset per (id, output topic, partition), a null offset last (min()
    # leaves it out unless every one is null), the first row on a tie.
    unknown = b.off[out] == NULL
    f = out[np.lexsort((out, b.off[out], unknown, b.part[out], b.tcode[out], b.val[out]))]
    keys = [b.val[f], b.tcode[f], b.part[f]]
    new = np.ones(len(f), bool)
    new[1:] = np.any([k[1:] != k[:-1] for k in keys], axis=0)
    firsts = f[new]
    at = np.searchsorted(in_vals, b.val[firsts])
    has = at < len(in_vals)
    has[has] = in_vals[at[has]] == b.val[firsts[has]]
    for r, i in zip(firsts[has].tolist(), inputs[at[has]].tolist(), strict=True):
        row = {
            **b.tp(r),
            "offset": py(b.off[r]),
            "value": int(b.val[r]),
            "key_topic": b.topic(i),
            "key_partition": py(b.part[i]),
            "input_offset": py(b.off[i]),
        }
        yield APP_FIRST, "", to_json(row)


def _firsts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys starts."""
    if not len(sorted_keys):
        return np.empty(0, np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def _ranks(col: pa.ChunkedArray) -> np.ndarray:
    """Strings as integers in their order, a null the least: `codes` in sort order."""
    enc = pc.fill_null(col, "").dictionary_encode().combine_chunks()
    words = enc.dictionary.to_pylist()
    rank = np.empty(len(words), np.int64)
    rank[np.argsort(np.array(words, dtype=object), kind="stable")] = np.arange(len(words))
    ranks = rank[np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)]
    return np.where(np.asarray(col.is_null().to_numpy(zero_copy_only=False)), -1, ranks)


# --- fenced sessions (claim: Kafka's transactional fencing) -----------------------------

_FENCE = ("client", "transactional_id", "fence_index", "fence_time", "invoked_at")


def fenced_write(b: Bucket) -> Iterator[tuple[str, str, str]]:
    """A value of a transaction that a fenced session (a takeover's `client`) invoked
    after the takeover completed, observed committed: `reason` "committed" (the
    transaction ended ok) or "drain read" (the final drain, read_committed, returned
    it, and no other op's send that did not fail carried the value: a copier's retry of
    the same input, under a session not fenced, may have committed it). One row per
    value: its first op's (by index, then its other fields)."""
    rows = np.flatnonzero(b.fenced)
    if not len(rows):
        return
    written = b.send & flags(b.t, "written")
    drained = b.of_value(b.drained)
    take = pa.array(rows, pa.int64())
    cols = {c: b.t[c].take(take).to_pylist() for c in ("process", "outcome", *_FENCE)}
    first: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    for k, r in enumerate(rows.tolist()):
        v = int(b.val[r])
        if cols["outcome"][k] == "ok":
            reason = "committed"
        elif drained[r] and not _sent_by_another_op(b, written, r):
            reason = "drain read"
        else:
            continue
        row = {
            **b.tp(r),
            "offset": py(b.off[r]),
            "index": py(b.index[r]),
            "process": cols["process"][k],
            **{c: cols[c][k] for c in _FENCE},
            "outcome": cols["outcome"][k],
            "reason": reason,
        }
        # min(struct(index, ...)): by index first, then field by field, nulls first.
        rank = _nulls_first((row["index"], *(x for c, x in row.items() if c != "index")))
        if v not in first or rank < first[v][0]:
            first[v] = (rank, row)
    for v, (_, row) in first.items():
        yield _keyed("fenced-write", {"value": py(np.int64(v)), **row})


def _sent_by_another_op(b: Bucket, written: np.ndarray, r: int) -> bool:
    """Some send of row `r`'s value, by another op, did not fail."""
    if b.val[r] == NULL:
        return False
    same = b.rows_of_value(r)
    return bool(np.any(written[same] & (b.index[same] != b.index[r])))


# --- the kernel -----------------------------------------------------------------------


def kernel(cfg: Config, t: pa.Table) -> pa.Table:
    """Every value-keyed check for one bucket of values: its anomaly rows."""
    b = Bucket(t, cfg)
    return out_table(
        [
            *never_read(b),
            *duplicate(b),
            *unexpected(b),
            *aborted_read(b, cfg),
            *vanished_read(b, cfg),
            *precommitted_read(b),
            *group_missed(b, cfg),
            *group_redelivered(b),
            *eos_output_lost(b, cfg),
            *app_output_lost(b, cfg),
            *app_output_duplicate(b),
            *app_output_unexpected(b),
            *app_firsts(b),
            *fenced_write(b),
        ]
    )
