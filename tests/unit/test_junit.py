"""JUnit XML for CI, read back with a maintained JUnit library (junitparser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml
from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.checkers.results import Results
from kafka_trial.harness.cli import main
from kafka_trial.harness.runner import point_latest
from kafka_trial.report.junit import write_junit

from tests.histories import lossy
from tests.results import made_results


def _results(valid: Any = False, problems: tuple[str, ...] = (), **counts: Any) -> Results:
    return made_results(
        valid,
        {name.replace("_", "-"): c for name, c in counts.items()},
        allowed=("duplicate",),
        problems=problems,
    )


def _cases(path: Path) -> dict[str, Any]:
    xml = JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    return {case.name: case for case in suite}, suite


def test_a_forbidden_anomaly_fails_an_allowed_one_passes_an_undecided_one_errs(
    tmp_path: Path,
) -> None:
    res = _results(lost_write=3, duplicate=5, reorder=None)
    cases, suite = _cases(write_junit(tmp_path / "j.xml", [("run-1", res)]))
    assert suite.name == "run-1" and suite.tests == len(ANOMALY_TYPES) + 1
    assert (suite.failures, suite.errors) == (1, 1)
    (fail,) = cases["lost-write"].result
    assert isinstance(fail, Failure)
    assert fail.message.startswith("lost-write: 3 values found, forbidden by this config")
    assert '{"value":7}; {"value":8}' in fail.message and '"value":9' not in fail.message
    assert cases["duplicate"].is_passed
    assert cases["duplicate"].system_out == "duplicate: 5 (allowed by this config)"
    (err,) = cases["reorder"].result
    assert isinstance(err, Error) and "could not decide" in err.message
    assert cases["unseen"].is_passed and cases["history"].is_passed


def test_a_clean_verdict_passes_every_case(tmp_path: Path) -> None:
    res = _results(valid=True)
    cases, suite = _cases(write_junit(tmp_path / "j.xml", [("clean", res)]))
    assert (suite.failures, suite.errors) == (0, 0)
    assert all(c.is_passed for c in cases.values())


def test_an_unknown_verdict_is_an_error_naming_its_problem(tmp_path: Path) -> None:
    res = _results(valid="unknown", problems=("the final drain never ran",))
    cases, suite = _cases(write_junit(tmp_path / "j.xml", [("cut", res)]))
    (err,) = cases["history"].result
    assert isinstance(err, Error) and "the final drain never ran" in err.message
    assert suite.errors == 1


def test_analyze_writes_junit_for_a_planted_loss(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = lossy(tmp_path / "lossy")
    out = tmp_path / "ci" / "junit.xml"
    assert main(["analyze", str(run), "--junitxml", str(out)]) == 1
    assert f"junit: {out}" in capsys.readouterr().out
    cases, suite = _cases(out)
    (fail,) = cases["lost-write"].result
    assert "lost-write: 1 values found" in fail.message and '"value":11' in fail.message
    assert suite.name == "lossy"


def test_latest_points_at_the_newest_run(tmp_path: Path) -> None:
    for name in ("run-a", "run-b"):
        (tmp_path / name).mkdir()
        point_latest(tmp_path / name)
    latest = tmp_path / "latest"
    assert latest.is_symlink() and latest.resolve() == (tmp_path / "run-b").resolve()
    assert str(latest.readlink()) == "run-b"  # relative: the tree can move


def test_an_undecided_count_is_an_error_not_a_forbidden_failure(tmp_path: Path) -> None:
    """Unseen values when the drain never ran prove nothing: the verdict is unknown,
    and CI must not read them as a forbidden anomaly found."""
    from kafka_trial.report.text import render

    res = made_results("unknown", {"unseen": 5}, problems=("the final drain never ran",))
    undecided = res.anomalies["unseen"].model_copy(update={"undecided": "no drain"})
    res = res.model_copy(update={"anomalies": {**res.anomalies, "unseen": undecided}})
    cases, suite = _cases(write_junit(tmp_path / "j.xml", [("cut", res)]))
    (err,) = cases["unseen"].result
    assert isinstance(err, Error) and err.type == "undecided" and suite.failures == 0
    text = render(res, tmp_path)
    assert "<-- forbidden" not in text and "(undecided: no drain)" in text
