"""What the benchmarks read of other processes from Linux's /proc.

Three benchmarks account for processes they did not start directly (the Spark driver
JVM is a grandchild that Python does not wait for, so getrusage misses it). This
module owns the parsing of /proc's files; each reader returns None for a process that
is gone, since any process may exit between listing /proc and reading it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Stat:
    ppid: int
    cpu_ticks: int  # user + system, in HZ ticks
    nice: int
    start: int  # ticks after boot: with the pid, one process's identity


def pids() -> Iterator[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def stat(pid: int) -> Stat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, field 2, is in parentheses and may hold spaces or ")".
    f = raw[raw.rfind(")") + 2 :].split()
    return Stat(
        ppid=int(f[1]), cpu_ticks=int(f[11]) + int(f[12]), nice=int(f[16]), start=int(f[19])
    )


def cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # Arguments end in NUL, but a process that rewrites its title may drop the last.
    return raw.rstrip(b"\0").decode(errors="replace").split("\0") if raw else []


def comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def status_kb(pid: int, *keys: str) -> dict[str, int]:
    """The named memory lines of /proc/PID/status (e.g. VmRSS, VmHWM), in kB; empty
    if the process is gone."""
    want = tuple(f"{k}:" for k in keys)
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(want):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out
