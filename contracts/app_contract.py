"""The application on trial as the layers below the harness see it: the guarantees an
application can declare, and the registry of its running instances.

The app workload (workloads/app.py) registers each instance it starts; the nemesis's
app faults find them here, act on them and read back what they did, so a fault records
its verifiable effect. One registry per Python process, like `client_processes.CLIENTS`:
a campaign's runs come one after another, and a run unregisters its instances as it
ends.
"""

from __future__ import annotations

import threading
from typing import Any, Literal, Protocol, get_args

Guarantee = Literal["exactly-once", "at-least-once", "at-most-once"]
GUARANTEES: tuple[str, ...] = get_args(Guarantee)


class AppInstance(Protocol):
    """One running copy of the application: a process group on the host, or a
    container. Each action returns what it saw (the kernel's or the engine's state),
    and raises when there is nothing to act on, so the fault ends `info`."""

    index: int

    def describe(self) -> dict[str, Any]:
        """{"instance": i, "pid": N} or {"instance": i, "container": id}."""
        ...

    def running(self) -> bool: ...

    def kill(self, by: str) -> dict[str, Any]:
        """SIGKILL (the whole process group, or the container); `by` names the fault,
        so the instance's exit is recorded as caused by it."""
        ...

    def terminate(self, by: str) -> dict[str, Any]:
        """SIGTERM: a graceful stop."""
        ...

    def pause(self) -> dict[str, Any]: ...

    def resume(self) -> dict[str, Any]: ...

    def cut(self) -> dict[str, Any]:
        """Its links to the brokers cut."""
        ...

    def uncut(self) -> dict[str, Any]: ...


class ManagedAppInstance(AppInstance, Protocol):
    """What the app workload's supervisor needs of an instance besides the faults'
    actions: how it ended, who ended it, and a hard stop for every teardown path. A
    process group (workloads/app_process.py) and a container (cluster/app_containers.py)
    both implement it."""

    def exit_code(self) -> int | None:
        """None while it runs; a process killed by signal N gives -N."""
        ...

    def ended_by(self) -> str | None:
        """Who kill() or terminate() named (a fault, "harness"); None: nobody asked,
        so an exit is the application's own."""
        ...

    def stderr_tail(self) -> str:
        """The last line it wrote to stderr, for the history and error messages."""
        ...

    def close(self) -> None:
        """Kill it for good, whatever its state; idempotent, never raises."""
        ...


class AppInstances:
    def __init__(self) -> None:
        self._live: dict[int, AppInstance] = {}
        self._paused: set[int] = set()
        self._cut: set[int] = set()
        self._lock = threading.Lock()

    def register(self, instance: AppInstance) -> None:
        with self._lock:
            self._live[instance.index] = instance

    def unregister(self, index: int) -> None:
        with self._lock:
            self._live.pop(index, None)
            self._paused.discard(index)
            self._cut.discard(index)

    def live(self) -> list[AppInstance]:
        """The registered instances that are running now, by index."""
        with self._lock:
            found = sorted(self._live.values(), key=lambda a: a.index)
        return [a for a in found if a.running()]

    def pause(self, instance: AppInstance) -> dict[str, Any]:
        seen = instance.pause()
        with self._lock:
            self._paused.add(instance.index)
        return seen

    def resume(self, index: int) -> dict[str, Any] | None:
        with self._lock:
            self._paused.discard(index)
            instance = self._live.get(index)
        return instance.resume() if instance is not None else None

    def cut(self, instance: AppInstance) -> dict[str, Any]:
        seen = instance.cut()
        with self._lock:
            self._cut.add(instance.index)
        return seen

    def uncut(self, index: int) -> dict[str, Any] | None:
        with self._lock:
            self._cut.discard(index)
            instance = self._live.get(index)
        return instance.uncut() if instance is not None else None

    def heal_all(self) -> dict[str, list[int]]:
        """Resume every paused instance and restore every cut one (the heal-all of
        the application): what was healed, by index."""
        with self._lock:
            paused, cut = sorted(self._paused), sorted(self._cut)
        for i in paused:
            self.resume(i)
        for i in cut:
            self.uncut(i)
        return {"resumed": paused, "restored": cut}


APPS = AppInstances()
