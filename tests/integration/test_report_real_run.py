"""`kafka-trial run` writes report.html after its analysis; the report of a real
acks=1 run under leader kills and isolation loads in headless Chromium with no
console message and no request leaving the file, and draws the faults it suffered.
The same run writes JUnit XML and points runs/latest at itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from junitparser import JUnitXml
from kafka_trial.checkers.results import Results

from tests.browser import load
from tests.integration.runs import RUN_LIMIT_S, the_run_dir


def test_run_writes_a_report_that_loads_offline(tmp_path: Path, images) -> None:
    cmd = [
        sys.executable, "-m", "kafka_trial", "run", "--preset", "acks1", "--duration", "10",
        "--set", "nemesis.quiet_s=2", "--seed", "3", "--runs-dir", str(tmp_path / "runs"),
        "--junitxml", str(tmp_path / "junit.xml"),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_LIMIT_S)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # valid or invalid, not unknown
    run = the_run_dir(tmp_path)
    assert (tmp_path / "runs" / "latest").resolve() == run.resolve()
    page = run / "report.html"
    assert f"report: {page}" in done.stdout, done.stdout[-2000:]
    results = Results.from_json(run / "results.json")
    # The JVM started as the final heal began, and the history was parsed as it was
    # written, while the heal and drain went on.
    assert results.analysis.session_started == "early", results.analysis
    assert results.analysis.parsed_during_run is True, results.analysis
    assert not list(run.glob(".history.parquet.*")), "a follower's file was left behind"
    nemesis = json.loads((run / "report-data.json").read_text())["nemesis"]
    faults = [o for o in nemesis if o["type"] == "ok" and o["f"] in ("kill", "partition")]
    assert faults, nemesis
    got = load(page, screenshot=tmp_path / "report.png")
    assert got.console == [] and got.requests == [], (got.console, got.requests)
    assert got.dom.count('class="fault-band"') >= len(faults)
    assert "Claim C2" in got.dom
    for name, a in results.anomalies.items():
        if a.count:
            assert f'id="a-{name}"' in got.dom, name
    assert page.stat().st_size < 1_000_000
    # The same verdict for CI: a failing case per forbidden anomaly found.
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "junit.xml"))))
    forbidden = set(results.forbidden_seen)
    assert {c.name for c in suite if not c.is_passed and not c.is_skipped} - {
        "history"
    } == forbidden
    # No transaction in this run: the cycle checks did not run, and say so.
    skipped = {n for n, a in results.anomalies.items() if a.skipped}
    assert (
        {c.name for c in suite if c.is_skipped}
        == skipped
        == {
            "G0",
            "G1c",
            "G1c-process",
            "G1c-realtime",
        }
    )
