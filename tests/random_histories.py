"""Random small histories, many to one history file, for the differential tests
(tests/unit/test_differential.py) and the parsers' tests that need realistic input.

Spark costs seconds per analysis, so the differential tests judge a batch of small
histories written into ONE history file (`write`): history i has topics f"t{i}" (and
f"t{i}-out", the copier's output), processes i*100 + k and values i*10_000 + k (an
output value -(v + 1) for input v), so every anomaly row goes back to its history by
its topic, or its process (`spark_keys`).

The generator models assign-mode consumers of a few partitions (no rebalances):
writers whose sends are ok, fail or info (with resends of values an earlier op left
info) and whose transactions commit, abort or end info (committed or not, as the log
knows; a few of them sending to the output topic, as a copier does, and sometimes
sending again what a transaction left info sent, as a copier's retry does); a log that
sometimes misbehaves (a reported offset that is not where the value went, a
duplicated append, a foreign value, an unacknowledged value that lands anyway, a
committed transaction's value that never lands); consumers, read_committed or not,
that sometimes step back, reorder a batch or split a poll into several poll
micro-ops, and hand their records to the application (process ops, sometimes twice);
and the final drain (role "drain", read_committed, at_end where it read a partition
to the end), which sometimes stops early and sometimes finds its partition truncated
below acknowledged offsets or below what consumers read.

A third of the histories without a copier put an application on trial (issue 41): it
consumes the input's log read_committed, as far as it got in each partition (its
group committing there, or not at all), and outputs each input's id to `t{i}-out`,
one key (input partition) to one output partition, interleaved with the others; a
faulty one drops an output, repeats one or replays a batch (a redelivery), swaps two,
sends a key to another partition, outputs an id nobody sent or one that is no id.
Its output drain (role "app-output") reads every output partition, mostly to its end.

Now and then the consumers' group and the copier record their final committed
offsets, anywhere up to each input partition's end (group-missed, eos-output-lost).
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from kafka_trial.contracts.history import HistoryWriter

VALUE_SPAN = 10_000
PROCESS_SPAN = 100
FOREIGN = 9_000  # relative values at or above this are never sent
OUT = 10  # abstract partitions from here on are the output topic's (OUT + p)
DRAIN = 90  # the drain's relative process
APP_DRAIN, APP_GROUP = 91, 92  # the app's output drain and its group offsets' recorder
CONSUMER_GROUP, COPIER_GROUP = 93, 94  # who records those groups' final offsets

# One abstract history: ("send", proc, [(value, partition, offset, outcome, resend)]),
# ("txn", proc, [(value, partition, offset)], outcome, polled records or None),
# ("open", proc, sends) for a send op with no completion,
# ("poll", proc, [(value, partition, offset)], role, {partition: end}, cuts[, held])
# (held: {partition: high watermark or None}, ends a drain found held) where
# `cuts` are the record positions at which a new poll micro-op starts, and
# ("process", proc, records), ("offsets", proc, {partition: committed or None}[, role])
# for a group's offsets (the app's, or role "consumer" or "copier"); an app-output
# drain poll is a "poll" of role "app-output"; processes and values relative to the
# history's own ranges, negative values the copier's output topic's (an app's output
# carries its inputs' own ids).
Op = tuple[Any, ...]
# A log slot: (value, or None for a transaction marker; whether read_committed sees it)
Slot = tuple[int | None, bool]


class _Gen:
    """One random history, op by op, over a model of each partition's log."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        n_parts = rng.randint(1, 3)
        self.parts = list(range(n_parts)) + ([OUT] if rng.random() < 0.4 else [])
        self.writers = list(range(rng.randint(1, 3)))
        self.consumers = [10 + c for c in range(rng.randint(0, 2))]
        self.committed_reader = {c: rng.random() < 0.5 for c in self.consumers}
        self.log: dict[int, list[Slot]] = {p: [] for p in self.parts}
        self.position: dict[tuple[int, int], int] = {}
        self.left_info: list[int] = []
        self.txn_info: list[tuple[int, int]] = []  # (partition, value) of info txns
        self.next_value = 0
        self.ops: list[Op] = []
        self.faulty = rng.random() < 0.5  # half the histories keep to the rules
        self.delivered: list[tuple[int, int, int]] = []
        # An application on trial, never beside the copier (its output is OUT's too).
        self.app = OUT not in self.parts and rng.random() < 0.35

    def fault(self, weight: int) -> bool:
        return self.faulty and self.rng.randrange(weight) == 0

    def fresh(self, p: int) -> int:
        v, self.next_value = self.next_value, self.next_value + 1
        return -(v + 1) if p >= OUT else v

    def readable(self, p: int, start: int, n: int, committed: bool) -> list[tuple[int, int, int]]:
        """Up to n records of partition p from offset `start`, as a reader sees them."""
        out = []
        for o in range(start, len(self.log[p])):
            v, visible = self.log[p][o]
            if v is not None and (visible or not committed):
                out.append((v, p, o))
            if len(out) >= n:
                break
        return out

    def poll(self) -> None:
        rng, proc = self.rng, self.rng.choice(self.consumers)
        records: list[tuple[Any, int, int]] = []
        for p in sorted(rng.sample(self.parts, rng.randint(1, len(self.parts)))):
            start = self.position.get((proc, p), 0)
            if self.fault(6):
                start = max(0, start - rng.randint(1, 3))  # steps back
            if self.fault(8):
                start += 1  # skips one
            batch = self.readable(p, start, rng.randint(0, 3), self.committed_reader[proc])
            self.position[(proc, p)] = batch[-1][2] + 1 if batch else start
            if self.fault(6):
                rng.shuffle(batch)
            if batch and self.fault(15):
                batch[0] = (None, batch[0][1], batch[0][2])  # a value that did not decode
            records += batch
        cuts = tuple(sorted(rng.sample(range(1, len(records)), 1))) if len(records) > 1 else ()
        self.ops.append(("poll", proc, records, None, {}, cuts if rng.random() < 0.4 else ()))
        if rng.random() < 0.3:
            self.process(proc, [r for r in records if r[0] is not None])

    def process(self, proc: int, records: list[tuple[int, int, int]]) -> None:
        handled = list(records)
        if self.delivered and self.fault(5):
            handled.append(self.rng.choice(self.delivered))  # handled again, later
        if handled and self.fault(6):
            handled.append(handled[0])  # handled twice in one op
        self.delivered += records
        self.ops.append(("process", proc, handled))

    def send(self) -> None:
        rng, sends = self.rng, []
        for _ in range(rng.randint(1, 3)):
            p = rng.choice([q for q in self.parts if q < OUT])
            resend = bool(self.left_info) and rng.randrange(5) == 0
            value = rng.choice(self.left_info) if resend else self.fresh(p)
            outcome = rng.choice(["ok", "ok", "ok", "info", "fail"])
            offset: int | None = None
            if outcome == "ok":
                offset = len(self.log[p])
                if self.fault(5):
                    offset = rng.randint(0, len(self.log[p]) + 2)  # not where it went
                elif self.fault(10):
                    offset = None  # acks=0
                self.append(p, value, True)
            elif outcome == "info":
                self.left_info.append(value)
                if rng.random() < 0.5:
                    self.append(p, value, True)
            elif self.fault(4):
                self.append(p, value, True)  # a failed send that was written
            if self.fault(12):
                self.log[p].append((FOREIGN + rng.randrange(100), True))
            sends.append((value, p, offset, outcome, resend))
        self.ops.append(("send", rng.choice(self.writers), sends))

    def append(self, p: int, value: int, visible: bool) -> None:
        self.log[p].append((value, visible))
        if self.fault(10):
            self.log[p].append((value, visible))  # a duplicated append

    def txn(self) -> None:
        rng = self.rng
        outcome = rng.choice(["ok", "ok", "fail", "info"])
        commits = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        sends = []
        for _ in range(rng.randint(1, 3)):
            p = rng.choice(self.parts)
            # A copier's retry sends again what a transaction left info sent.
            retry = bool(self.txn_info) and rng.randrange(4) == 0
            if retry:
                p, value = rng.choice(self.txn_info)
            else:
                value = self.fresh(p)
            offset = len(self.log[p])
            if outcome == "info":
                self.txn_info.append((p, value))
            if not (commits and self.fault(5)):  # else it never lands (a torn transaction)
                self.append(p, value, commits)
            known = outcome == "ok" or rng.random() < 0.5
            sends.append((value, p, offset if known else None))
        for p in sorted({p for _, p, _ in sends}):
            self.log[p].append((None, False))  # the commit or abort marker
        polled = None
        if rng.random() < 0.3:
            p = rng.choice(self.parts)
            polled = self.readable(p, rng.randint(0, len(self.log[p])), 3, rng.random() < 0.5)
        self.ops.append(("txn", rng.choice(self.writers), sends, outcome, polled))

    def app_run(self) -> None:
        """The application: what it consumed of each input partition becomes that key's
        outputs, interleaved into the output partitions; then its output drain."""
        rng = self.rng
        n_out = rng.randint(1, 2)
        keys: dict[int, list[int | None]] = {}
        committed: dict[int, int | None] = {}
        for p in [q for q in self.parts if q < OUT]:
            length = len(self.log[p])
            upto = length if rng.random() < 0.75 else rng.randint(0, length)
            committed[p] = None if rng.random() < 0.1 else upto
            # It may have output more than it committed (crashed before the commit).
            stop = length if rng.random() < 0.3 else upto
            keys[p] = self.app_outputs(
                [v for v, _, o in self.readable(p, 0, 10**6, True) if o < stop]
            )
        self.ops.append(("offsets", APP_GROUP, committed))
        outs: dict[int, list[int | None]] = {q: [] for q in range(n_out)}
        pending = {p: list(vs) for p, vs in keys.items()}
        while any(pending.values()):
            p = rng.choice([k for k, vs in pending.items() if vs])
            q = rng.randrange(n_out) if self.fault(8) else p % n_out  # a key split
            outs[q].append(pending[p].pop(0))
        records = [(v, OUT + q, o) for q, vs in outs.items() for o, v in enumerate(vs)]
        ends = {OUT + q: len(vs) for q, vs in outs.items() if rng.random() < 0.9}
        cut = rng.randint(0, len(records))
        if cut:
            self.ops.append(("poll", APP_DRAIN, records[:cut], "app-output", {}, ()))
        self.ops.append(("poll", APP_DRAIN, records[cut:], "app-output", ends, ()))

    def app_outputs(self, inputs: list[int]) -> list[int | None]:
        """One key's outputs, in order, as a faulty app may get them wrong."""
        rng, out = self.rng, []
        for v in inputs:
            if self.fault(8):
                continue  # dropped
            out.append(v)
            if self.fault(10):
                out.append(v)  # output twice
        if len(out) >= 2 and self.fault(6):
            k = rng.randrange(len(out) - 1)
            out[k], out[k + 1] = out[k + 1], out[k]  # swapped
        if out and self.fault(6):
            out += out[: rng.randint(1, len(out))]  # a replayed batch after a crash
        if self.fault(10):
            out.insert(rng.randint(0, len(out)), FOREIGN + rng.randrange(100, 200))
        if self.fault(12):
            out.insert(rng.randint(0, len(out)), None)  # no recognisable id
        return out

    def drain(self) -> None:
        rng, records, ends = self.rng, [], {}
        for p in self.parts:
            length = len(self.log[p])
            if self.fault(4):
                length = rng.randint(0, length)  # truncated
            stop = rng.randint(0, length) if rng.randrange(5) == 0 else length  # early stop
            if stop == length:
                ends[p] = length
            records += [(v, p, o) for v, p, o in self.readable(p, 0, 10**6, True) if o < stop]
        # One or two drain polls; the end markers come with the last.
        cut = rng.randint(0, len(records))
        if cut:
            # At the end once already, before more records arrived: the later end counts.
            early = {p: o + 1 for _, p, o in records[:cut] if rng.randrange(3) == 0}
            self.ops.append(("poll", DRAIN, records[:cut], "drain", early, ()))
        self.ops.append(("poll", DRAIN, records[cut:], "drain", ends, ()))


