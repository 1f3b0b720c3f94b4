"""A seeded schedule of fault decisions: the same seed and config give the same list.

The fault phase is a sequence of stable periods separated by quiet gaps. In each
period a random subset of the fault packages is active (an empty subset is a quiet
period); every active package is healed at the period's end. Decisions are data
(which package, and a number that picks its targets when the fault starts); they
are saved with the run so a failing run can be replayed.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Literal

from kafka_trial.nemesis.settings import NemesisSpec


@dataclass(frozen=True)
class Step:
    at_s: float
    action: Literal["fault", "heal"]
    package: str
    pick: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _subset(rng: random.Random, faults: tuple[str, ...]) -> list[str]:
    if len(faults) == 1:
        return list(faults)
    # Each package is active with probability 1/2; about one period in 2^n is quiet.
    return [f for f in faults if rng.random() < 0.5]


def schedule(spec: NemesisSpec, seed: int, duration_s: float) -> list[Step]:
    rng = random.Random(seed)
    steps: list[Step] = []
    t = spec.quiet_s
    while spec.faults and t + spec.fault_s <= duration_s:
        active = _subset(rng, spec.faults)
        for package in active:
            steps.append(Step(round(t, 3), "fault", package, rng.randrange(1 << 30)))
        t += spec.fault_s
        for package in reversed(active):
            steps.append(Step(round(t, 3), "heal", package))
        t += spec.quiet_s
    return steps
