"""Fault bands for the report's timeline, from the nemesis ops in the history.

Which op heals which, and which faults are over at once, is the nemesis catalog's
knowledge (`nemesis.catalog`); this module only pairs the recorded ops up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_trial.nemesis.catalog import heals, is_fault, is_instant
from kafka_trial.report import svg_plots as sp


@dataclass(frozen=True)
class Fault:
    band: sp.Band
    f: str
    brokers: tuple[int, ...]


def brokers_of(value: Any) -> tuple[int, ...]:
    if isinstance(value, dict):
        b = value.get("brokers") or value.get("isolated") or []
        return tuple(x for x in b if isinstance(x, int))
    return ()


def _ids(ns: Any) -> str:
    return ", ".join(str(n) for n in ns)


def _split(grudge: dict[int, set[int]]) -> list[list[int]] | None:
    """The sides of a partition in which every node hears exactly its own side (halves,
    isolate), or None for any other shape (a ring, a bridge, one way)."""
    nodes = set(grudge) | {n for g in grudge.values() for n in g}
    sides: list[list[int]] = []
    for n in sorted(nodes):
        side = sorted(nodes - grudge.get(n, set()))
        if side not in sides:
            sides.append(side)
    covered = sorted(n for s in sides for n in s)
    return sides if len(sides) > 1 and covered == sorted(nodes) else None


def cuts(grudge: Any) -> str:
    """A recorded grudge (node -> the nodes it cannot hear) in words: the sides of a
    clean split ("brokers 1 | 2, 3"), else each cut link ("1-2", or "1->3" where only 3 is deaf)."""
    g: dict[int, set[int]] = {}
    for k, v in (grudge if isinstance(grudge, dict) else {}).items():
        if str(k).lstrip("-").isdigit() and isinstance(v, list):
            g[int(k)] = {x for x in v if isinstance(x, int)}
    sides = _split(g)
    if sides is not None:
        return "brokers " + " | ".join(_ids(s) for s in sides)
    links = []
    for deaf, sources in sorted(g.items()):
        for src in sorted(sources):
            if deaf in g.get(src, set()):
                if src < deaf:
                    links.append(f"{src}-{deaf}")
            else:
                links.append(f"{src}->{deaf}")
    return "cut " + ", ".join(links) if links else ""


def targets(value: Any) -> str:
    """Whom a fault op hit, as its value records it: the isolated brokers of a partition,
    else the sides or links its grudge cut, else the brokers it names."""
    v = value if isinstance(value, dict) else {}
    isolated = [x for x in v.get("isolated") or [] if isinstance(x, int)]
    if isolated:
        return f"broker{'s' if len(isolated) > 1 else ''} {_ids(isolated)} isolated"
    if v.get("grudge") and (split := cuts(v["grudge"])):
        return split
    b = sorted(brokers_of(v))
    out = f"broker{'s' if len(b) > 1 else ''} {_ids(b)}" if b else ""
    if isinstance(v.get("leader"), int):  # a cut from the leader, or the leader elected
        out += (" from " if out else "") + f"leader {v['leader']}"
    return out


def _label(f: str, value: Any) -> str:
    v = value if isinstance(value, dict) else {}
    what = [str(v[k]) for k in ("target", "topology", "toxic", "mode") if v.get(k)]
    hit = targets(v)
    return " ".join([f, *what]) + (f": {hit}" if hit else "")


def _healed_at(
    done: list[dict[str, Any]], i: int, f: str, brokers: tuple[int, ...]
) -> float | None:
    """When the first later op that heals this fault (same brokers, or heal-all) completed."""
    for later in done[i + 1 :]:
        lf = later.get("f") or ""
        lb = brokers_of(later.get("value"))
        if heals(f, lf) and (lf == "heal-all" or not brokers or not lb or set(lb) & set(brokers)):
            return later["time"] / 1e9
    return None


def faults(nemesis: list[dict[str, Any]], t_end: float) -> list[Fault]:
    """Fault bands from the nemesis ops: from a fault's invoke to the completion of the
    op that undoes it (same brokers), or of heal-all, or the end of the history."""
    done = [o for o in nemesis if o.get("type") in ("ok", "info")]
    invoked: dict[str, list[dict[str, Any]]] = {}
    for o in nemesis:
        if o.get("type") == "invoke":
            invoked.setdefault(o.get("f") or "", []).append(o)
    out: list[Fault] = []
    for i, o in enumerate(done):
        f = o.get("f") or ""
        if not is_fault(f):
            continue
        inv = [x for x in invoked.get(f, []) if x["index"] < o["index"]]
        start = (inv[-1]["time"] if inv else o["time"]) / 1e9
        brokers = brokers_of(o.get("value"))
        end: float | None = o["time"] / 1e9
        if not is_instant(f):
            end = _healed_at(done, i, f, brokers)
        label = _label(f, o.get("value"))
        if end is None:
            end, label = t_end, label + " (never healed)"
        unknown = o.get("type") == "info"
        if unknown:
            label += " (outcome unknown)"
        out.append(Fault(sp.Band(start, max(end, start), label, unknown), f, brokers))
    return out


def active(fs: list[Fault], t0: float, t1: float) -> list[str]:
    """The labels of the faults whose band overlaps [t0, t1]."""
    return [f.band.label for f in fs if f.band.t0 <= t1 and f.band.t1 >= t0]