def history(seed: int, i: int) -> list[Op]:
    """One random history. Hypothesis draws only the seed: 200 histories of decisions
    drawn one by one would overrun its buffer, leaving only the empty minimal batch."""
    g = _Gen(random.Random(f"{seed}/{i}"))
    rng = g.rng
    for _ in range(rng.randint(0, 12)):
        kind = rng.randrange(5)
        if g.consumers and kind < 2:
            g.poll()
        elif kind == 4:
            g.txn()
        else:
            g.send()
    if rng.randrange(8) == 0:
        # The history was cut off during a send: its invoke has no completion.
        v, p = g.next_value, rng.choice([q for q in g.parts if q < OUT])
        g.ops.append(("open", rng.choice(g.writers), [(v, p, None, "info", False)]))
        if rng.random() < 0.5:
            g.log[p].append((v, True))
    if g.app:
        g.app_run()
    if rng.random() < 0.7:
        g.drain()  # after all other ops
    # Its own stream: the rest of every history stays what it was before ends held.
    _hold(g.ops, random.Random(f"{seed}/{i}/held"))
    _groups_committed(g, random.Random(f"{seed}/{i}/groups"))
    return g.ops


def _groups_committed(g: _Gen, rng: random.Random) -> None:
    """Now and then, the consumers' group's and the copier's final committed offsets
    (their own stream, at the end, as the workloads record them): anywhere up to each
    input partition's log end, so some lie past what the group processed or the
    copier's output that reads returned."""
    inputs = [p for p in g.parts if p < OUT]
    if g.consumers and rng.random() < 0.5:
        committed = {p: rng.randint(0, len(g.log[p])) for p in inputs}
        g.ops.append(("offsets", CONSUMER_GROUP, committed, "consumer"))
    if OUT in g.parts and rng.random() < 0.6:
        committed = {p: rng.randint(0, len(g.log[p])) for p in inputs}
        g.ops.append(("offsets", COPIER_GROUP, committed, "copier"))


