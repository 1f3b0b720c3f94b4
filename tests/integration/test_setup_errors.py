"""A broker that never starts and a port in use: one clear line, nothing left behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.naming import LABEL

from tests.rundirs import run_dirs


def _run(tmp_path: Path, config: dict) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "c.yaml"
    # No faults: 5 s is shorter than any fault period, and these runs test set-up only.
    base = {"runs_dir": str(tmp_path / "runs"), "duration_s": 5, "nemesis": {"faults": []}}
    cfg.write_text(yaml.safe_dump({**base, **config}))
    return subprocess.run(
        [sys.executable, "-m", "kafka_trial", "run", "-c", str(cfg), "--no-analyze"],
        capture_output=True,
        text=True,
        timeout=400,
        env=dict(os.environ),
    )


def _no_leftovers() -> None:
    client = ensure_engine()
    assert client.containers.list(all=True, filters={"label": [LABEL]}) == []
    assert client.networks.list(filters={"label": [LABEL]}) == []


def test_broker_that_never_starts(tmp_path: Path, images) -> None:
    r = _run(
        tmp_path,
        {
            "cluster": {
                "broker_config": {"num.network.threads": "not-a-number"},
                "startup_timeout_s": 90,
            }
        },
    )
    assert r.returncode == 3, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("kafka-trial: broker ") and " exited: " in last, last
    assert "fix: read logs/kafka-N.log" in last
    _no_leftovers()
    (run_dir,) = run_dirs(tmp_path / "runs")
    log = (run_dir / "logs" / "kafka-1.log").read_text()
    assert "num.network.threads" in log  # the cause is in the collected log


def test_port_in_use(tmp_path: Path, images) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        held = s.getsockname()[1]
        r = _run(tmp_path, {"cluster": {"host_port_base": held}})
    assert r.returncode == 3, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert f"port 127.0.0.1:{held} is in use" in last and "fix:" in last
    _no_leftovers()
