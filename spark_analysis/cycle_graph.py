"""Strongly connected components and witness cycles of the op dependency graph, on
the driver (checks_cycles.py builds the edges in Spark and hands them over here).

Nodes are op indices, plus "event" nodes (`EVENT_BASE + history index`) that stand
for points of the history: realtime order (a completed before b was invoked) is a
chain of events, a -> E(a done) -> ... -> E(b invoked) -> b, so it costs O(ops)
edges where the relation itself has O(ops^2) pairs. An edge is one packed integer,
src << 33 | dst << 3 | kind, so millions of them fit in one array('q').
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

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


def unpack(p: int) -> tuple[int, int, int]:
    return p >> 33, (p >> 3) & _MASK, p & 7


@dataclass(frozen=True)
class Component:
    """One strongly connected component holding a cycle of the spec's kind: its
    lowest op index, how many ops it holds, and (for the first few) a witness, a
    cycle as (from op, to op, kind) steps, realtime steps collapsed to op -> op."""

    first_op: int
    ops: int
    steps: tuple[tuple[int, int, int], ...] | None = None
    shortest: bool = True


def components(edges: array, spec: CycleSpec, event_base: int, witnessed: int) -> list[Component]:
    """The components of the spec's subgraph that hold a cycle of its kind, by
    lowest op index; the first `witnessed` of them with a witness cycle."""
    g = rx.PyDiGraph(multigraph=True)
    ids = array("q")  # compact node -> node id
    compact: dict[int, int] = {}
    chunk: list[tuple[int, int, int]] = []
    for p in edges:
        src, dst, kind = unpack(p)
        if kind not in spec.kinds:
            continue
        for n in (src, dst):
            if n not in compact:
                compact[n] = g.add_node(None)
                ids.append(n)
        chunk.append((compact[src], compact[dst], kind))
        if len(chunk) >= _CHUNK:
            g.add_edges_from(chunk)
            chunk.clear()
    g.add_edges_from(chunk)
    del compact, chunk
    found: list[tuple[int, list[int]]] = []
    for scc in rx.strongly_connected_components(g):
        if len(scc) < 2:
            continue
        members = set(scc)
        if spec.required is not None and not _holds(g, members, spec.required):
            continue
        ops = [ids[n] for n in scc if ids[n] < event_base]
        found.append((min(ops), scc))
    found.sort()
    out = []
    for i, (first, scc) in enumerate(found):
        n_ops = sum(1 for n in scc if ids[n] < event_base)
        if i >= witnessed:
            out.append(Component(first, n_ops))
            continue
        steps, shortest = _witness(g, set(scc), ids, spec, event_base)
        out.append(Component(first, n_ops, steps, shortest))
    return out


def _holds(g: rx.PyDiGraph, members: set[int], kind: int) -> bool:
    """Whether an edge of `kind` joins two nodes of the component: then a cycle of the
    component takes it (a strongly connected component leads from its end back)."""
    return any(k == kind and v in members for n in members for _, v, k in g.out_edges(n))


def _witness(
    g: rx.PyDiGraph, members: set[int], ids: array, spec: CycleSpec, event_base: int
) -> tuple[tuple[tuple[int, int, int], ...], bool]:
    """A shortest cycle of the component with an edge of the required kind: the
    shortest over a search from each of its ops (lowest index first) while the budget
    lasts; `shortest` says whether every op was tried."""
    adj = {n: [(v, k) for _, v, k in g.out_edges(n) if v in members] for n in members}
    starts = sorted((n for n in members if ids[n] < event_base), key=ids.__getitem__)
    size = len(members) + sum(len(a) for a in adj.values())
    tried = starts[: max(1, SEARCH_BUDGET // size)]
    best: list[tuple[int, int, int]] | None = None
    for s in tried:
        walk = _closed_walk(adj, s, spec.required, None if best is None else _cost(best))
        if walk is not None and (best is None or _cost(walk) < _cost(best)):
            best = walk
    if best is None:  # cannot happen in a component that holds the kind
        raise AssertionError(f"no {spec.name} cycle found in a component that holds one")
    raw = [(ids[u], ids[v], k) for u, v, k in best]
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
            ok = [
                w for w in (inner, outer) if required is None or any(k == required for *_, k in w)
            ]
            return _simple(min(ok, key=len), required)
        seen[u] = i
    # Rotated to start at its lowest op, so a witness reads the same each time.
    first = min(range(len(steps)), key=lambda i: steps[i][0])
    return steps[first:] + steps[:first]
