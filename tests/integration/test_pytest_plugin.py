"""The pytest plugin, as a user meets it: examples/pytest is a small project whose
consumer commits before processing. Run by pytest in a subprocess, its unsafe test
fails for the right reason (group-missed, with witnesses and the report's path) and
its safe twin passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from junitparser import Failure, JUnitXml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytest"


def test_the_plugin_example_fails_the_unsafe_consumer_for_the_right_reason(
    tmp_path: Path, images
) -> None:
    junit = tmp_path / "example.xml"
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            f"--junitxml={junit}", f"--basetemp={tmp_path / 'basetemp'}",
        ],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]  # one test failed
    cases = {c.name: c for suite in JUnitXml.fromfile(str(junit)) for c in suite}
    assert cases["test_commit_after_processing_loses_no_order"].is_passed, out[-4000:]
    (fail,) = cases["test_commit_before_processing_loses_no_order"].result
    assert isinstance(fail, Failure)
    text = (fail.message or "") + (fail.text or "")
    assert "kafka-trial verdict INVALID" in text and "group-missed" in text, text[-3000:]
    assert "kafka-trial/report.html" in text  # where the kept run directory is
