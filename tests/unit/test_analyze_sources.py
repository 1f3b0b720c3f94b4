"""`analyze` takes a run directory, a history file or a URI (issue 9: a bare history
is enough), and keeps the JVM's output off the user's terminal."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_trial.checkers.results import Results
from kafka_trial.spark_analysis import job
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read.sources import HistorySource, resolve

from tests.cli import JVM_NOISE, kt
from tests.histories import Builder


def _lossy(run_dir: Path) -> Path:
    """One acknowledged value the drain, which read its partition to the end, missed."""
    b = Builder(run_dir)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    return b.done()


def test_the_cli_judges_a_history_file_without_jvm_noise(tmp_path: Path) -> None:
    run_dir = _lossy(tmp_path / "run")
    (run_dir / "spec.json").unlink()  # a bare history: defaults, nothing allowed
    r = kt("analyze", str(run_dir / "history.jsonl"))
    assert r.returncode == 1, r.stderr
    assert "lost-write" in r.stdout
    assert not [ln for ln in r.stderr.splitlines() if any(n in ln for n in JVM_NOISE)], r.stderr
    res = Results.from_json(run_dir / "results.json")
    assert res.anomalies["lost-write"].count == 1
    # The command judges one history and exits: its JVM compiled with C1 only.
    assert res.analysis.jit == "one-shot"
    assert res.analysis.session_started == "now"


def test_a_file_uri_with_results_elsewhere(spark, tmp_path: Path) -> None:
    run_dir = _lossy(tmp_path / "run")
    out = tmp_path / "out"
    res = analyze((run_dir / "history.jsonl").as_uri(), out_dir=out)
    assert res.anomalies["lost-write"].count == 1
    assert (out / "results.json").is_file() and not (run_dir / "results.json").exists()
    assert res.analysis.jit == "long"  # the tests' session judges one history after another
    assert res.analysis.session_started == "reused"


def test_only_a_one_shot_analysis_of_a_small_local_history_starts_a_c1_jvm(
    tmp_path: Path, monkeypatch
) -> None:
    asked: list[bool] = []

    def session(master: str, one_shot: bool = False) -> str:
        asked.append(one_shot)
        return "a session"

    monkeypatch.setattr(job, "spark_session", session)
    src = resolve(_lossy(tmp_path / "run"), None)
    job._session_for(src, None, one_shot=True)
    job._session_for(src, None)
    monkeypatch.setattr(job, "ONE_SHOT_C1_MAX_BYTES", src.local.stat().st_size - 1)
    job._session_for(src, None, one_shot=True)
    assert asked == [True, False, False]


def test_a_remote_history_is_read_through_hadoop(spark, tmp_path: Path) -> None:
    """The Hadoop file system path, as for hdfs:// or s3a://, taken with a file:// URI:
    the last line, spec.json and the history all come through the JVM."""
    run_dir = _lossy(tmp_path / "run")
    # The spec beside it allows the loss: proof that the remote spec.json was read.
    spec = json.loads((run_dir / "spec.json").read_text())
    spec["check"]["allowed"] = ["lost-write"]
    (run_dir / "spec.json").write_text(json.dumps(spec))
    with (run_dir / "history.jsonl").open("a") as fh:
        fh.write('{"index": 99, "ti')  # cut off mid-write: tolerated, and seen remotely
    out = tmp_path / "out"
    src = HistorySource((run_dir / "history.jsonl").as_uri(), None, out, None)
    res = analyze(src)
    assert res.anomalies["lost-write"].count == 1
    assert res.valid is True, res.problems
    assert res.history.last_line == "cut"
    assert (out / "results.json").is_file()


def test_a_missing_history_names_what_to_pass(tmp_path: Path) -> None:
    r = kt("analyze", str(tmp_path / "nothing-here"))
    assert r.returncode == 3
    assert "not found" in r.stderr and "fix:" in r.stderr
