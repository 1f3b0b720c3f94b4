"""Benchmark: what a warm analysis of a small history costs in planning, with Py4J's
lookups kept per JVM (spark_analysis.spark.jvm_lookups) and without, side by side.

    python bench/planning_bench.py [--lines 200] [--analyses 8] [--pairs 2]

A small history is almost all planning: the checks' plans are built through Py4J,
one round trip per call. Each case runs in a fresh process that starts a session,
judges the history twice to warm up, then --analyses times more. It counts the
round trips to the JVM and measures each analysis's wall time, this process's CPU
and the driver JVM's CPU (from /proc). The cases alternate (kept, not kept, ...)
--pairs times, so that the machine's drift falls on both. The history is the
analysis benchmark's generator (bench/analysis_bench.py) at --lines lines, with its
planted anomalies; both cases must find exactly the planted counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import procfs


def _jvm_cpu_s() -> float:
    """CPU seconds of this process's driver JVM (its child running SparkSubmit)."""
    me = os.getpid()
    ticks = 0
    for pid in procfs.pids():
        st = procfs.stat(pid)
        if (
            st is not None
            and st.ppid == me
            and any("SparkSubmit" in a for a in procfs.cmdline(pid) or [])
        ):
            ticks += st.cpu_ticks
    return ticks / procfs.HZ


def _child(run: Path, analyses: int, keep: bool) -> dict[str, Any]:
    import py4j.clientserver
    from kafka_trial.spark_analysis.job import analyze
    from kafka_trial.spark_analysis.spark import jvm_lookups

    if not keep:
        jvm_lookups._installed = True  # as if installed: Py4J's own lookups stay
    sent = [0]
    real = py4j.clientserver.JavaClient.send_command

    def counted(self: Any, *args: Any, **kw: Any) -> Any:
        sent[0] += 1
        return real(self, *args, **kw)

    py4j.clientserver.JavaClient.send_command = counted  # type: ignore[method-assign]
    out: dict[str, Any] = {"keep": keep, "runs": []}
    for i in range(2 + analyses):
        sent[0] = 0
        wall, cpu, jvm = time.monotonic(), time.process_time(), _jvm_cpu_s()
        res = analyze(run)
        row = {
            "wall_s": time.monotonic() - wall,
            "py_cpu_s": time.process_time() - cpu,
            "jvm_cpu_s": _jvm_cpu_s() - jvm,
            "round_trips": sent[0],
            "counts": {k: a.count for k, a in res.anomalies.items() if a.count},
        }
        if i >= 2:
            out["runs"].append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--analyses", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    from analysis_bench import write_history

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        lines, planted = write_history(run, args.lines)
        expected = planted.expected()
        print(f"history: {lines} lines, planted {expected}", flush=True)
        cases: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
        for _ in range(args.pairs):
            for keep in (True, False):
                cmd = [sys.executable, __file__, "--child", str(run), str(args.analyses)]
                cmd += ["keep" if keep else "ask"]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    print(done.stderr[-3000:], file=sys.stderr)
                    return 1
                res = json.loads(done.stdout.strip().splitlines()[-1])
                cases[keep] += res["runs"]
                print(f"  {'kept' if keep else 'asked'}: {_summary(res['runs'])}", flush=True)
    bad = [
        (keep, r["counts"])
        for keep, runs in cases.items()
        for r in runs
        if any(r["counts"].get(k, 0) != n for k, n in expected.items())
    ]
    kept, asked = _medians(cases[True]), _medians(cases[False])
    print(f"\nmedians over {len(cases[True])} warm analyses each:")
    print(f"{'':24s}{'kept':>10s}{'asked':>10s}{'ratio':>8s}")
    for key in ("round_trips", "wall_s", "py_cpu_s", "jvm_cpu_s"):
        print(f"{key:24s}{kept[key]:10.2f}{asked[key]:10.2f}{kept[key] / asked[key]:8.2f}")
    if bad:
        print(f"MISMATCH: counts differ from the planted ones: {bad[:3]}")
        return 1
    return 0


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        k: statistics.median(r[k] for r in runs)
        for k in ("round_trips", "wall_s", "py_cpu_s", "jvm_cpu_s")
    }


def _summary(runs: list[dict[str, Any]]) -> str:
    m = _medians(runs)
    return ", ".join(f"{k} {v:.2f}" for k, v in m.items())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        result = _child(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "keep")
        print(json.dumps(result))
        sys.exit(0)
    sys.exit(main())
