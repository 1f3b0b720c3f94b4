"""Benchmark: how long `analyze` takes on a synthetic history of a given size.

    python bench/analysis_bench.py --ops 400000 [--spark-master local[*]]

Prints the history size, Spark session start, total analysis time and the
driver's peak RSS. The history mimics a real run: send ops of 10 values over
several partitions from several processes, then a drain of every value.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from harness.spec import RunSpec
from spark_analysis.job import analyze


def write_history(path: Path, send_ops: int, batch: int, processes: int, partitions: int) -> int:
    lines = 0
    offsets = [0] * partitions
    records: list[dict] = []
    t = 0
    with path.open("w") as fh:

        def emit(op: dict) -> None:
            nonlocal lines, t
            op["index"] = lines
            op["time"] = t
            t += 1000
            fh.write(json.dumps(op, separators=(",", ":")) + "\n")
            lines += 1

        v = 0
        for i in range(send_ops):
            p = i % processes
            micro = []
            for _ in range(batch):
                part = v % partitions
                micro.append({"op": "send", "topic": "t", "partition": part, "value": v})
                v += 1
            emit({"type": "invoke", "process": p, "f": "send", "value": micro})
            done = []
            for m in micro:
                off = offsets[m["partition"]]
                offsets[m["partition"]] += 1
                done.append({**m, "offset": off, "outcome": "ok"})
                records.append(
                    {"topic": "t", "partition": m["partition"], "offset": off, "value": m["value"]}
                )
            emit({"type": "ok", "process": p, "f": "send", "value": done})
        drain = processes
        for i in range(0, len(records), 1000):
            poll = {"op": "poll", "role": "drain"}
            emit({"type": "invoke", "process": drain, "f": "poll", "value": [poll]})
            emit(
                {
                    "type": "ok",
                    "process": drain,
                    "f": "poll",
                    "value": [{**poll, "records": records[i : i + 1000]}],
                }
            )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=400_000, help="history lines (approximate)")
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--spark-master", default="local[*]")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kt-bench-") as tmp:
        run = Path(tmp)
        (run / "spec.json").write_text(RunSpec().to_json())
        t0 = time.monotonic()
        lines = write_history(run / "history.jsonl", a.ops // 2, a.batch, 8, 6)
        gen_s = time.monotonic() - t0
        size = (run / "history.jsonl").stat().st_size
        res = analyze(run, a.spark_master)
        assert res["valid"] is True, res["forbidden_seen"]
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"history lines        {lines}")
        print(f"history size         {size / 1e6:.1f} MB")
        print(f"values sent          {res['stats']['sends_attempted']}")
        print(f"generate             {gen_s:.1f} s")
        print(f"spark session start  {res['analysis']['session_s']:.1f} s")
        print(f"analysis total       {res['analysis']['total_s']:.1f} s")
        print(f"python driver rss    {rss_mb:.0f} MB (JVM not included)")


if __name__ == "__main__":
    main()
