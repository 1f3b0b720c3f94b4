"""`kafka-trial finish`: a run killed before its final drain gets a real verdict
(issue 9, defect 9). Its own cluster because the test kills the run that owns it.

The run records at 30,000 values/s (three times the default rate), so the SIGKILL
lands with a buffered history: what the writer had not written yet is lost, and
the verdict must still be a real one, or unknown, never a false anomaly."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_trial.harness.presets import preset
from kafka_trial.harness.spec import merge_config
from kafka_trial.spark_analysis.job import analyze

from tests.integration.conftest import containers_of
from tests.integration.runs import start_child, stop_stuck, the_run_dir
from tests.results import ran


def _faulted_history(run_dir: Path) -> bool:
    """Some writes, and a fault applied: the point at which to kill the run."""
    path = run_dir / "history.jsonl"
    if not path.is_file():
        return False
    lines = path.read_text().splitlines()
    return len(lines) > 2000 and any(
        '"process":"nemesis"' in ln and '"type":"ok"' in ln and '"brokers"' in ln for ln in lines
    )


def _finish(run_dir: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kafka_trial", "finish", str(run_dir), "--no-analyze"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_finish_turns_a_killed_run_into_a_verdict(tmp_path: Path, images) -> None:
    high_rate = {"duration_s": 90, "seed": 11, "producer": {"target_rate": 30000}}
    child = start_child(tmp_path, merge_config(preset("safe"), high_rate))
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and child.poll() is None:
            runs = [p for p in (tmp_path / "runs").glob("*") if not p.is_symlink()]
            if runs and _faulted_history(runs[0]):
                break
            time.sleep(1)
        assert child.poll() is None, (tmp_path / "run.stderr").read_text()[-3000:]
        child.kill()  # SIGKILL: no heal, no drain, no teardown
        child.wait()
        run_dir = the_run_dir(tmp_path)
        run_id = json.loads((run_dir / "cluster.json").read_text())["run_id"]
        assert containers_of(run_id), "the killed run's cluster should still be there"

        before = analyze(run_dir)
        assert before.valid == "unknown", before.problems
        # Nothing forbidden on the way there: an op whose completion was lost is open.
        assert before.forbidden_seen == (), before.forbidden_seen
        assert before.history.open_invokes > 0
        assert any("final drain never ran" in p for p in before.problems)

        done = _finish(run_dir)
        assert done.returncode == 0, done.stderr[-3000:]
        after = analyze(run_dir)
        counts = ran(after)
        # The safe settings (claim C4) lose nothing, even with the harness killed.
        assert after.valid is True, (counts, after.problems)
        assert counts["unseen"] == 0 and counts["lost-write"] == 0, counts
        info = json.loads((run_dir / "run.json").read_text())
        assert info["drain"]["complete"] is True
        assert info["finished_by"]["ops_completed_info"] > 0  # the killed run's open ops
        assert containers_of(run_id) == []

        again = _finish(run_dir)
        assert again.returncode == 3 and "already has its final drain" in again.stderr
    finally:
        # Stops the child if it still runs, and removes the cluster if finish did not.
        stop_stuck(child, tmp_path / "runs")
