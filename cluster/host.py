"""Installing what the host lacks, on a root Debian machine: shared by the cluster
(Docker engine, debootstrap, Maven) and the analysis (a Java runtime)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log

CACHE = Path(os.environ.get("KAFKA_TRIAL_CACHE", Path.home() / ".cache" / "kafka-trial"))


@contextlib.contextmanager
def host_lock(name: str, doing: str) -> Iterator[None]:
    """One kafka-trial process at a time does `doing` on this machine (building the
    image and jar caches, running apt); another one waits and says for whom."""
    locks = CACHE / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 300, 0).decode(errors="replace").strip() or "unknown"
            log(f"waiting for another kafka-trial process ({holder}) to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, {doing}".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def can_self_install() -> bool:
    return (
        os.geteuid() == 0
        and Path("/etc/debian_version").exists()
        and "DOCKER_HOST" not in os.environ
    )


def apt_install(*packages: str) -> None:
    with host_lock("apt", f"installing {' '.join(packages)} with apt-get"):
        _apt_install(packages)


def _apt_install(packages: tuple[str, ...]) -> None:
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
