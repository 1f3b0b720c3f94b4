"""A node's broker process over SSH: found with pgrep, signalled with kill, started and
stopped as the inventory says. Every verb reads back what it did from the node's
kernel (the process gone, its state T, a new pid) and raises when it did not take
effect, so the fault that called it completes `info`."""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass
from typing import Any

from kafka_trial.cluster.inventory import Node
from kafka_trial.cluster.ssh import Remote, RemoteError

# How long a broker may take to be seen gone after SIGKILL (the kernel ends it at
# once; the pid lingers only while its parent reaps it), or after a stop command.
GONE_S = 10.0
STOP_S = 45.0
# How long a start command may take to show a JVM.
START_S = 30.0
# Where KRaft keeps the quorum's view of its leader, under the metadata directory.
QUORUM_STATE = "__cluster_metadata-0/quorum-state"
# The broker jar, named for the Scala and Kafka versions: kafka_2.13-4.1.1.jar.
_KAFKA_JAR = re.compile(r"kafka_2\.\d+-(\d+\.\d+\.\d+)\.jar")


@dataclass
class SshNode:
    node: Node
    remote: Remote

    @property
    def id(self) -> int:
        return self.node.node_id

    def pids(self) -> list[int]:
        a = self.remote.run(f"pgrep -f {shlex.quote(self.node.pgrep)}", 15)
        return [int(x) for x in a.out.split() if x.isdigit()]

    def pid(self) -> int | None:
        found = self.pids()
        return min(found) if found else None

    def state(self, pid: int) -> str | None:
        """The kernel's one-letter state of `pid` (R, S, T...), None if it is gone."""
        a = self.remote.run(f"sed -n 's/^State:\\s*//p' /proc/{pid}/status", 15)
        return a.out.strip()[:1] or None

    def _wait(self, cond: Any, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if cond():
                return True
            time.sleep(0.3)
        return bool(cond())

    def kill(self) -> dict[str, Any]:
        pid = self._running_pid("kill")
        self.remote.check(f"kill -KILL {pid}")
        if not self._wait(lambda: pid not in self.pids(), GONE_S):
            raise RemoteError(
                f"{self.node.label}: pid {pid} still there {GONE_S:g} s after SIGKILL"
            )
        return {"pid": pid, "signal": "KILL", "gone": True}

    def stop(self) -> dict[str, Any]:
        pid = self._running_pid("stop")
        self.remote.check(self.node.stop_command(), STOP_S + 15)
        if not self._wait(lambda: not self.pids(), STOP_S):
            raise RemoteError(f"{self.node.label}: the broker still runs after its stop command")
        return {"pid": pid, "stopped": True}

    def start(self) -> dict[str, Any]:
        """Start the broker unless it runs; resume it if it is stopped (SIGSTOP), as a
        heal must leave it running whatever fault came before."""
        pid = self.pid()
        if pid is not None:
            if self.state(pid) == "T":
                self.remote.check(f"kill -CONT {pid}")
                return {"pid": pid, "resumed": True}
            return {"pid": pid, "already": True}
        self.remote.check(self.node.start_command(), START_S)
        if not self._wait(lambda: self.pid() is not None, START_S):
            raise RemoteError(f"{self.node.label}: no broker process {START_S:g} s after start")
        return {"pid": self.pid(), "started": True}

    def pause(self) -> dict[str, Any]:
        pid = self._running_pid("pause")
        self.remote.check(f"kill -STOP {pid}")
        ok = self._wait(lambda: self.state(pid) == "T", 2.0)
        st = self.state(pid)
        if not ok:
            self.remote.run(f"kill -CONT {pid}")
            raise RemoteError(f"{self.node.label}: pid {pid} did not stop (state {st})")
        return {"pid": pid, "signal": "STOP", "state": st}

    def resume(self) -> dict[str, Any]:
        pid = self.pid()
        if pid is None:
            return self.start()
        self.remote.check(f"kill -CONT {pid}")
        if not self._wait(lambda: self.state(pid) not in ("T", None), 2.0):
            raise RemoteError(f"{self.node.label}: pid {pid} still stopped after SIGCONT")
        return {"pid": pid, "signal": "CONT", "state": self.state(pid)}

    def _running_pid(self, verb: str) -> int:
        pid = self.pid()
        if pid is None:
            raise RemoteError(f"{self.node.label}: no broker process to {verb}")
        return pid

    def kafka_version(self) -> str | None:
        """The broker's version, from the kafka jar on its JVM's class path."""
        pid = self.pid()
        if pid is None:
            return None
        cmdline = self.remote.run(f"tr '\\0' ' ' < /proc/{pid}/cmdline", 10).out
        found = _KAFKA_JAR.search(cmdline)
        if found:
            return found[1]
        dirs = {w[:-2] for w in re.split(r"[\s:]", cmdline) if w.endswith("/*")}
        for d in sorted(dirs):
            listing = self.remote.run(f"ls {shlex.quote(d)}", 10).out
            found = _KAFKA_JAR.search(listing)
            if found:
                return found[1]
        return None

    def quorum_state(self) -> str | None:
        path = f"{self.node.metadata_dir or self.node.data_dirs[0]}/{QUORUM_STATE}"
        try:
            a = self.remote.run(f"cat {shlex.quote(path)}", 10)
        except RemoteError:
            return None
        return a.out if a.ok else None

    # --- disk ----------------------------------------------------------------------

    def _fill_path(self) -> str:
        return f"{self.node.data_dirs[0].rstrip('/')}/.kafka-trial-fill"

    def fill_disk(self) -> dict[str, Any]:
        """fallocate what the data directory's filesystem has free, less a little, so
        the broker's next writes find no space."""
        d = shlex.quote(self.node.data_dirs[0])
        avail = int(self.remote.check(f"df -B1 --output=avail {d} | tail -1").strip())
        size = max(avail - 64 * 1024, 0)
        path = shlex.quote(self._fill_path())
        self.remote.check(f"fallocate -l {size} {path}")
        left = int(self.remote.check(f"df -B1 --output=avail {d} | tail -1").strip())
        if left > 1024 * 1024:
            self.remote.run(f"rm -f {path}")
            raise RemoteError(f"{self.node.label}: {left} bytes still free after fallocate")
        return {"filled_bytes": size, "free_bytes": left}

    def free_disk(self) -> dict[str, Any]:
        self.remote.check(f"rm -f {shlex.quote(self._fill_path())}")
        halted = self.pid() is None
        if halted:
            self.start()
        return {"halted": halted}
