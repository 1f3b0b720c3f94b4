"""A seeded schedule of fault decisions: the same seed and config give the same list.

The fault phase is a sequence of stable periods separated by quiet gaps. In each
period a random subset of the fault packages is active (an empty subset is a quiet
period); every active package is healed at the period's end. Decisions are data
(which package, and a number that picks its targets when the fault starts); they
are saved with the run so a failing run can be replayed.

A run that asks for faults gets every one of them: the last period that fits takes
in whatever package no earlier period drew. A fault phase shorter than one period
(`min_duration_s`) could inject nothing, and the run spec refuses it.
"""

from __future__ import annotations

import random

from kafka_trial.contracts.schedule import Step
from kafka_trial.contracts.spec.nemesis import NemesisSpec

__all__ = ["Step", "min_duration_s", "schedule"]


def _subset(rng: random.Random, faults: tuple[str, ...]) -> list[str]:
    if len(faults) == 1:
        return list(faults)
    # Each package is active with probability 1/2; about one period in 2^n is quiet.
    return [f for f in faults if rng.random() < 0.5]


def min_duration_s(spec: NemesisSpec) -> float:
    """The shortest fault phase in which every package fires: one quiet gap, one fault;
    with written steps, the last of them."""
    if spec.steps:
        return max(s.at_s for s in spec.steps)
    return spec.quiet_s + spec.fault_s if spec.faults else 0.0


def schedule(spec: NemesisSpec, seed: int, duration_s: float) -> list[Step]:
    if spec.steps:  # written out (a shrunk schedule): replayed as it stands
        return sorted(spec.steps, key=lambda s: s.at_s)
    rng = random.Random(seed)
    steps: list[Step] = []
    fired: set[str] = set()
    t = spec.quiet_s
    while spec.faults and t + spec.fault_s <= duration_s:
        active = _subset(rng, spec.faults)
        picks = [rng.randrange(1 << 30) for _ in active]
        if t + 2 * spec.fault_s + spec.quiet_s > duration_s:
            # The last period: a package the draws left out fires now, or never. It
            # comes after the drawn ones, so their picks stay what the seed gave them.
            missing = [f for f in spec.faults if f not in fired and f not in active]
            active += missing
            picks += [rng.randrange(1 << 30) for _ in missing]
        fired.update(active)
        for package, pick in zip(active, picks, strict=True):
            steps.append(Step(round(t, 3), "fault", package, pick))
        t += spec.fault_s
        for package in reversed(active):
            steps.append(Step(round(t, 3), "heal", package))
        t += spec.quiet_s
    return steps
