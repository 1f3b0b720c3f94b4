"""The Docker engine dies in the middle of a run (issue 25).

Before: the heal failed while the status said "faults now: none", the drain polled
nothing for 90 s, three tracebacks ended the run with exit 1 and no run.json, and
`analyze` then said INVALID with 212,540 values `unseen` and forbidden. Now the run
stops within seconds with one line and exit 2, run.json names the phase, the history
is kept, `cleanup` removes what is left once the engine is back, and `analyze` says
the history cannot decide (unknown).

This test stops the engine every other cluster test needs, so it starts it again
before it ends, whatever happened.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.naming import LABEL

from tests.integration.runs import start_run_until_fault
from tests.rundirs import run_dirs


def _dockerd_pid() -> int:
    out = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 1, f"expected one dockerd, found {pids}"
    return pids[0]


def _stop_engine(pid: int, timeout_s: float = 60) -> None:
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


def _kt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_trial", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )


def test_a_run_whose_engine_dies_stops_cleanly_and_is_judged_unknown(
    tmp_path: Path, images
) -> None:
    runs = tmp_path / "runs"
    proc, seen = start_run_until_fault(runs)  # an isolate-broker fault is in place
    try:
        t_kill = time.monotonic()
        _stop_engine(_dockerd_pid())
        _, err = proc.communicate(timeout=240)
        took = time.monotonic() - t_kill
    finally:
        if proc.poll() is None:
            proc.kill()
        ensure_engine()  # every later cluster test needs it
    err = "".join(seen) + err
    assert proc.returncode == 2, err[-4000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("kafka-trial: the Docker engine stopped answering during the "), last
    assert "fix: start the engine again, then `kafka-trial cleanup`" in last
    assert "Traceback" not in err, err[-4000:]
    assert took < 120, f"{took:.0f}s from the engine's end to the run's"
    (run_dir,) = run_dirs(runs)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["failed_phase"] in ("fault_phase", "final_heal", "drain"), info
    assert "the Docker engine stopped answering" in info["error"]
    assert (run_dir / "history.jsonl").stat().st_size > 0

    # Once the engine is back, cleanup removes what the run could not.
    assert _kt("cleanup").returncode == 0
    client = ensure_engine()
    assert client.containers.list(all=True, filters={"label": [LABEL]}) == []
    assert client.networks.list(filters={"label": [LABEL]}) == []

    # The history is judged, and it cannot decide: unknown, not a false INVALID.
    judged = _kt("analyze", str(run_dir))
    assert judged.returncode == 2, judged.stdout[-3000:] + judged.stderr[-2000:]
    assert judged.stdout.startswith("verdict: UNKNOWN"), judged.stdout[:2000]
    assert "<-- forbidden" not in judged.stdout, judged.stdout[:3000]


@pytest.fixture(autouse=True)
def _engine_back() -> Iterator[None]:
    """Whatever this module did, the engine answers when it ends."""
    yield
    ensure_engine()
