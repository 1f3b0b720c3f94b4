"""Where a command's CPU goes: every process on the machine, by kind, while it runs.

    python bench/suite_cpu.py [--out cpu.json] -- bash .ci/run

Every 2 s it reads each process's CPU time from /proc and adds what it used since
the last look to its kind: the Kafka brokers' JVMs (in their containers), the
storage tool's JVM a broker start runs, Spark's driver JVMs (split by nice level:
the test suite's unit worker runs at nice 5, the cluster tests at 0), the Python of
the harness and its clients, the xdist workers, Docker, Toxiproxy and kt-lazyfs. A
process that lives less than 2 s between looks is missed, one that ends loses at
most its last 2 s: the total is a lower bound, and the shares are what to compare.
It prints the table when the command ends (and writes it to --out as it goes).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import procfs


def kind(cmdline: str, nice: int) -> str:
    """The kind of process a command line is."""
    if not cmdline:
        return "kernel"
    exe = cmdline.split(" ")[0]
    niced = f" (nice {nice})" if nice else ""
    if exe.endswith("java"):
        if "kafka.Kafka " in cmdline:
            return "kafka broker JVM"
        if "kafka.tools.StorageTool" in cmdline:
            return "kafka storage tool JVM"
        if "spark" in cmdline:
            return "spark driver JVM" + niced
        return "other JVM"
    if "python" in exe:
        if "execnet" in cmdline or " -u -c " in f" {cmdline} ":
            return "pytest-xdist worker" + niced
        if "pyspark.daemon" in cmdline:
            return "pyspark python workers" + niced
        return "python: harness, clients, subprocesses" + niced
    if any(x in cmdline for x in ("dockerd", "containerd", "docker-proxy", "runc")):
        return "docker"
    if "toxiproxy" in cmdline:
        return "toxiproxy"
    if "kt-lazyfs" in cmdline:
        return "kt-lazyfs"
    return "other"


def sample(
    cmd: list[str], out: Path | None, every_s: float = 2.0
) -> tuple[float, dict[str, float], int]:
    """Run `cmd` and account the machine's CPU by kind until it ends; its exit code."""
    seen: dict[int, tuple[int, int]] = {}
    ticks: collections.Counter[str] = collections.Counter()
    t0 = time.monotonic()
    first = True
    child = subprocess.Popen(cmd)
    while True:
        alive = set()
        for pid in procfs.pids():
            st, args = procfs.stat(pid), procfs.cmdline(pid)
            if st is None or args is None:
                continue
            start, cpu, nice = st.start, st.cpu_ticks, st.nice
            cmdline = " ".join(args).strip()
            alive.add(pid)
            # Re-read each time: a launcher script becomes the JVM it execs.
            k = kind(cmdline, nice)
            prev = seen.get(pid)
            if prev is not None and prev[0] == start:
                ticks[k] += cpu - prev[1]
            elif not first:
                ticks[k] += cpu  # born since the last look
            seen[pid] = (start, cpu)
        for pid in set(seen) - alive:
            del seen[pid]
        first = False
        result = {k: round(v / procfs.HZ, 1) for k, v in ticks.most_common()}
        if out is not None:
            out.write_text(json.dumps({"elapsed_s": time.monotonic() - t0, "cpu_s": result}))
        if child.poll() is not None:
            return time.monotonic() - t0, result, child.returncode
        time.sleep(every_s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the running totals here as JSON")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command to run")
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("give the command to run after --, e.g. -- bash .ci/run")
    wall, cpu, code = sample(cmd, a.out)
    total = sum(cpu.values())
    cores = total / wall
    print(f"\n{wall:.0f} s wall, {total:.0f} CPU-seconds seen ({cores:.2f} cores on average)")
    for k, v in cpu.items():
        if v >= 1:
            print(f"{v:9.1f}  {100 * v / total:5.1f}%  {k}")
    # The command's own verdict: a wrapped test suite that failed must fail here too.
    if code:
        print(f"the command exited {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
