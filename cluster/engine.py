"""Find a Docker engine, or on a root Debian machine install and start one."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from docker.errors import DockerException
from kafka_trial.cluster.host import apt_install, can_self_install
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log

import docker

DOCKERD_LOG = Path("/var/log/kafka-trial-dockerd.log")


def _client() -> docker.DockerClient | None:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except (DockerException, OSError):
        return None


def _start_dockerd(driver: str) -> subprocess.Popen[bytes]:
    DOCKERD_LOG.parent.mkdir(parents=True, exist_ok=True)
    fh = DOCKERD_LOG.open("ab")
    # A new session so the engine outlives this process and Ctrl-C does not reach it.
    return subprocess.Popen(
        ["dockerd", "--storage-driver", driver],
        stdout=fh,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def ensure_engine(wait_s: float = 60.0) -> docker.DockerClient:
    client = _client()
    if client is not None:
        return client
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not can_self_install():
        raise TrialError(
            f"no Docker engine answers at {where}",
            "start dockerd (or Docker Desktop) or point DOCKER_HOST at a running engine",
        )
    if shutil.which("dockerd") is None:
        apt_install("docker.io")
    for driver in ("overlay2", "vfs"):
        log(f"starting dockerd with the {driver} storage driver (log: {DOCKERD_LOG})")
        proc = _start_dockerd(driver)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and proc.poll() is None:
            client = _client()
            if client is not None:
                return client
            time.sleep(0.5)
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
    raise TrialError(
        f"dockerd did not come up with overlay2 or vfs (see {DOCKERD_LOG})",
        "read that log, fix the engine, and rerun",
    )
