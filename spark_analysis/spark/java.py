"""PySpark 4 needs a Java 17+ runtime on the host that runs the analysis."""

from __future__ import annotations

import shutil
import subprocess

from kafka_trial.cluster.host import apt_install, can_self_install
from kafka_trial.contracts.errors import TrialError


def java_major(version_output: str) -> int:
    """The major version in `java -version`'s output, 0 if none. The version line is
    not always the first: a JVM started with JAVA_TOOL_OPTIONS or _JAVA_OPTIONS set
    prints "Picked up ..." before it."""
    for line in version_output.splitlines():
        if ' version "' in line:
            major = line.split('"')[1].split(".")[0]
            return int(major) if major.isdigit() else 0
    return 0


def ensure_java() -> None:
    java = shutil.which("java")
    if java is not None:
        out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        if java_major(out) >= 17:
            return
    if can_self_install():
        apt_install("openjdk-17-jre-headless")
        return
    raise TrialError(
        "PySpark needs a Java 17+ runtime and none is on PATH",
        "install a JRE 17 or newer (e.g. apt-get install openjdk-17-jre-headless)",
    )
