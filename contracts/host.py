"""Installing what the host lacks, on a root Debian machine: shared by the cluster
(Docker engine, debootstrap, Maven) and the analysis (a Java runtime)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log


def can_self_install() -> bool:
    return (
        os.geteuid() == 0
        and Path("/etc/debian_version").exists()
        and "DOCKER_HOST" not in os.environ
    )


def apt_install(*packages: str) -> None:
    log(f"installing Debian packages: {' '.join(packages)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
    res = subprocess.run(
        ["apt-get", "install", "-y", "-qq", *packages], env=env, capture_output=True, text=True
    )
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TrialError(
            f"apt-get install {' '.join(packages)} failed: {tail[0]}",
            "check that Debian's package mirror is reachable, then rerun",
        )
