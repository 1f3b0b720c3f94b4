"""A seeded schedule of fault decisions: the same seed and config give the same list.

Decisions are data (which package, and a number that picks its target when the
fault starts); they are saved with the run so a failing run can be replayed.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Literal

from harness.spec import NemesisSpec


@dataclass(frozen=True)
class Step:
    at_s: float
    action: Literal["fault", "heal"]
    package: str
    pick: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def schedule(spec: NemesisSpec, seed: int, duration_s: float) -> list[Step]:
    """Alternate quiet and fault periods until the fault phase ends."""
    rng = random.Random(seed)
    steps: list[Step] = []
    t = spec.quiet_s
    while spec.faults and t + spec.fault_s <= duration_s:
        package = rng.choice(spec.faults)
        steps.append(Step(round(t, 3), "fault", package, rng.randrange(1 << 30)))
        t += spec.fault_s
        steps.append(Step(round(t, 3), "heal", package))
        t += spec.quiet_s
    return steps