def _hold(ops: list[Op], rng: random.Random) -> None:
    """Now and then, a drain's end held below the high watermark by an open transaction:
    in a poll of its own after a drain poll (withdrawing that poll's end of it), in the
    same poll, or before it (the end after counts)."""
    polls = [k for k, op in enumerate(ops) if op[0] == "poll" and op[3] in ("drain", "app-output")]
    if not polls or rng.random() < 0.6:
        return
    k = rng.choice(polls)
    _, proc, records, role, ends, cuts = ops[k][:6]
    parts = sorted({p for _, p, _ in records} | set(ends)) or [OUT if role == "app-output" else 0]
    p = rng.choice(parts)
    held = {p: None if rng.randrange(5) == 0 else ends.get(p, 0) + rng.randint(1, 5)}
    where = rng.randrange(3)
    if where == 1:
        ops[k] = ("poll", proc, records, role, ends, cuts, held)
    else:
        ops.insert(k + (where == 0), ("poll", proc, [], role, {}, (), held))


def _topic(i: int, p: int) -> tuple[str, int]:
    return (f"t{i}-out", p - OUT) if p >= OUT else (f"t{i}", p)


def _value(i: int, v: int | None) -> int | None:
    if v is None:
        return None
    return v - i * VALUE_SPAN if v < 0 else v + i * VALUE_SPAN


