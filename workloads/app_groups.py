"""The process groups a run's command instances run in, on disk as they start, so that
`kafka-trial cleanup` can end them after the harness itself was SIGKILLed (no
teardown ran, and the instances would run on, consuming from a cluster that is
about to go).

RUN_DIR/app/instances.json lists every group started (pid = pgid, the command, the
tag in its environment, when it started and ended). A pointer to it under the
kafka-trial cache (`app-runs/`) is how cleanup finds it without knowing the runs
directory; a run that ends normally removes its pointer.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_trial.cluster import host
from kafka_trial.workloads.app_process import MARKER_ENV


def pointers_dir() -> Path:
    # Looked up when called, so that a test (or KAFKA_TRIAL_CACHE) can move it.
    return host.CACHE / "app-runs"


@dataclass
class GroupBook:
    """instances.json of one run, rewritten whole at every change (a few lines)."""

    path: Path
    run_id: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def pointer(self) -> Path:
        return pointers_dir() / f"{self.run_id}-{os.getpid()}.json"

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"owner_pid": os.getpid(), "groups": self.entries}, indent=1))
        os.replace(tmp, self.path)

    def started(self, index: int, pid: int, command: str, marker: str) -> None:
        with self._lock:
            if not self.entries:
                pointers_dir().mkdir(parents=True, exist_ok=True)
                self.pointer.write_text(
                    json.dumps(
                        {
                            "instances": str(self.path.resolve()),
                            "owner_pid": os.getpid(),
                            "host": socket.gethostname(),
                        }
                    )
                )
            self.entries.append(
                {
                    "instance": index,
                    "pgid": pid,
                    "command": command,
                    "marker": marker,
                    "started": round(time.time(), 3),
                    "ended": None,
                }
            )
            self._write()

    def ended(self, pid: int) -> None:
        with self._lock:
            for e in self.entries:
                if e["pgid"] == pid and e["ended"] is None:
                    e["ended"] = round(time.time(), 3)
            self._write()

    def close(self) -> None:
        """The run is over: any group still recorded as running is killed (one an
        interrupt caught between its start and its supervisor), then nothing is left
        for cleanup to find."""
        with self._lock:
            for e in self.entries:
                if e["ended"] is None:
                    kill_group_if_ours(e)
                    e["ended"] = round(time.time(), 3)
            if self.entries:
                with contextlib.suppress(OSError):
                    self._write()
            with contextlib.suppress(OSError):
                self.pointer.unlink()


def _members(pgid: int) -> list[int]:
    """The processes whose process group is `pgid` (from /proc)."""
    out: list[int] = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: the command may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid):
            out.append(int(d.name))
    return out


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _is_ours(pid: int, entry: dict[str, Any]) -> bool:
    """A group id can be reused once its group is gone: only a member that carries the
    run's tag, or whose command line is the recorded command, is the app's."""
    environ = _read(Path(f"/proc/{pid}/environ")).split(b"\0")
    if f"{MARKER_ENV}={entry.get('marker')}".encode() in environ:
        return True
    cmdline = _read(Path(f"/proc/{pid}/cmdline")).replace(b"\0", b" ").decode(errors="replace")
    cmdline, command = cmdline.strip(), str(entry.get("command", "")).strip()
    return bool(cmdline and command) and (command in cmdline or cmdline in command)


def _owner_alive(pointer: dict[str, Any]) -> bool:
    if pointer.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(pointer.get("owner_pid", 0)), 0)
    except (ProcessLookupError, ValueError, OverflowError):
        return False
    except PermissionError:
        return True
    return int(pointer.get("owner_pid", 0)) > 0


def kill_group_if_ours(entry: dict[str, Any]) -> bool:
    """SIGKILL the recorded group if any of its members is still the app's."""
    pgid = int(entry.get("pgid", 0))
    if pgid <= 1 or not any(_is_ours(pid, entry) for pid in _members(pgid)):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
        return True
    return False


def kill_leftover_apps(force: bool = False) -> int:
    """Kill the app process groups of runs whose harness is gone (with `force`, of
    live ones too); the number of groups killed."""
    killed = 0
    d = pointers_dir()
    if not d.is_dir():
        return 0
    for p in sorted(d.glob("*.json")):
        try:
            pointer = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if not force and _owner_alive(pointer):
            continue
        try:
            book = json.loads(Path(pointer["instances"]).read_text())
        except (OSError, ValueError, KeyError, TypeError):
            book = {"groups": []}  # the run directory is gone: so is anything to find
        killed += sum(kill_group_if_ours(e) for e in book.get("groups", []))
        with contextlib.suppress(OSError):
            p.unlink()
    return killed
