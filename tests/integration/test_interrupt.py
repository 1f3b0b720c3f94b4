"""Ctrl-C and SIGTERM mid-fault: the cluster is healed and removed, the history kept."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.naming import LABEL

from tests.integration.runs import start_run_until_fault
from tests.rundirs import run_dirs


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_fault_heals_and_cleans_up(tmp_path: Path, images, sig: int) -> None:
    proc, seen = start_run_until_fault(tmp_path)
    try:
        time.sleep(1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(seen) + err
    client = ensure_engine()
    assert client.containers.list(all=True, filters={"label": [LABEL]}) == []
    assert client.networks.list(filters={"label": [LABEL]}) == []
    assert client.volumes.list(filters={"label": [LABEL]}) == []
    (run_dir,) = run_dirs(tmp_path)
    lines = (run_dir / "history.jsonl").read_text().splitlines()
    ops = [json.loads(x) for x in lines]  # every line whole
    open_ops: dict[object, str] = {}
    for op in ops:
        if op["type"] == "invoke":
            assert op["process"] not in open_ops
            open_ops[op["process"]] = op["f"]
        else:
            assert open_ops.pop(op["process"]) == op["f"]
    assert open_ops == {}, "every invoke must have its completion"
    nemesis = [(o["f"], o["type"]) for o in ops if o["process"] == "nemesis"]
    assert ("partition", "ok") in nemesis
    assert nemesis[-1] == ("heal-all", "ok"), "teardown heal must be on record"
    assert (run_dir / "logs" / "kafka-1.log").stat().st_size > 0


def _proxy_clients() -> list:
    from kafka_trial.cluster.naming import API_PORT, LABEL_ROLE
    from kafka_trial.cluster.toxiproxy import ToxiproxyClient

    out = []
    for c in ensure_engine().containers.list(filters={"label": [LABEL]}):
        if c.labels.get(LABEL_ROLE) == "proxy":
            port = c.attrs["NetworkSettings"]["Ports"][f"{API_PORT}/tcp"][0]["HostPort"]
            out.append(ToxiproxyClient(f"http://127.0.0.1:{port}"))
    return out


def _faults_in_place() -> int:
    n = 0
    for toxi in _proxy_clients():
        for p in toxi.proxies().values():
            n += len(p.get("toxics") or []) + (0 if p.get("enabled", True) else 1)
    return n


def test_sigkill_mid_fault_then_heal_and_cleanup(tmp_path: Path, images) -> None:
    """A hard crash runs no cleanup at all: `kafka-trial heal` and `cleanup` recover."""
    proc, _ = start_run_until_fault(tmp_path)
    proc.kill()
    proc.wait(30)
    assert _faults_in_place() > 0, "the crash should have left the partition in place"
    cli = [sys.executable, "-m", "kafka_trial"]
    r = subprocess.run([*cli, "heal"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "3 proxies reset" in r.stdout
    assert _faults_in_place() == 0
    r = subprocess.run([*cli, "cleanup"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    client = ensure_engine()
    assert client.containers.list(all=True, filters={"label": [LABEL]}) == []
    assert client.volumes.list(filters={"label": [LABEL]}) == []
    # The history written before the crash is intact up to its last complete line.
    (run_dir,) = run_dirs(tmp_path)
    from kafka_trial.contracts.history import read_history

    assert any(o.f == "partition" for o in read_history(run_dir / "history.jsonl").ops)
