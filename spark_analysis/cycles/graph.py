"""Strongly connected components and witness cycles of the op dependency graph, on
the driver (edges.py builds the edges in Spark and hands them over here).

Nodes are op indices, plus "event" nodes (`EVENT_BASE + history index`) that stand
for points of the history: realtime order (a completed before b was invoked) is a
chain of events, a -> E(a done) -> ... -> E(b invoked) -> b, so it costs O(ops)
edges where the relation itself has O(ops^2) pairs. An edge is one packed integer,
src << 33 | dst << 3 | kind, so millions of them fit in one int64 array.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import rustworkx as rx

WW, WR, PROCESS, RT_OUT, RT_IN, CHAIN = range(6)
# The kinds a witness names; RT_IN and CHAIN only carry a realtime step to its end.
STEP_KIND = {WW: "ww", WR: "wr", PROCESS: "process", RT_OUT: "realtime"}
# A realtime step costs 1 when it leaves its op, nothing along the chain of events.
_WEIGHT = (1, 1, 1, 1, 0, 0)
_MASK = (1 << 30) - 1
# Event nodes sit above every op index: a history of up to 2^29 lines.
EVENT_BASE = 1 << 29


@dataclass(frozen=True)
class CycleSpec:
    """An anomaly's cycles: the edge kinds they may take, and the kind at least one
    of their edges must be (None: any cycle of those kinds)."""

    name: str
    kinds: frozenset[int]
    required: int | None = None


SPECS = (
    CycleSpec("G0", frozenset({WW})),
    CycleSpec("G1c", frozenset({WR})),
    CycleSpec("G1c-process", frozenset({WR, PROCESS}), PROCESS),
    CycleSpec("G1c-realtime", frozenset({WR, RT_OUT, RT_IN, CHAIN}), RT_OUT),
)

# Edge relaxations one component's witness search may spend: a shortest cycle needs
# a search from every op of the component, which a giant component cannot afford.
SEARCH_BUDGET = 2_000_000
# Edges handed to rustworkx at a time: a list of tuples costs ~70 bytes an edge.
_CHUNK = 500_000


def pack(src: int, dst: int, kind: int) -> int:
    return src << 33 | dst << 3 | kind


@dataclass(frozen=True)
class Component:
    """One strongly connected component holding a cycle of the spec's kind: its
    lowest op index, how many ops it holds, and (for the first few) a witness, a
    cycle as (from op, to op, kind) steps, realtime steps collapsed to op -> op."""

    first_op: int
    ops: int
    steps: tuple[tuple[int, int, int], ...] | None = None
    shortest: bool = True


@dataclass(frozen=True)
class Edges:
    """Packed edges unpacked once into numpy columns, for every spec to search: node
    ids compacted to 0..n-1 (`ends` maps them back, ascending, so compact order is
    op order), each edge's kind."""

    ends: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray

    @classmethod
    def of(cls, packed: array | np.ndarray) -> Edges:
        p = np.asarray(packed, dtype=np.int64)
        ends, compact = np.unique(np.concatenate((p >> 33, (p >> 3) & _MASK)), return_inverse=True)
        m = len(p)
        return cls(ends, compact[:m], compact[m:], (p & 7).astype(np.int8))


# Rounds of trimming (dropping edges whose source has no edge in or whose target has
# none out) before the components: each is a few passes over the edges in C, and
# spares rustworkx a Python list for each op on no cycle, which costs more than its
# search. A long path loses only its two ends a round, so trimming stops when a round
# removes less than TRIM_MIN_GAIN of the edges.
TRIM_ROUNDS = 40
TRIM_MIN_GAIN = 0.01


