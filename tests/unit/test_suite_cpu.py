"""bench/suite_cpu.py wraps a command (the test suite, in CI's form): its accounting
must not hide the command's verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE_CPU = Path(__file__).resolve().parents[2] / "bench" / "suite_cpu.py"


def _wrapped(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SUITE_CPU), "--", *cmd], capture_output=True, text=True, timeout=60
    )


def test_a_failing_command_fails_the_wrapper_with_its_code() -> None:
    r = _wrapped("bash", "-c", "exit 3")
    assert r.returncode == 3 and "the command exited 3" in r.stdout


def test_twin_a_passing_command_passes() -> None:
    r = _wrapped("true")
    assert r.returncode == 0 and "CPU-seconds seen" in r.stdout
