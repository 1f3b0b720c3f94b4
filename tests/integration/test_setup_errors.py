"""A broker that never starts and a port in use: one clear line, nothing left behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml
from kafka_trial.checkers.results import Results
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.naming import LABEL
from kafka_trial.contracts.history import read_history

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


def _app_processes(tag: str) -> list[str]:
    """Processes whose command line holds `tag` (the apps below carry it)."""
    out = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


def test_an_app_that_exits_at_once_is_refused_and_nothing_keeps_running(
    tmp_path: Path, images
) -> None:
    tag = f"kt-exits-at-once-{os.getpid()}"
    app = {"command": f"echo {tag} is broken >&2; exit 4", "guarantee": "at-least-once"}
    r = _run(tmp_path, {"app": app})
    assert r.returncode == 3, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "exited at once" in last and f"{tag} is broken" in last and "fix:" in last, last
    _no_leftovers()
    (run_dir,) = run_dirs(tmp_path / "runs")
    assert f"{tag} is broken" in (run_dir / "app" / "instance-0.err").read_text()
    exits = [o.value for o in read_history(run_dir / "history.jsonl").ops if o.f == "app-exit"]
    # The first instance to exit ends the run; another may not have exited yet on its
    # own, and then the harness ends it (by "harness"): what holds in every run is that
    # one exited by itself with its code, and none ended any other way.
    assert any(e["exit_code"] == 4 and e["by"] == "itself" for e in exits), exits  # type: ignore[index]
    assert all(e["exit_code"] == 4 or e["by"] == "harness" for e in exits), exits  # type: ignore[index]


def test_an_image_the_engine_does_not_hold_is_refused_before_the_cluster_starts(
    tmp_path: Path, images
) -> None:
    app = {"image": "kafka-trial/no-such-app:never", "guarantee": "exactly-once"}
    r = _run(tmp_path, {"app": app})
    assert r.returncode == 3, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "kafka-trial/no-such-app:never is not in the local Docker engine" in last, last
    _no_leftovers()
    (run_dir,) = run_dirs(tmp_path / "runs")
    assert not (run_dir / "cluster.json").exists(), "refused before any broker started"


def test_an_app_that_never_consumes_is_unknown_not_valid(tmp_path: Path, images) -> None:
    """Nothing it did not read proves anything: the verdict is unknown, with why."""
    tag = f"kt-never-consumes-{os.getpid()}"
    cfg = tmp_path / "c.yaml"
    config = {
        "runs_dir": str(tmp_path / "runs"),
        "duration_s": 5,
        "nemesis": {"faults": []},
        "producer": {"target_rate": 500},
        "app": {
            # The tag in its command line, where pgrep finds it.
            "command": f"exec {sys.executable} -c 'import time; time.sleep(600)' {tag}",
            "guarantee": "at-least-once",
            "quiet_s": 2,
            "stop_grace_s": 2,
        },
    }
    cfg.write_text(yaml.safe_dump(config))
    r = subprocess.run(
        [sys.executable, "-m", "kafka_trial", "run", "-c", str(cfg)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "verdict: UNKNOWN" in r.stdout
    (run_dir,) = run_dirs(tmp_path / "runs")
    results = Results.from_json(run_dir / "results.json")
    assert any("never consumed" in p for p in results.problems), results.problems
    assert results.anomalies["app-output-lost"].count == 0
    _no_leftovers()
    assert _app_processes(tag) == []
