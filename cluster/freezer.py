"""Unpausing a broker when the engine cannot: through the kernel's freezer.

A `docker unpause` of a paused broker has been seen to hang, its cgroup v1 freezer
left FROZEN and every later call on the container timing out; writing THAWED to the
freezer file let the engine's unpause return at once (docs/findings.md, "A docker
unpause that never returned"). A heal that waits on the engine alone can wait
forever, so it waits a bounded time and then thaws the cgroup itself, and says so.
"""

from __future__ import annotations

import threading
from pathlib import Path

from docker.models.containers import Container
from kafka_trial.contracts.log import log

CGROUP_ROOT = Path("/sys/fs/cgroup")
# How long the engine's unpause gets before the freezer is thawed directly: the
# engine unpauses in well under a second, even on a loaded machine.
UNPAUSE_WAIT_S = 20.0
# After a thaw, the engine's own call normally returns at once; the client's timeout
# bounds it in any case.
AFTER_THAW_WAIT_S = 30.0

# Files under the cgroup root: cgroup v1 and v2, with Docker's cgroupfs and systemd
# drivers.
_FREEZE_FILES = (
    "freezer/docker/{id}/freezer.state",
    "freezer/system.slice/docker-{id}.scope/freezer.state",
    "docker/{id}/cgroup.freeze",
    "system.slice/docker-{id}.scope/cgroup.freeze",
)
# What each kind of file takes: (frozen, thawed).
_STATES = {"freezer.state": ("FROZEN", "THAWED"), "cgroup.freeze": ("1", "0")}


def freeze_file(container_id: str, root: Path = CGROUP_ROOT) -> Path | None:
    """The container's freezer file on this machine, or None: an engine on another
    machine (DOCKER_HOST), or a layout not above."""
    for rel in _FREEZE_FILES:
        path = root / rel.format(id=container_id)
        if path.is_file():
            return path
    return None


def thaw(container_id: str, root: Path = CGROUP_ROOT) -> Path | None:
    """Thaw the container's cgroup; the file written, or None if there is none here."""
    path = freeze_file(container_id, root)
    if path is None:
        return None
    path.write_text(_STATES[path.name][1])
    return path


class _EngineUnpause:
    """The engine's unpause on a thread of its own, so that a hung engine holds up
    only that thread."""

    def __init__(self, container: Container) -> None:
        self.error: BaseException | None = None
        self._container = container
        self._thread = threading.Thread(
            target=self._call, name=f"unpause-{container.short_id}", daemon=True
        )
        self._thread.start()

    def _call(self) -> None:
        try:
            self._container.unpause()
        except BaseException as e:  # reported to the caller's thread by `wait`
            self.error = e

    def wait(self, timeout_s: float | None) -> bool:
        """Whether the call returned within `timeout_s`."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def unpause(container: Container, wait_s: float = UNPAUSE_WAIT_S) -> str | None:
    """Unpause through the engine, bounded. None if the engine did it in `wait_s`;
    otherwise the freezer file this thawed. The engine's own error is raised when it
    failed and there was nothing to thaw, or when it refused (not paused, gone)."""
    first = _EngineUnpause(container)
    path = None if first.wait(wait_s) else thaw(container.id)
    if path is None:
        first.wait(None)  # nothing to thaw here: the engine client's timeout bounds it
        if first.error is not None:
            raise first.error
        return None
    log(
        f"the engine did not unpause {container.name} in {wait_s:.0f}s: thawed its cgroup "
        f"through {path}"
    )
    # A hung runtime's resume returns once the cgroup thaws. A slow one may look only
    # after the thaw, refuse ("container not paused"), and leave the engine holding
    # the container as paused, so that every later unpause fails the same way. Then
    # the cgroup is frozen again, for an instant, for the engine to thaw itself.
    first.wait(AFTER_THAW_WAIT_S)
    container.reload()
    if container.status == "paused":
        path.write_text(_STATES[path.name][0])
        again = _EngineUnpause(container)
        if not again.wait(AFTER_THAW_WAIT_S) or again.error is not None:
            thaw(container.id)  # running, whatever the engine says
    return str(path)
