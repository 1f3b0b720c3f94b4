"""Random transactional histories for the cycle checks: a model of Kafka transactions
read read_committed, which can interleave writes (G0) but never closes a cycle of
reads, plus planted cycles of each G1c kind.

The model: transactions of a few processes overlap; each plans its sends at its
invoke, appends them one by one at the end of their partitions, may poll committed
records, and ends ok (committed), fail (aborted) or info (committed or not, unknown
to the client); a consumer polls committed records; the final drain reads every
committed record. A read returns only what committed before it, and a transaction
commits inside its op, so every wr, process and realtime edge leads to a later
commit: no G1c of any kind. The plants break exactly that:

- "G1c": two new transactions each read the other's record before either commits;
- "G1c-realtime": a consumer poll returns a record a transaction invoked after the
  poll completed writes (a read from the future);
- "G1c-process": a transaction reads what its own process's next transaction writes
  (which is a read from the future too: G1c-realtime as well).

`ops(events, i)` turns a history into op dicts of history i of a batch: topic
f"t{i}", processes i * PROCESS_SPAN + p, values i * VALUE_SPAN + v.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

VALUE_SPAN = 10_000
PROCESS_SPAN = 100
PLANTS = ("G1c", "G1c-process", "G1c-realtime")
CONSUMER, DRAIN = 10, 90
# An abstract event: ("invoke" | type, process, f, micro-ops), values and partitions
# relative to the history.
Event = tuple[str, int, str, list[dict[str, Any]]]


@dataclass
class _Txn:
    proc: int
    sends: list[tuple[int, int]]  # (value, partition), planned at the invoke
    reads: bool
    offsets: list[int] = field(default_factory=list)  # of the sends appended so far
    polled: list[tuple[int, int, int]] = field(default_factory=list)  # (value, p, offset)


@dataclass
class _Model:
    rng: random.Random
    parts: int
    logs: dict[int, list[int]] = field(default_factory=dict)  # p -> values, in offset order
    committed: set[int] = field(default_factory=set)  # values
    events: list[Event] = field(default_factory=list)
    next_value: int = 0

    def value(self) -> int:
        self.next_value += 1
        return self.next_value - 1

    def append(self, v: int, p: int) -> int:
        self.logs.setdefault(p, []).append(v)
        return len(self.logs[p]) - 1

    def visible(self, p: int) -> list[tuple[int, int, int]]:
        return [(v, p, o) for o, v in enumerate(self.logs.get(p, [])) if v in self.committed]

    def invoke(self, t: _Txn) -> None:
        micro = [_send(v, p) for v, p in t.sends] + ([{"op": "poll"}] if t.reads else [])
        self.events.append(("invoke", t.proc, "txn", micro))

    def complete(self, t: _Txn, outcome: str, commits: bool) -> None:
        if commits:
            self.committed |= {v for v, _ in t.sends}
        micro = [
            {**_send(v, p), "offset": o, "outcome": outcome}
            for (v, p), o in zip(t.sends, t.offsets, strict=True)
        ]
        if t.reads:
            micro.append({"op": "poll", "records": [_rec(*r) for r in t.polled]})
        self.events.append((outcome, t.proc, "txn", micro))

    def poll(self, proc: int, records: list[tuple[int, int, int]], role: str | None) -> None:
        m: dict[str, Any] = {"op": "poll"} if role is None else {"op": "poll", "role": role}
        self.events.append(("invoke", proc, "poll", [m]))
        self.events.append(("ok", proc, "poll", [{**m, "records": [_rec(*r) for r in records]}]))


def _send(v: int, p: int) -> dict[str, Any]:
    return {"op": "send", "partition": p, "value": v}


def _rec(v: int, p: int, o: int) -> dict[str, Any]:
    return {"partition": p, "offset": o, "value": v}


def history(rng: random.Random, plant: str | None = None) -> list[Event]:
    m = _Model(rng, rng.randint(1, 3))
    procs = list(range(rng.randint(2, 4)))
    open_: dict[int, _Txn] = {}
    for _ in range(rng.randint(4, 30)):
        _step(m, procs, open_)
    for t in list(open_.values()):
        _finish(m, t, open_)
    if plant is not None:
        PLANTERS[plant](m)
    records = [r for p in range(m.parts) for r in m.visible(p)]
    m.poll(DRAIN, records, "drain")
    return m.events


def _step(m: _Model, procs: list[int], open_: dict[int, _Txn]) -> None:
    rng = m.rng
    choice = rng.randrange(5)
    idle = [p for p in procs if p not in open_]
    if choice == 0 and idle:
        t = _Txn(rng.choice(idle), [], rng.random() < 0.7)
        t.sends = [(m.value(), rng.randrange(m.parts)) for _ in range(rng.randint(1, 3))]
        open_[t.proc] = t
        m.invoke(t)
    elif choice == 1:
        p = rng.randrange(m.parts)
        m.poll(CONSUMER, m.visible(p)[rng.randint(0, 2) :][:3], None)
    elif open_:
        t = open_[rng.choice(sorted(open_))]
        if len(t.offsets) < len(t.sends):
            v, p = t.sends[len(t.offsets)]
            t.offsets.append(m.append(v, p))
        elif t.reads and choice == 2:
            seen = m.visible(rng.randrange(m.parts))
            t.polled += seen[rng.randint(0, len(seen)) :][:2]
        else:
            _finish(m, t, open_)


def _finish(m: _Model, t: _Txn, open_: dict[int, _Txn]) -> None:
    while len(t.offsets) < len(t.sends):
        v, p = t.sends[len(t.offsets)]
        t.offsets.append(m.append(v, p))
    r = m.rng.random()
    outcome = "ok" if r < 0.75 else "fail" if r < 0.9 else "info"
    m.complete(t, outcome, outcome == "ok" or (outcome == "info" and m.rng.random() < 0.5))
    del open_[t.proc]


def _plant_mutual(m: _Model) -> None:
    """Processes 50 and 51 each read the other's record before either commits."""
    a = _Txn(50, [(m.value(), 0)], True)
    b = _Txn(51, [(m.value(), m.rng.randrange(m.parts))], True)
    for t in (a, b):
        m.invoke(t)
        t.offsets.append(m.append(*t.sends[0]))
    a.polled.append((b.sends[0][0], b.sends[0][1], b.offsets[0]))
    b.polled.append((a.sends[0][0], a.sends[0][1], a.offsets[0]))
    m.complete(a, "ok", True)
    m.complete(b, "ok", True)


