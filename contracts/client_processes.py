"""The OS processes that run a run's clients in processes of their own, so that a fault
can freeze one as a long GC pause or a descheduled VM would (Jepsen's process pauses).

Workloads register a client process when they start it; the nemesis pauses and
resumes them by pid and reads back the kernel's state of each, so a pause records
what it verifiably did. One registry per Python process: a campaign runs its runs one
after another, and a run unregisters its clients as they end.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ClientProcess:
    name: str  # e.g. "producer kt-1a2b-0": the transactional.id it runs
    pid: int
    # What the client is doing right now (the call it is in), None between calls.
    doing: Callable[[], str | None] = lambda: None


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of a process (R, S, T stopped, Z...), None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: the state follows it.
    return stat[stat.rindex(")") + 2 :].split(" ", 1)[0]


class ClientProcesses:
    def __init__(self) -> None:
        self._live: dict[int, ClientProcess] = {}
        self._paused: set[int] = set()
        self._lock = threading.Lock()

    def register(self, name: str, pid: int, doing: Callable[[], str | None] = lambda: None) -> None:
        with self._lock:
            self._live[pid] = ClientProcess(name, pid, doing)

    def unregister(self, pid: int) -> None:
        with self._lock:
            self._live.pop(pid, None)
            self._paused.discard(pid)

    def live(self) -> list[ClientProcess]:
        with self._lock:
            return sorted(self._live.values(), key=lambda c: c.name)

    def pause(self, pid: int) -> str | None:
        """SIGSTOP; the state the kernel then reports (T when stopped), None if gone."""
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return None
        with self._lock:
            self._paused.add(pid)
        return _settled_state(pid, "T")

    def resume(self, pid: int) -> str | None:
        """SIGCONT; the state the kernel then reports, None if gone."""
        with self._lock:
            self._paused.discard(pid)
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            return None
        return _settled_state(pid, None)

    def resume_all(self) -> list[int]:
        """Resume every client a pause left stopped (the heal-all of clients)."""
        with self._lock:
            paused = sorted(self._paused)
        for pid in paused:
            self.resume(pid)
        return paused


def _settled_state(pid: int, want: str | None, tries: int = 50) -> str | None:
    """The state once a signal has been delivered: stopping is not instant."""
    state = process_state(pid)
    for _ in range(tries):
        if state is None or (state == want if want else state != "T"):
            break
        threading.Event().wait(0.01)
        state = process_state(pid)
    return state


CLIENTS = ClientProcesses()
