"""The kafka-trial command in a child process, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Lines the JVM writes to stderr that a kafka-trial command must not pass on.
JVM_NOISE = ("WARNING: Using incubator", "Setting default log level", "setLogLevel", " WARN ")


def kt(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_trial", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=600,
    )