def _plant_future_poll(m: _Model) -> None:
    """The consumer returns the record a transaction invoked afterwards writes."""
    v, p = m.value(), m.rng.randrange(m.parts)
    m.poll(CONSUMER, [(v, p, len(m.logs.get(p, [])))], None)
    t = _Txn(52, [(v, p)], False)
    m.invoke(t)
    t.offsets.append(m.append(v, p))
    m.complete(t, "ok", True)


def _plant_own_future(m: _Model) -> None:
    """Process 53 reads, in one transaction, what its next transaction writes."""
    v, p = m.value(), m.rng.randrange(m.parts)
    first = _Txn(53, [(m.value(), p)], True)
    m.invoke(first)
    first.offsets.append(m.append(*first.sends[0]))
    first.polled.append((v, p, len(m.logs[p])))
    m.complete(first, "ok", True)
    second = _Txn(53, [(v, p)], False)
    m.invoke(second)
    second.offsets.append(m.append(v, p))
    m.complete(second, "ok", True)


PLANTERS = {
    "G1c": _plant_mutual,
    "G1c-realtime": _plant_future_poll,
    "G1c-process": _plant_own_future,
}
# The types each plant must show, beyond the one it is named for.
ALSO = {"G1c-process": ("G1c-realtime",)}


def ops(events: list[Event], i: int = 0) -> list[dict[str, Any]]:
    """History i's op dicts, indexed and timed from 0 (write() renumbers a batch)."""
    topic, vbase, pbase = f"t{i}", i * VALUE_SPAN, i * PROCESS_SPAN

    def real(m: dict[str, Any]) -> dict[str, Any]:
        out = {**m}
        if "partition" in m and m.get("op") != "poll":
            out = {"op": "send", "topic": topic, **{k: v for k, v in m.items() if k != "op"}}
            out["value"] = vbase + m["value"]
        if "records" in m:
            out["records"] = [
                {"topic": topic, **r, "value": vbase + r["value"]} for r in m["records"]
            ]
        return out

    return [
        {
            "index": n,
            "time": n * 1000,
            "type": kind,
            "process": pbase + proc,
            "f": f,
            "value": [real(m) for m in micro],
        }
        for n, (kind, proc, f, micro) in enumerate(events)
    ]
