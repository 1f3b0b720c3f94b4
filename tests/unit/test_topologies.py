from __future__ import annotations

import random

import pytest
from kafka_trial.nemesis import topologies as t

NODES = [1, 2, 3]
FIVE = [1, 2, 3, 4, 5]


def hears(g: t.Grudge, a: int, b: int) -> bool:
    """Does a hear b?"""
    return b not in g.get(a, frozenset())


def test_isolate_is_symmetric_and_total() -> None:
    g = t.isolate(NODES, 2)
    assert not hears(g, 2, 1) and not hears(g, 1, 2) and not hears(g, 3, 2)
    assert hears(g, 1, 3) and hears(g, 3, 1)


@pytest.mark.parametrize("seed", range(5))
def test_halves_split_in_two_components(seed: int) -> None:
    g = t.halves(FIVE, random.Random(seed))
    minority = [n for n in FIVE if len(g[n]) == 3]
    majority = [n for n in FIVE if len(g[n]) == 2]
    assert len(minority) == 2 and len(majority) == 3
    assert all(hears(g, a, b) for a in majority for b in majority)


@pytest.mark.parametrize("nodes", [NODES, FIVE])
def test_majorities_ring_every_node_hears_a_distinct_majority(nodes: list[int]) -> None:
    g = t.majorities_ring(nodes, random.Random(1))
    heard = [frozenset(n for n in nodes if hears(g, a, n)) for a in nodes]
    assert all(len(h) > len(nodes) // 2 for h in heard)
    assert len(set(heard)) == len(nodes)


def test_bridge_node_hears_both_halves_which_do_not_hear_each_other() -> None:
    g = t.bridge(FIVE, random.Random(3))
    (mid,) = [n for n in FIVE if not g[n] and all(hears(g, o, n) for o in FIVE)]
    sides = [n for n in FIVE if n != mid]
    assert any(not hears(g, a, b) for a in sides for b in sides)


def test_one_way_is_asymmetric() -> None:
    g = t.one_way(NODES, random.Random(0))
    (deaf,) = [n for n in NODES if g[n]]
    (src,) = g[deaf]
    assert not hears(g, deaf, src) and hears(g, src, deaf)


def test_directed_cuts_for_one_way_touch_one_stream_each_way() -> None:
    g = {1: frozenset(), 2: frozenset({1}), 3: frozenset()}  # 2 does not hear 1
    assert t.directed_cuts(g) == [(1, 2, "upstream"), (2, 1, "downstream")]


def test_same_seed_same_topology() -> None:
    assert t.build("bridge", FIVE, random.Random(9)) == t.build("bridge", FIVE, random.Random(9))


def test_unknown_topology() -> None:
    with pytest.raises(ValueError, match="unknown topology"):
        t.build("star", NODES, random.Random(0))
