"""Network partition topologies as pure data: a grudge maps each node to the nodes
it cannot hear from (Jepsen's model). Symmetric when a and b hold grudges against
each other, one-way otherwise.
"""

from __future__ import annotations

import random

Grudge = dict[int, frozenset[int]]

TOPOLOGIES = ("isolate", "halves", "majorities-ring", "bridge", "one-way")


def complete_split(parts: list[list[int]]) -> Grudge:
    """Nodes in different parts cannot hear each other."""
    g: dict[int, frozenset[int]] = {}
    for part in parts:
        others = frozenset(n for p in parts if p is not part for n in p)
        for n in part:
            g[n] = others
    return g


def isolate(nodes: list[int], target: int) -> Grudge:
    return complete_split([[target], [n for n in nodes if n != target]])


def halves(nodes: list[int], rng: random.Random) -> Grudge:
    shuffled = rng.sample(nodes, len(nodes))
    k = len(nodes) // 2  # the smaller side is the minority
    return complete_split([shuffled[:k], shuffled[k:]])


def majorities_ring(nodes: list[int], rng: random.Random) -> Grudge:
    """Every node hears a majority, and no two nodes hear the same majority: each node
    hears itself and the next floor(n/2) nodes around a shuffled ring."""
    ring = rng.sample(nodes, len(nodes))
    n = len(ring)
    g: dict[int, frozenset[int]] = {}
    for i, node in enumerate(ring):
        hears = {ring[(i + d) % n] for d in range(n // 2 + 1)}
        g[node] = frozenset(set(nodes) - hears)
    return g


def bridge(nodes: list[int], rng: random.Random) -> Grudge:
    """Two halves that cannot hear each other, joined by one node that hears both."""
    shuffled = rng.sample(nodes, len(nodes))
    mid = shuffled[0]
    rest = shuffled[1:]
    k = len(rest) // 2
    left, right = rest[:k], rest[k:]
    g = complete_split([left, right])
    g[mid] = frozenset()
    return {n: g.get(n, frozenset()) for n in nodes}


def one_way(nodes: list[int], rng: random.Random) -> Grudge:
    """b cannot hear a; a still hears b."""
    a, b = rng.sample(nodes, 2)
    return {n: frozenset({a}) if n == b else frozenset() for n in nodes}


def build(topology: str, nodes: list[int], rng: random.Random, target: int | None = None) -> Grudge:
    if topology == "isolate":
        if target is None:
            raise ValueError("isolate needs a target")
        return isolate(nodes, target)
    if topology == "halves":
        return halves(nodes, rng)
    if topology == "majorities-ring":
        return majorities_ring(nodes, rng)
    if topology == "bridge":
        return bridge(nodes, rng)
    if topology == "one-way":
        return one_way(nodes, rng)
    raise ValueError(f"unknown topology {topology!r}; choose from {', '.join(TOPOLOGIES)}")


def directed_cuts(grudge: Grudge) -> list[tuple[int, int, str]]:
    """(src, dst, stream) proxy cuts that make `dst` deaf to `src` on src->dst and
    dst->src connections: src's requests (upstream on src->dst) and src's answers
    (downstream on dst->src)."""
    cuts: list[tuple[int, int, str]] = []
    for deaf, sources in grudge.items():
        for src in sorted(sources):
            cuts.append((src, deaf, "upstream"))
            cuts.append((deaf, src, "downstream"))
    return sorted(set(cuts))
