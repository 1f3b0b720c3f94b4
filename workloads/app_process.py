"""One instance of a command on trial: a shell command in a process group of its own.

`start_new_session` puts the shell and everything it starts into one group, so a
fault, the final stop and every teardown path reach the whole application, not only
the shell that started it. The instance's stdout and stderr are appended to
RUN_DIR/app/instance-<i>.out and .err across its restarts, each start marked by a
header line.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_trial.cluster.control import LaneControl
from kafka_trial.contracts.client_processes import process_state

# Every instance's environment carries this tag: `kafka-trial cleanup` knows a
# leftover instance (and whatever it started) by it after the harness was SIGKILLed.
MARKER_ENV = "KAFKA_TRIAL_APP"
HEADER = "--- kafka-trial:"


class AppGone(RuntimeError):
    """The instance a fault was to act on is not running: the fault ends `info`."""


_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Z_]+)\}")


def substitute(command: str, values: Mapping[str, str]) -> str:
    """`{NAME}` replaced by the value of each name given; `${NAME}` (the shell's own
    expansion) and any other brace are left as written."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), command)


def _last_line(path: Path, since: int) -> str:
    """The last non-empty line written to `path` after byte `since` (not a header)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(since, size - 4096)
            fh.seek(start)
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(HEADER)]
    return lines[-1][:300] if lines else ""


def _settle(pid: int, want: str | None, wait_s: float = 1.0) -> str | None:
    """The leader's state once a signal has landed (a stop is not instant)."""
    deadline = time.monotonic() + wait_s
    state = process_state(pid)
    while state is not None and (state != want if want else state == "T"):
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)
        state = process_state(pid)
    return state


@dataclass(eq=False)
class ProcessInstance:
    """A started instance (ManagedAppInstance). Its group id is the leader's pid."""

    index: int
    proc: subprocess.Popen[bytes]
    err_path: Path
    err_since: int  # where this start's stderr begins in the shared .err file
    lane: int
    lanes: LaneControl | None = None  # the cluster's, to cut this instance's lane
    _ended_by: str | None = None
    _closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def describe(self) -> dict[str, Any]:
        return {"instance": self.index, "pid": self.pid}

    def running(self) -> bool:
        return self.proc.poll() is None

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def ended_by(self) -> str | None:
        return self._ended_by

    def stderr_tail(self) -> str:
        return _last_line(self.err_path, self.err_since)

    def _signal(self, sig: signal.Signals) -> str | None:
        """Signal the whole group; the leader's state before. Raises AppGone when the
        instance is not running."""
        state = process_state(self.pid)
        if not self.running() or state in (None, "Z"):
            raise AppGone(f"app instance {self.index} (pid {self.pid}) is not running")
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            raise AppGone(f"app instance {self.index} (pid {self.pid}) is gone") from None
        return state

    def kill(self, by: str) -> dict[str, Any]:
        with self._lock:
            self._ended_by = by
            try:
                state = self._signal(signal.SIGKILL)
            except AppGone:
                self._ended_by = None  # it ended by itself before the fault came
                raise
        return {**self.describe(), "state": state, "killed": True}

    def terminate(self, by: str) -> dict[str, Any]:
        with self._lock:
            self._ended_by = by
            try:
                state = self._signal(signal.SIGTERM)
            except AppGone:
                self._ended_by = None
                raise
            # A frozen group would hold SIGTERM until it is resumed: a graceful stop
            # has to reach it now (docker stop does the same to a paused container).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGCONT)
        return {**self.describe(), "state": state, "terminated": True}

    def pause(self) -> dict[str, Any]:
        self._signal(signal.SIGSTOP)
        return {**self.describe(), "state": _settle(self.pid, "T")}

    def resume(self) -> dict[str, Any]:
        # A heal must not fail because the instance died meanwhile: nothing to resume.
        try:
            os.killpg(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            return {**self.describe(), "state": None}
        return {**self.describe(), "state": _settle(self.pid, None)}

    def cut(self) -> dict[str, Any]:
        """Its client lane cut off every broker. Lanes are taken modulo the cluster's,
        so the cut also reaches any client sharing the lane (`lane` says which)."""
        if self.lanes is None:
            raise AppGone(f"app instance {self.index} has no client lane this run can cut")
        if not self.running():
            raise AppGone(f"app instance {self.index} (pid {self.pid}) is not running")
        return {**self.describe(), **self.lanes.cut_lane(self.lane)}

    def uncut(self) -> dict[str, Any]:
        if self.lanes is None:
            return self.describe()
        return {**self.describe(), **self.lanes.restore_lane(self.lane)}

    def close(self) -> None:
        """SIGKILL to the group (whatever is left of it) and reap the leader."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._ended_by is None and self.running():
                self._ended_by = "harness"
            # SIGCONT is not needed: SIGKILL ends a stopped process too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)


@dataclass(frozen=True)
class AppLogs:
    out: Path
    err: Path


def start_process(
    index: int,
    command: str,
    env: Mapping[str, str],
    logs: AppLogs,
    lane: int,
    lanes: LaneControl | None = None,
) -> ProcessInstance:
    """Start one instance; raises OSError when the shell itself cannot start."""
    logs.out.parent.mkdir(parents=True, exist_ok=True)
    header = f"{HEADER} instance {index} starting at {time.strftime('%H:%M:%S')}: {command}\n"
    with logs.out.open("ab") as out, logs.err.open("ab") as err:
        out.write(header.encode())
        err.write(header.encode())
        out.flush()
        err.flush()
        since = err.tell()
        proc = subprocess.Popen(
            command,
            shell=True,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env={**os.environ, **env},
        )
    return ProcessInstance(index, proc, logs.err, since, lane, lanes)
