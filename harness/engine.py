"""Find a Docker engine, or on a root Debian machine install and start one."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from docker.errors import DockerException

import docker
from harness.errors import TrialError
from harness.log import log

DOCKERD_LOG = Path("/var/log/kafka-trial-dockerd.log")


def _client() -> docker.DockerClient | None:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except (DockerException, OSError):
        return None


def _can_self_install() -> bool:
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
    if not _can_self_install():
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


def ensure_java() -> None:
    """PySpark 4 needs Java 17+ on the host running the analysis."""
    java = shutil.which("java")
    if java is not None:
        out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        first = out.splitlines()[0] if out else ""
        ver = first.split('"')[1] if '"' in first else "0"
        major = int(ver.split(".")[0]) if ver.split(".")[0].isdigit() else 0
        if major >= 17:
            return
    if _can_self_install():
        apt_install("openjdk-17-jre-headless")
        return
    raise TrialError(
        "PySpark needs a Java 17+ runtime and none is on PATH",
        "install a JRE 17 or newer (e.g. apt-get install openjdk-17-jre-headless)",
    )
