"""SHRINK_DIR/shrink.json: every schedule `kafka-trial shrink` tried, each repeat's
verdict, and which one is the smallest that failed (docs/shrink.md).

Written after every candidate, so an interrupted shrink keeps what it learned. It
grows only by addition: a key added later has a default.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from kafka_trial.contracts.run_files import load_json
from kafka_trial.contracts.schedule import Step
from pydantic import TypeAdapter

SHRINK_FILE = "shrink.json"
SHRUNK_CONFIG = "shrunk.yaml"
SHRINK_PAGE = "shrink.html"


@dataclass(frozen=True)
class Repeat:
    """One run of a candidate: its directory, its verdict word, and how many of each
    sought anomaly it showed (an error: the run or its judging failed, no verdict)."""

    run_dir: str
    verdict: str
    shown: dict[str, int] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Tried:
    """A candidate schedule and what its repeats showed. `failed`: some repeat showed
    a sought anomaly, so the schedule can fail."""

    number: int
    stage: str  # source, episodes, shorter, targets
    steps: tuple[Step, ...]
    duration_s: float
    targets: tuple[str, ...] | None
    repeats: tuple[Repeat, ...]
    failed: bool


@dataclass(frozen=True)
class ShrinkRecord:
    source_run: str
    anomalies: tuple[str, ...]  # sought: a candidate fails by showing any of them
    repeats: int  # at most this many runs per candidate
    state: Literal["running", "done", "interrupted"]
    tried: tuple[Tried, ...] = ()
    best: int = 0  # the `number` of the smallest failing schedule; 0 is the source run's
    best_steps: tuple[Step, ...] = ()
    best_duration_s: float = 0.0
    best_targets: tuple[str, ...] | None = None

    def write(self, out: Path) -> None:
        (out / SHRINK_FILE).write_text(json.dumps(asdict(self), indent=1))

    @property
    def runs(self) -> int:
        return sum(len(t.repeats) for t in self.tried)


_RECORD = TypeAdapter(ShrinkRecord)


def read_shrink(out: Path) -> ShrinkRecord:
    """SHRINK_DIR/shrink.json, or one TrialError line naming what to do instead."""
    return load_json(
        out / SHRINK_FILE,
        _RECORD.validate_python,
        "a shrink record",
        "point at a directory `kafka-trial shrink` wrote",
    )
