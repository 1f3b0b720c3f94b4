"""PySpark 4 needs a Java 17+ runtime on the host that runs the analysis."""

from __future__ import annotations

import shutil
import subprocess

from kafka_trial.cluster.host import apt_install, can_self_install
from kafka_trial.contracts.errors import TrialError


def ensure_java() -> None:
    java = shutil.which("java")
    if java is not None:
        out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        first = out.splitlines()[0] if out else ""
        ver = first.split('"')[1] if '"' in first else "0"
        major = int(ver.split(".")[0]) if ver.split(".")[0].isdigit() else 0
        if major >= 17:
            return
    if can_self_install():
        apt_install("openjdk-17-jre-headless")
        return
    raise TrialError(
        "PySpark needs a Java 17+ runtime and none is on PATH",
        "install a JRE 17 or newer (e.g. apt-get install openjdk-17-jre-headless)",
    )