def _trim(src: np.ndarray, dst: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """The edges (indices `at`) left after trimming."""
    for _ in range(TRIM_ROUNDS):
        s, d = src[at], dst[at]
        alive = (np.bincount(d, minlength=n) > 0) & (np.bincount(s, minlength=n) > 0)
        kept = at[alive[s] & alive[d]]
        gain = len(at) - len(kept)
        at = kept
        if gain <= len(at) * TRIM_MIN_GAIN:
            break
    return at


def components(
    edges: array | np.ndarray | Edges, spec: CycleSpec, event_base: int, witnessed: int
) -> list[Component]:
    """The components of the spec's subgraph that hold a cycle of its kind, by
    lowest op index; the first `witnessed` of them with a witness cycle.

    The edges stay numpy columns throughout (picking the spec's kinds, trimming,
    testing for the required kind: passes in C, where a Python loop cost ~1 us an
    edge per spec); rustworkx sees the trimmed (src, dst) pairs, in chunks, and a
    witness's adjacency is built for its component alone."""
    e = edges if isinstance(edges, Edges) else Edges.of(edges)
    if spec.required is not None and not np.any(e.kind == spec.required):
        return []
    at = np.flatnonzero(np.isin(e.kind, sorted(spec.kinds)))
    at = _trim(e.src, e.dst, at, len(e.ends))
    nodes, compact = np.unique(np.concatenate((e.src[at], e.dst[at])), return_inverse=True)
    m = len(at)
    src, dst, kind = compact[:m], compact[m:], e.kind[at]
    ends = e.ends[nodes]
    g = rx.PyDiGraph(multigraph=False)
    g.add_nodes_from([None] * len(nodes))
    for i in range(0, m, _CHUNK):
        g.extend_from_edge_list(
            list(zip(src[i : i + _CHUNK].tolist(), dst[i : i + _CHUNK].tolist(), strict=True))
        )
    label = np.full(len(nodes), -1, np.int64)
    sccs = [np.asarray(c, np.int64) for c in rx.strongly_connected_components(g) if len(c) > 1]
    del g
    for i, c in enumerate(sccs):
        label[c] = i
    # An edge inside a component: the component's label, else -1.
    inside = np.where(label[src] == label[dst], label[src], -1)
    if spec.required is not None:
        holds = np.unique(inside[(kind == spec.required) & (inside >= 0)]).tolist()
    else:
        holds = list(range(len(sccs)))
    found: list[tuple[int, int, int]] = []  # (first op, ops, label)
    for i in holds:
        ops = ends[sccs[i]]
        ops = ops[ops < event_base]
        found.append((int(ops.min()), len(ops), i))
    found.sort()
    out = []
    for n, (first, n_ops, i) in enumerate(found):
        if n >= witnessed:
            out.append(Component(first, n_ops))
            continue
        on = np.flatnonzero(inside == i)
        adj: dict[int, list[tuple[int, int]]] = {u: [] for u in sccs[i].tolist()}
        for u, v, k in zip(src[on].tolist(), dst[on].tolist(), kind[on].tolist(), strict=True):
            adj[u].append((v, k))
        steps, shortest = _witness(adj, ends, spec, event_base)
        out.append(Component(first, n_ops, steps, shortest))
    return out


def _witness(
    adj: dict[int, list[tuple[int, int]]], ids: np.ndarray, spec: CycleSpec, event_base: int
) -> tuple[tuple[tuple[int, int, int], ...], bool]:
    """A shortest cycle of the component with an edge of the required kind: the
    shortest over a search from each of its ops (lowest index first) while the budget
    lasts; `shortest` says whether every op was tried. Compact ids rise with the
    ids they stand for, so sorting them sorts the ops."""
    starts = sorted(n for n in adj if ids[n] < event_base)
    size = len(adj) + sum(len(a) for a in adj.values())
    tried = starts[: max(1, SEARCH_BUDGET // size)]
    best: list[tuple[int, int, int]] | None = None
    for s in tried:
        walk = _closed_walk(adj, s, spec.required, None if best is None else _cost(best))
        if walk is not None and (best is None or _cost(walk) < _cost(best)):
            best = walk
    if best is None:  # cannot happen in a component that holds the kind
        raise AssertionError(f"no {spec.name} cycle found in a component that holds one")
    raw = [(int(ids[u]), int(ids[v]), k) for u, v, k in best]
    steps = _simple(_collapse(raw, event_base), spec.required)
    return tuple(steps), len(tried) == len(starts)


def _cost(walk: Iterable[tuple[int, int, int]]) -> int:
    return sum(_WEIGHT[k] for _, _, k in walk)


def _closed_walk(
    adj: dict[int, list[tuple[int, int]]], s: int, required: int | None, bound: int | None
) -> list[tuple[int, int, int]] | None:
    """The cheapest walk from s back to s that takes an edge of `required` (any walk
    if None), cheaper than `bound`: a 0-1 breadth-first search over (node, whether
    the required kind was taken)."""
    start = (s, required is None)
    goal = (-1, True)
    dist = {start: 0}
    parent: dict[tuple[int, bool], tuple[tuple[int, bool], int]] = {}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state == goal:
            return _path(parent, goal, start)
        d = dist[state]
        if bound is not None and d >= bound:
            continue
        node, taken = state
        for v, kind in adj[node]:
            seen = taken or kind == required
            nxt = goal if v == s and seen else (v, seen)
            if nxt == start:
                continue
            nd = d + _WEIGHT[kind]
            if nd < dist.get(nxt, nd + 1):
                dist[nxt] = nd
                parent[nxt] = (state, kind)
                (queue.appendleft if _WEIGHT[kind] == 0 else queue.append)(nxt)
    return None


def _path(
    parent: dict[tuple[int, bool], tuple[tuple[int, bool], int]],
    goal: tuple[int, bool],
    start: tuple[int, bool],
) -> list[tuple[int, int, int]]:
    steps = []
    state = goal
    while state != start:
        prev, kind = parent[state]
        to = start[0] if state == goal else state[0]
        steps.append((prev[0], to, kind))
        state = prev
    return steps[::-1]


def _collapse(walk: list[tuple[int, int, int]], event_base: int) -> list[tuple[int, int, int]]:
    """Realtime steps from op to op: a -> E -> ... -> E -> b is one step a -> b."""
    out: list[tuple[int, int, int]] = []
    for u, v, kind in walk:
        if kind in (RT_IN, CHAIN):
            if v < event_base:
                a, _, _ = out.pop()
                out.append((a, v, RT_OUT))
            continue
        out.append((u, v, kind))
    return out


def _takes(steps: list[tuple[int, int, int]], required: int | None) -> bool:
    return required is None or any(k == required for _, _, k in steps)


def _simple(steps: list[tuple[int, int, int]], required: int | None) -> list[tuple[int, int, int]]:
    """A closed walk that passes an op twice splits there into two shorter closed
    walks, one of which still takes the required kind: keep splitting until no op
    repeats (only a search cut short by the budget can return such a walk)."""
    seen: dict[int, int] = {}
    for i, (u, _, _) in enumerate(steps):
        if u in seen:
            j = seen[u]
            inner, outer = steps[j:i], steps[i:] + steps[:j]
            ok = [w for w in (inner, outer) if _takes(w, required)]
            return _simple(min(ok, key=len), required)
        seen[u] = i
    # Rotated to start at its lowest op, so a witness reads the same each time.
    first = min(range(len(steps)), key=lambda i: steps[i][0])
    return steps[first:] + steps[:first]
