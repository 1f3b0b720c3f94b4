"""The CI examples: the GitHub Actions workflow passes actionlint (built from its Go
module, as users would get it), which is first shown to catch a broken workflow;
the GitLab job is well-formed and publishes the JUnit verdicts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"
ACTIONLINT = "v1.7.12"
TOOLS = Path.home() / ".cache" / "kafka-trial" / "tools"


@pytest.fixture(scope="module")
def actionlint() -> str:
    exe = TOOLS / f"actionlint-{ACTIONLINT}"
    if not exe.exists():
        go = shutil.which("go") or "/usr/local/go/bin/go"
        assert Path(go).exists(), "Go is needed to build actionlint (and Toxiproxy)"
        gobin = TOOLS / f"build-{os.getpid()}"
        env = dict(os.environ, CGO_ENABLED="0", GOBIN=str(gobin), GOFLAGS="-mod=mod")
        subprocess.run(
            [go, "install", f"github.com/rhysd/actionlint/cmd/actionlint@{ACTIONLINT}"],
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
        os.replace(gobin / "actionlint", exe)
        shutil.rmtree(gobin, ignore_errors=True)
    return str(exe)


def _lint(actionlint: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint, "-no-color", str(path)], capture_output=True, text=True, timeout=120
    )


def test_actionlint_catches_a_broken_workflow(actionlint: str, tmp_path: Path) -> None:
    broken = (EXAMPLES / "github-actions.yml").read_text()
    broken = broken.replace("steps.campaign.outputs.worst }}", "steps.campaign.outputs.worst }")
    broken = broken.replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest")
    path = tmp_path / "broken.yml"
    path.write_text(broken)
    res = _lint(actionlint, path)
    assert res.returncode != 0
    assert "runs-on" in res.stdout, res.stdout


def test_the_github_actions_example_passes_actionlint(actionlint: str) -> None:
    res = _lint(actionlint, EXAMPLES / "github-actions.yml")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_github_actions_example_gates_on_the_verdicts() -> None:
    wf = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    steps = wf["jobs"]["campaign"]["steps"]
    run = next(s["run"] for s in steps if s.get("id") == "campaign")
    assert "--junitxml" in run and "kafka-trial run" in run
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert any(u.startswith("mikepenz/action-junit-report@") for u in uses)
    assert steps[-1]["run"].startswith("exit ")


def test_the_gitlab_example_publishes_junit_and_fails_on_the_verdict() -> None:
    ci = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    job = ci["kafka-trial"]
    assert job["stage"] in ci["stages"]
    assert job["artifacts"]["reports"]["junit"] == "junit/*.xml"
    assert job["artifacts"]["when"] == "always"
    script = "\n".join(job["script"])
    assert "--junitxml" in script and script.rstrip().endswith('exit "$worst"')
