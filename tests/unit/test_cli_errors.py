"""Bad input: one line naming the problem and the fix, a non-zero exit, nothing lost."""

from __future__ import annotations

from pathlib import Path

from tests.cli import kt
from tests.rundirs import run_dirs


def test_bad_flag_value(tmp_path: Path) -> None:
    r = kt("run", "--acks", "2", "--runs-dir", str(tmp_path))
    assert r.returncode == 3
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "producer.acks" in lines[0] and "fix:" in lines[0]
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def test_missing_docker_engine(tmp_path: Path) -> None:
    r = kt(
        "run",
        "--runs-dir",
        str(tmp_path),
        "--duration",
        "5",
        "--nemesis",
        "none",
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    assert r.returncode == 3
    last = r.stderr.strip().splitlines()[-1]
    assert "no Docker engine answers at unix:///nonexistent/docker.sock" in last
    assert "fix:" in last
    # The run directory keeps the spec, so the failed attempt is on record.
    (run_dir,) = run_dirs(tmp_path)
    assert (run_dir / "spec.json").exists()


def test_analyze_of_a_missing_run(tmp_path: Path) -> None:
    r = kt("analyze", str(tmp_path / "nope"))
    assert r.returncode == 3
    assert "nope not found -- fix: pass a run directory" in r.stderr


def test_usage_error_exit_code(tmp_path: Path) -> None:
    r = kt("run", "--no-such-flag")
    assert r.returncode == 3
