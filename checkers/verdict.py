"""From anomaly counts to a verdict.

Detection is separate from policy: the Spark jobs report every anomaly they
find; the run's allowed set decides which ones make the run invalid. Verdicts
compose as false > unknown > true.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from kafka_trial.checkers.anomalies import with_defaults

Valid = bool | Literal["unknown"]


def merge(verdicts: Iterable[Valid]) -> Valid:
    out: Valid = True
    for v in verdicts:
        if v is False:
            return False
        if v == "unknown":
            out = "unknown"
    return out


def decide(
    anomalies: Mapping[str, Mapping[str, Any]],
    allowed: Iterable[str],
    problems: Iterable[str] = (),
) -> dict[str, Any]:
    """anomalies: type -> {"count": int | None, ...}; None means the check crashed, or
    did not run (`skipped`, which the verdict leaves out: it decided nothing).
    `undecided` on a found type: its count proves nothing (unknown, not invalid).
    Types every run allows (the registry's `allowed_by_default`) are allowed too."""
    own = tuple(allowed)
    allowed_set = set(with_defaults(own))
    per_type: list[Valid] = []
    forbidden_seen: list[str] = []
    allowed_seen: list[str] = []
    unknown: list[str] = []
    for name, result in anomalies.items():
        count = result.get("count")
        if count is None and result.get("skipped"):
            continue
        if count is None:
            unknown.append(name)
            per_type.append(True if name in allowed_set else "unknown")
        elif count > 0 and name not in allowed_set and result.get("undecided"):
            unknown.append(name)
            per_type.append("unknown")
        elif count > 0 and name in allowed_set:
            allowed_seen.append(name)
        elif count > 0:
            forbidden_seen.append(name)
            per_type.append(False)
    problem_list = list(problems)
    if problem_list:
        per_type.append("unknown")
    return {
        "valid": merge(per_type),
        "forbidden_seen": sorted(forbidden_seen),
        "allowed_seen": sorted(allowed_seen),
        "allowed_not_seen": sorted(
            a for a in own if a in anomalies and anomalies[a].get("count") == 0
        ),
        "unknown": sorted(unknown),
        "problems": problem_list,
    }


def no_fault_problems(faults_asked: Sequence[str], faults_injected: int) -> list[str]:
    """The problem of a run that asked for faults and injected none (`faults_injected`
    counts the fault ops that took effect, heals, waits and marks not counted): its
    verdict is unknown. A VALID verdict would say the settings held under faults they
    never met."""
    if not faults_asked or faults_injected:
        return []
    return [
        f"no fault was injected: the run asked for {', '.join(faults_asked)}, "
        "and no fault op took effect; rerun with a longer --duration or another seed"
    ]


def damaged_inside(damaged: int, last_line_cut: bool) -> int:
    """The damaged lines that count against a history: a cut-off last line is the run's
    end (a killed writer), not damage, so it is tolerated."""
    return damaged - (1 if last_line_cut else 0)


def damaged_problems(inside: int, examples: Sequence[tuple[int | None, str]]) -> list[str]:
    """Damaged lines inside the history leave the verdict unknown: what they held could
    clear or make any finding. `examples`: (index, line) of a few of them."""
    if inside <= 0:
        return []
    shown = "; ".join(
        f"{'index ' + str(i) if i is not None else 'no index'}: {ln[:80]!r}"
        for i, ln in examples[:3]
    )
    return [
        f"{inside} damaged line(s) inside the history; "
        f"results cover only the lines that parse (e.g. {shown})"
    ]


def exit_code(valid: Valid) -> int:
    return 0 if valid is True else 1 if valid is False else 2