def micro(i: int, value: int, p: int, resend: bool = False) -> dict[str, Any]:
    t, tp = _topic(i, p)
    m: dict[str, Any] = {"op": "send", "topic": t, "partition": tp, "value": _value(i, value)}
    return {**m, "resend": True} if resend else m


def record(i: int, v: int | None, p: int, o: int) -> dict[str, Any]:
    t, tp = _topic(i, p)
    return {"topic": t, "partition": tp, "offset": o, "value": _value(i, v)}


def invoked(
    i: int, proc: int, sends: list[Any], seqs: dict[int, itertools.count[int]]
) -> list[dict[str, Any]]:
    """The send micro-ops of history i's process `proc` as invoked."""
    out = [micro(i, v, p, r) for v, p, _, _, r in sends]
    if i % 4 == 3:
        return out
    client = i * 10 + (proc - i * PROCESS_SPAN) % 2
    return [{**m, "client": client, "seq": next(seqs[client])} for m in out]


def _write_poll(h: HistoryWriter, i: int, proc: int, op: Op) -> None:
    _, _, records, role, ends, cuts = op[:6]
    held = op[6] if len(op) > 6 else {}
    m = {"op": "poll"} if role is None else {"op": "poll", "role": role}
    bounds = [0, *cuts, len(records)]
    done: list[dict[str, Any]] = [
        {**m, "records": [record(i, *r) for r in records[a:b]]}
        for a, b in itertools.pairwise(bounds)
    ]
    if ends:
        done[-1]["at_end"] = [
            {"topic": _topic(i, p)[0], "partition": _topic(i, p)[1], "offset": e}
            for p, e in ends.items()
        ]
    if held:
        done[-1]["held"] = [
            {"topic": _topic(i, p)[0], "partition": _topic(i, p)[1], "offset": w}
            for p, w in held.items()
        ]
    h.invoke(proc, "poll", [m] * len(done))
    h.complete("ok", proc, "poll", done)


