"""Spark started ahead of the analysis (issue 29's overlap): `kafka-trial run` starts
the session as its final heal begins. The start must not take the process's stderr
while it runs, must not start a second JVM for an analysis that asks meanwhile, and
must never stop a run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kafka_trial.spark_analysis import job

from tests.cli import JVM_NOISE

# The child: while `prestart` starts the JVM, another thread writes numbered lines to
# stderr and the main thread asks for a session at once.
_CHILD = r"""
import json, os, sys, threading, time
sys.path.insert(0, os.environ["BENCH_DIR"])
import procfs
from kafka_trial.spark_analysis.spark import session as S

stop = threading.Event()
marks = [0]
def mark():
    while not stop.is_set():
        print(f"mark {marks[0]}", file=sys.stderr, flush=True)
        marks[0] += 1
        time.sleep(0.05)

t = S.prestart("local[1]")
m = threading.Thread(target=mark)
m.start()
spark = S.spark_session("local[1]")  # waits for the start in progress
stop.set()
m.join()
t.join()
me = os.getpid()
jvms = [
    p for p in procfs.pids()
    if (st := procfs.stat(p)) is not None and st.ppid == me
    and any("SparkSubmit" in a for a in procfs.cmdline(p) or [])
]
print(json.dumps({"marks": marks[0], "jvms": len(jvms), "early": S.started_early(spark),
                  "count": spark.range(5).count()}))
spark.stop()
"""


def test_an_early_start_leaves_stderr_alone_and_starts_one_jvm(tmp_path: Path) -> None:
    log = tmp_path / "driver.log"
    env = {
        **os.environ,
        "KAFKA_TRIAL_SPARK_LOG": str(log),
        "BENCH_DIR": str(Path(__file__).resolve().parents[2] / "bench"),
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["early"] is True
    assert out["jvms"] == 1, out
    assert out["count"] == 5
    # Every line another thread wrote while the JVM started reached stderr: redirecting
    # the process's fd 2 for the JVM's start would have sent them to the driver log.
    assert out["marks"] >= 1
    lines = done.stderr.splitlines()
    missing = [i for i in range(out["marks"]) if f"mark {i}" not in lines]
    assert not missing, f"lines lost while the JVM started: {missing[:10]}"
    assert not [ln for ln in lines if any(n in ln for n in JVM_NOISE)], done.stderr[-2000:]
    if log.exists():  # (a stack trace's "markTaskCompleted" is no marker line)
        assert not re.search(r"^mark \d+$", log.read_text(), re.M)


def _run_dir(tmp_path: Path, spec: str, history_bytes: int) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "spec.json").write_text(spec)
    with (run / "history.jsonl").open("wb") as fh:
        fh.truncate(history_bytes)  # sparse: only the size matters here
    return run


@pytest.mark.parametrize(
    ("size", "c1"),
    [(1 << 20, True), (job.ONE_SHOT_C1_MAX_BYTES // 2, True), (40 << 20, False)],
)
def test_an_early_start_picks_the_jit_for_the_history_after_its_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, c1: bool
) -> None:
    """The drain will read back about what was sent: twice the size at the heal."""
    asked: list[tuple[str, bool]] = []
    followed: list[Path] = []
    monkeypatch.setattr(job, "prestart", lambda m, one_shot: asked.append((m, one_shot)))
    monkeypatch.setattr(job, "follow", followed.append)
    run = _run_dir(tmp_path, json.dumps({"check": {"spark_master": "local[2]"}}), size)
    job.start_analysis_early(run, None, one_shot=True)
    assert asked == [("local[2]", c1)]
    assert followed == [run / "history.jsonl"]
    asked.clear()
    job.start_analysis_early(run, "spark://h:7077", one_shot=False)
    assert asked == [("spark://h:7077", False)]


def test_an_early_start_never_stops_a_run_with_a_bad_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[object] = []
    monkeypatch.setattr(job, "prestart", lambda *a, **k: asked.append(a))
    monkeypatch.setattr(job, "follow", asked.append)
    run = _run_dir(tmp_path, "{not json", 10)
    job.start_analysis_early(run, None, one_shot=True)  # the analysis reports the spec
    assert asked == []
    assert not [t for t in threading.enumerate() if t.name == "spark-prestart"]
