"""`kafka-trial campaign` for real: two presets on one real cluster, the second on
the cluster the first left warm, each judged and reported, with the summary,
campaign.json, index.html and JUnit XML, and the worst verdict as the exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from junitparser import JUnitXml

from tests.integration.conftest import containers_of
from tests.integration.runs import RUN_LIMIT_S


def test_a_two_run_campaign(tmp_path: Path, images) -> None:
    cmd = [
        sys.executable, "-m", "kafka_trial", "campaign", "--presets", "safe,acks0",
        "--duration", "10", "--runs-dir", str(tmp_path / "runs"),
        "--junitxml", str(tmp_path / "junit.xml"),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * RUN_LIMIT_S)
    (camp,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    state = json.loads((camp / "campaign.json").read_text())
    assert state["status"] == "done", done.stderr[-3000:]
    assert state["order"] == ["safe-s0", "acks0-s0"]
    codes = []
    for key in state["order"]:
        r = state["runs"][key]
        assert r["status"] == "done" and "code" in r, r
        results = json.loads((camp / key / "results.json").read_text())
        assert results["stats"]["send_outcomes"].get("ok", 0) > 0
        assert (camp / key / "report.html").is_file()
        codes.append(r["code"])
    assert done.returncode == state["exit_code"]
    assert state["exit_code"] == (1 if 1 in codes else 2 if 2 in codes else 0)
    assert "safe-s0" in done.stdout and "acks0-s0" in done.stdout  # the summary table
    index = (camp / "index.html").read_text()
    assert '<a href="safe-s0/report.html">' in index and '<a href="acks0-s0/report.html">' in index
    suites = list(JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    assert [s.name for s in suites] == ["safe-s0", "acks0-s0"]
    # The second run had the first one's cluster, with its own topic and client ids,
    # and the campaign removed that cluster at its end.
    assert [state["runs"][k]["warm_cluster"] for k in state["order"]] == [False, True]
    assert "clusters: 1 started for 2 runs" in done.stdout
    described = [json.loads((camp / k / "cluster.json").read_text()) for k in state["order"]]
    assert described[0]["run_id"] == described[1]["run_id"]
    assert described[0]["client_run_id"] != described[1]["client_run_id"]
    topics = [
        json.loads((camp / k / "spec.json").read_text())["topic"]["name"] for k in state["order"]
    ]
    assert topics == ["trial", "trial-r2"]
    second = [json.loads(line) for line in (camp / "acks0-s0" / "history.jsonl").open()]
    assert {m["topic"] for o in second if o["f"] == "send" for m in o["value"]} == {"trial-r2"}
    assert containers_of(described[0]["run_id"]) == []
    # The first run was judged while the second one ran, not before it started.
    assert (camp / "safe-s0" / "results.json").stat().st_mtime > (
        camp / "acks0-s0" / "spec.json"
    ).stat().st_mtime
    assert all(state["runs"][k]["judge_s"] > 0 for k in state["order"])