def _write_txn(h: HistoryWriter, i: int, proc: int, op: Op) -> None:
    _, _, sends, outcome, polled = op
    asked = [micro(i, v, p) for v, p, _ in sends]
    done = [
        {**m, "offset": o, "outcome": outcome} for m, (_, _, o) in zip(asked, sends, strict=True)
    ]
    if polled is not None:
        asked.append({"op": "poll"})
        done.append({"op": "poll", "records": [record(i, *r) for r in polled]})
    h.invoke(proc, "txn", asked)
    h.complete(outcome, proc, "txn", done)


def _write_send(
    h: HistoryWriter, i: int, proc: int, op: Op, seqs: dict[int, itertools.count[int]]
) -> None:
    sends = op[2]
    asked = invoked(i, proc, sends, seqs)
    h.invoke(proc, "send", asked)
    if op[0] == "open":
        return
    outcomes = {o for _, _, _, o, _ in sends}
    h.complete(
        outcomes.pop() if len(outcomes) == 1 else "info",
        proc,
        "send",
        [
            {**m, "offset": off, "outcome": o}
            for m, (_, _, off, o, _) in zip(asked, sends, strict=True)
        ],
    )


def _write_offsets(
    h: HistoryWriter, i: int, proc: int, committed: dict[int, int | None], role: str = "app"
) -> None:
    """A group's committed offsets (null: it committed none in that partition): the
    app's, the consumers' or the copier's."""
    m = {"op": "group-offsets", "role": role, "group": f"{role}-{i}"}
    offsets = [
        {"topic": _topic(i, p)[0], "partition": _topic(i, p)[1], "offset": o}
        for p, o in committed.items()
    ]
    h.invoke(proc, "group-offsets", [m])
    h.complete("ok", proc, "group-offsets", [{**m, "offsets": offsets}])


