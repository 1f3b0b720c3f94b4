"""Whole runs in a child process, as `kafka-trial run` runs them.

A run in the test process would share its librdkafka clients, threads and signal
handlers with every later test, and a client call that never returns would hold the
whole suite until CI's limit. In a child, a stuck run costs one failed test, with
every thread's stack to say where it stuck."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.leftovers import remove_leftovers

from tests.rundirs import run_dirs

# A 25 s campaign takes 60-120 s here; anything past this is stuck.
RUN_LIMIT_S = 600


def _tail(path: Path, chars: int = 6000) -> str:
    text = path.read_text(errors="replace") if path.is_file() else ""
    return text[-chars:]


def start_child(tmp_path: Path, data: dict[str, Any]) -> subprocess.Popen[bytes]:
    """`kafka-trial run --no-analyze` of the campaign `data` (a config mapping), its
    runs under tmp_path/runs and its output in tmp_path/run.stdout and run.stderr."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**data, "runs_dir": str(tmp_path / "runs")}))
    cmd = [sys.executable, "-m", "kafka_trial", "run", "-c", str(config), "--no-analyze"]
    with (tmp_path / "run.stdout").open("w") as fo, (tmp_path / "run.stderr").open("w") as fe:
        return subprocess.Popen(cmd, stdout=fo, stderr=fe)


def the_run_dir(tmp_path: Path) -> Path:
    dirs = run_dirs(tmp_path / "runs")
    assert len(dirs) == 1, dirs
    return dirs[0]


def run_in_child(tmp_path: Path, data: dict[str, Any], limit_s: float = RUN_LIMIT_S) -> Path:
    """Run the campaign `data` to its end; the run directory."""
    child = start_child(tmp_path, data)
    err = tmp_path / "run.stderr"
    try:
        rc = child.wait(limit_s)
    except subprocess.TimeoutExpired:
        stop_stuck(child, tmp_path / "runs")
        pytest.fail(
            f"the run did not end within {limit_s:.0f}s; its threads:\n{_tail(err)}",
            pytrace=False,
        )
    if rc != 0:
        pytest.fail(f"kafka-trial run exited {rc}:\n{_tail(err)}", pytrace=False)
    return the_run_dir(tmp_path)


def stop_stuck(child: subprocess.Popen[bytes], runs: Path) -> None:
    child.send_signal(signal.SIGUSR1)  # the CLI dumps every thread's stack
    try:
        child.wait(2)
    except subprocess.TimeoutExpired:
        child.terminate()  # SIGTERM: the run heals and removes its cluster
        try:
            child.wait(90)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    # A child killed outright left its cluster: remove it by its run label.
    for described in runs.glob("*/cluster.json"):
        remove_leftovers(ensure_engine(), run=json.loads(described.read_text())["run_id"])


RUN_UNTIL_FAULT = [
    sys.executable,
    "-m",
    "kafka_trial.harness.cli",
    "run",
    "--duration",
    "120",
    "--nemesis",
    "isolate-broker",
    "--no-analyze",
]


def start_run_until_fault(runs_dir: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """Start a campaign and return once a partition fault is in place."""
    proc = subprocess.Popen(
        [*RUN_UNTIL_FAULT, "--runs-dir", str(runs_dir)],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + 240
    for line in proc.stderr:
        seen.append(line)
        if "nemesis partition" in line:  # a fault is active right now
            return proc, seen
        if time.monotonic() > deadline:
            break
    proc.kill()
    pytest.fail("no fault started:\n" + "".join(seen))
