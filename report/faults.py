"""Fault bands for the report's timeline, from the nemesis ops in the history.

Which op heals which, and which faults are over at once, is the nemesis catalog's
knowledge (`nemesis.catalog`); this module only pairs the recorded ops up.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_trial.contracts.report_data import NemesisOp, OpFacts
from kafka_trial.nemesis.catalog import heals, is_fault, is_instant
from kafka_trial.report import svg_plots as sp


@dataclass(frozen=True)
class Fault:
    band: sp.Band
    f: str
    brokers: tuple[int, ...]


def _ids(ns: Iterable[int]) -> str:
    return ", ".join(str(n) for n in ns)


def _split(grudge: Mapping[int, frozenset[int]]) -> list[list[int]] | None:
    """The sides of a partition in which every node hears exactly its own side (halves,
    isolate), or None for any other shape (a ring, a bridge, one way)."""
    nodes = set(grudge) | {n for g in grudge.values() for n in g}
    sides: list[list[int]] = []
    for n in sorted(nodes):
        side = sorted(nodes - grudge[n] if n in grudge else nodes)
        if side not in sides:
            sides.append(side)
    covered = sorted(n for s in sides for n in s)
    return sides if len(sides) > 1 and covered == sorted(nodes) else None


def cuts(grudge: Mapping[int, frozenset[int]]) -> str:
    """A recorded grudge (node -> the nodes it cannot hear) in words: the sides of a
    clean split ("brokers 1 | 2, 3"), else each cut link ("1-2", or "1->3" where only 3 is deaf)."""
    sides = _split(grudge)
    if sides is not None:
        return "brokers " + " | ".join(_ids(s) for s in sides)
    links = []
    for deaf, sources in sorted(grudge.items()):
        for src in sorted(sources):
            if src in grudge and deaf in grudge[src]:
                if src < deaf:
                    links.append(f"{src}-{deaf}")
            else:
                links.append(f"{src}->{deaf}")
    return "cut " + ", ".join(links) if links else ""


def targets(v: OpFacts) -> str:
    """Whom a fault op hit, as its value records it: the isolated brokers of a partition,
    else the sides or links its grudge cut, else the brokers it names."""
    if v.isolated:
        return f"broker{'s' if len(v.isolated) > 1 else ''} {_ids(v.isolated)} isolated"
    if v.grudge and (split := cuts(v.grudge)):
        return split
    b = sorted(v.hit)
    out = f"broker{'s' if len(b) > 1 else ''} {_ids(b)}" if b else ""
    if v.leader is not None:  # a cut from the leader, or the leader elected
        out += (" from " if out else "") + f"leader {v.leader}"
    return out


def _label(f: str, v: OpFacts) -> str:
    what = [w for w in (v.target, v.topology, v.toxic, v.mode) if w]
    hit = targets(v)
    return " ".join([f, *what]) + (f": {hit}" if hit else "")


def _healed_at(done: Sequence[NemesisOp], i: int, f: str, brokers: tuple[int, ...]) -> float | None:
    """When the first later op that heals this fault (same brokers, or heal-all) completed."""
    for later in done[i + 1 :]:
        lb = later.facts.hit
        if heals(f, later.f) and (
            later.f == "heal-all" or not brokers or not lb or set(lb) & set(brokers)
        ):
            return later.time / 1e9
    return None


def faults(nemesis: Sequence[NemesisOp], t_end: float) -> list[Fault]:
    """Fault bands from the nemesis ops: from a fault's invoke to the completion of the
    op that undoes it (same brokers), or of heal-all, or the end of the history."""
    done = [o for o in nemesis if o.type in ("ok", "info")]
    invoked: defaultdict[str, list[NemesisOp]] = defaultdict(list)
    for o in nemesis:
        if o.type == "invoke":
            invoked[o.f].append(o)
    out: list[Fault] = []
    for i, o in enumerate(done):
        f = o.f
        if not is_fault(f):
            continue
        inv = [x for x in invoked[f] if x.index < o.index]
        start = (inv[-1].time if inv else o.time) / 1e9
        brokers = o.facts.hit
        end: float | None = o.time / 1e9
        if not is_instant(f):
            end = _healed_at(done, i, f, brokers)
        label = _label(f, o.facts)
        if end is None:
            end, label = t_end, label + " (never healed)"
        unknown = o.type == "info"
        if unknown:
            label += " (outcome unknown)"
        out.append(Fault(sp.Band(start, max(end, start), label, unknown), f, brokers))
    return out


def active(fs: list[Fault], t0: float, t1: float) -> list[str]:
    """The labels of the faults whose band overlaps [t0, t1]."""
    return [f.band.label for f in fs if f.band.t0 <= t1 and f.band.t1 >= t0]