def write(batch: list[list[Op]], path: Path) -> None:
    """All histories of the batch, one after the other, into one history file.

    Writers 0 and 2 share a producer client, writer 1 has its own; each client
    numbers its sends in invoke order (`seq`). Every fourth history records no
    clients, as another tool's might."""
    h = HistoryWriter(path)
    for i, ops in enumerate(batch):
        seqs: dict[int, itertools.count[int]] = defaultdict(itertools.count)
        for op in ops:
            proc = i * PROCESS_SPAN + op[1]
            if op[0] in ("open", "send"):
                _write_send(h, i, proc, op, seqs)
            elif op[0] == "txn":
                _write_txn(h, i, proc, op)
            elif op[0] == "offsets":
                _write_offsets(h, i, proc, *op[2:])
            elif op[0] == "process":
                recs = [record(i, *r) for r in op[2]]
                h.invoke(proc, "process", [{"op": "process", "records": recs}])
                h.complete("ok", proc, "process", [{"op": "process", "records": recs}])
            else:
                _write_poll(h, i, proc, op if len(op) == 6 else (*op, ()))
    h.close()


def _history_of(row: dict[str, Any]) -> int:
    """Which history of the batch a Spark row came from: by its topic, or its process."""
    topic = row["topic"] or (row["at"] or [{}])[0].get("topic")
    if topic is not None:
        return int(topic[1:].split("-")[0])
    process = row["process"] or (row["processes"] or [None])[0]
    return int(process) // PROCESS_SPAN


VALUE_KEYED = (
    "lost-write",
    "unseen",
    "vanished-read",
    "duplicate",
    "unexpected",
    "aborted-read",
    "group-redelivered",
    "eos-output-duplicate",
    "group-missed",
    "eos-output-lost",
    "app-output-lost",
    "app-output-duplicate",
    "app-output-unexpected",
)
# The columns that make a row's key, in reference_checker's order, per check.
KEY_COLUMNS = {
    "inconsistent-offsets": ("topic", "partition", "offset"),
    "torn-txn": ("process", "index"),
    "reorder": ("process", "topic", "partition", "prev_value", "prev_offset", "value", "offset"),
    "client-reorder": (
        *("client", "topic", "partition", "prev_value", "prev_offset", "value", "offset"),
    ),
    "int-nonmonotonic-send": (
        *("index", "process", "topic", "partition", "prev_value", "prev_offset"),
        *("value", "offset"),
    ),
    "nonmonotonic-poll": (
        *("process", "topic", "partition", "prev_index", "prev_offset", "prev_value"),
        *("index", "offset", "value"),
    ),
    "int-nonmonotonic-poll": (
        *("index", "process", "topic", "partition", "prev_offset", "prev_value"),
        *("offset", "value"),
    ),
    "poll-skip": ("prev_index", "index", "process", "topic", "partition", "prev_offset", "offset"),
    "int-poll-skip": ("index", "process", "topic", "partition", "prev_offset", "offset"),
    "app-output-reorder": ("topic", "partition", "prev_value", "prev_offset", "value", "offset"),
}
KEY_COLUMNS["int-send-skip"] = KEY_COLUMNS["int-nonmonotonic-send"]


def spark_keys(name: str, row: dict[str, Any]) -> tuple[int, Any]:
    """(history, key) of one Spark anomaly row, the key shaped as reference_checker's."""
    i = _history_of(row)
    if name == "unexpected" and row.get("value") is None:
        return i, ("undecodable", row["partition"], row["offset"])
    if name in VALUE_KEYED:
        return i, row["value"]
    return i, tuple(row[c] for c in KEY_COLUMNS[name])


# One batch of 120 covers every cycle kind many times over (seed 0: 16 G0, 25 G1c,
# 19 G1c-process, 46 G1c-realtime in the reference): one analysis, not two of 60.
CYCLE_BATCH = 120


def txn_batch(seed: int) -> list[list[Any]]:
    from tests import txn_histories as th

    rng = random.Random(f"cycles/{seed}")
    plants = [None, None, *th.PLANTS]
    return [th.history(rng, rng.choice(plants)) for _ in range(CYCLE_BATCH)]


def write_txn_batch(batch: list[list[Any]], path: Path) -> None:
    from tests import txn_histories as th

    h = HistoryWriter(path)
    for i, events in enumerate(batch):
        for op in th.ops(events, i):
            if op["type"] == "invoke":
                h.invoke(op["process"], op["f"], op["value"])
            else:
                h.complete(op["type"], op["process"], op["f"], op["value"])
    h.close()
