"""Soak: `kafka-trial shrink` on a real cluster, an acks=1 run that loses writes.

    python bench/shrink_real.py [--seeds 5] [--repeats 3] [--duration 45] [--keep DIR]

Issue 46's real-cluster case, too long for .ci/run (7-8 minutes on 2 cores): a
failing source run is found first (`run --preset acks1 --until-fail`, kill-leader and
isolate-broker), then shrunk, and the smallest failing schedule must be one fault
step. Prints the source and shrunk schedules, the runs and candidates the search
took and the wall times; exits 1 if the shrunk schedule has more than one fault
step, 2 if no seed lost a write (acks=1 usually loses, not always: then nothing was
shrunk, which is said, not passed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_trial.contracts.schedule import read_schedule
from kafka_trial.contracts.shrink_record import read_shrink


def _cli(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "kafka_trial", *args]).returncode


def _failing_run(runs: Path) -> Path | None:
    """The newest run directory whose results say INVALID."""
    for d in sorted(runs.glob("2*"), reverse=True):
        res = d / "results.json"
        if res.exists() and json.loads(res.read_text()).get("valid") is False:
            return d
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds tried for a failing run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=45)
    ap.add_argument("--keep", type=Path, help="run directories go here (default: a temp dir)")
    a = ap.parse_args()
    runs = a.keep or Path(tempfile.mkdtemp(prefix="kt-shrink-real-"))
    t0 = time.monotonic()
    _cli(
        "run", "--preset", "acks1", "--duration", f"{a.duration:g}",
        "--until-fail", str(a.seeds), "--runs-dir", str(runs),
    )  # fmt: skip
    source = _failing_run(runs)
    found_s = time.monotonic() - t0
    if source is None:
        print(f"no acks1 run of {a.seeds} seeds lost a write ({found_s:.0f} s): nothing shrunk")
        return 2
    src_faults = [s for s in read_schedule(source) if s.action == "fault"]
    t1 = time.monotonic()
    rc = _cli("shrink", str(source), "--repeats", str(a.repeats))
    shrink_s = time.monotonic() - t1
    record = read_shrink(source / "shrink")
    best = [s for s in record.best_steps if s.action == "fault"]
    print(f"source run {source.name}: {len(src_faults)} fault steps, found in {found_s:.0f} s")
    for s in src_faults:
        print(f"  at {s.at_s:g} s: {s.package}")
    print(
        f"shrink (exit {rc}, {record.state}): {record.runs} runs of {len(record.tried)} "
        f"candidates in {shrink_s:.0f} s; smallest failing schedule {len(best)} fault "
        f"steps, fault phase {record.best_duration_s:g} s, targets {record.best_targets}"
    )
    for s in best:
        print(f"  at {s.at_s:g} s: {s.package} (pick {s.pick})")
    if len(best) != 1:
        print(f"FAILED: expected one fault step, got {len(best)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
