"""Two kafka-trial processes on one machine take turns on the shared caches and apt,
and the one that waits says for whom."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_trial.cluster import host

HOLD = """
import sys, time
from kafka_trial.cluster.host import host_lock
with host_lock("images", "building the test's images"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def test_a_second_process_waits_and_names_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(host, "CACHE", tmp_path)
    env = dict(os.environ, KAFKA_TRIAL_CACHE=str(tmp_path))
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, "2"], env=env, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    with host.host_lock("images", "the test"):
        waited = time.monotonic() - t0
    child.wait()
    assert waited > 1.5  # the holder kept it for 2 s after saying so
    err = capfd.readouterr().err
    assert f"another kafka-trial process (pid {child.pid}, building the test's images)" in err


def test_an_uncontended_lock_does_not_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "CACHE", tmp_path)
    t0 = time.monotonic()
    with host.host_lock("apt", "nothing"), host.host_lock("images", "nothing"):
        pass
    assert time.monotonic() - t0 < 0.5
