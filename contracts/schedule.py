"""RUN_DIR/schedule.json: the fault phase's seeded decisions, one step per fault and
heal (docs/run-directory.md).

The nemesis draws them (nemesis/schedule.py) and the runner saves them before the
fault phase starts, so a failing run can be replayed and read as a plan: `at_s`
counts from the start of the fault phase (run.json's `fault_phase_start_ns`).
It grows only by addition: a key added later has a default.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from kafka_trial.contracts.run_files import load_json
from pydantic import TypeAdapter

SCHEDULE_FILE = "schedule.json"


@dataclass(frozen=True)
class Step:
    at_s: float  # seconds after the start of the fault phase
    action: Literal["fault", "heal"]
    package: str  # a nemesis package's name
    pick: int = 0  # what picks the fault's targets when it starts (0 for a heal)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


_STEPS = TypeAdapter(list[Step])


def write_schedule(run_dir: Path, steps: list[Step]) -> None:
    (run_dir / SCHEDULE_FILE).write_text(json.dumps([s.to_dict() for s in steps], indent=1))


def read_schedule(run_dir: Path) -> list[Step]:
    """RUN_DIR/schedule.json, or one TrialError line naming what to do instead."""
    return load_json(
        run_dir / SCHEDULE_FILE,
        _STEPS.validate_python,
        "a list of schedule steps",
        "point at a directory written by `kafka-trial run` (it writes the schedule first)",
    )
