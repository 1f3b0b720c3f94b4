"""The analysis job: RUN_DIR/history.jsonl -> RUN_DIR/results.json.

Runs in-process with an embedded Spark (local[*]) or against a spark:// master;
`python -m spark_analysis.job RUN_DIR [MASTER]` runs it on its own as well.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from checkers.verdict import decide
from harness.errors import TrialError
from harness.spec import ANOMALY_TYPES, read_saved_spec
from spark_analysis.history_frames import load
from spark_analysis.queue_checks import run_checks, stats
from spark_analysis.session import spark_session


def last_line_state(path: Path) -> str:
    """'ok', 'empty', or 'cut' when the final line was cut off mid-write."""
    size = path.stat().st_size
    if size == 0:
        return "empty"
    with path.open("rb") as fh:
        fh.seek(max(0, size - 65536))
        tail = fh.read()
    if not tail.endswith(b"\n"):
        return "cut"
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        json.loads(last)
    except json.JSONDecodeError:
        return "cut"
    return "ok"


def analyze(run_dir: Path, spark_master: str | None = None) -> dict[str, Any]:
    t0 = time.monotonic()
    spec = read_saved_spec(run_dir)
    path = (run_dir / "history.jsonl").resolve()
    if not path.is_file():
        raise TrialError(f"{path} not found", "run `kafka-trial run` first, or fix RUN_DIR")
    tail = last_line_state(path)
    master = spark_master or spec.check.spark_master
    spark = spark_session(master)
    t_session = time.monotonic() - t0
    fr = load(spark, path.as_uri())
    problems: list[str] = []
    tolerated = 1 if tail == "cut" else 0
    if fr.damaged > tolerated:
        problems.append(
            f"{fr.damaged - tolerated} damaged line(s) inside the history; "
            "results cover only the lines that parse"
        )
    anomalies = run_checks(fr)
    st = stats(fr)
    verdict = decide(anomalies, spec.check.allowed, problems)
    results: dict[str, Any] = {
        "valid": verdict.pop("valid"),
        "anomalies": {name: anomalies[name] for name in ANOMALY_TYPES},
        **verdict,
        "allowed": list(spec.check.allowed),
        "stats": st,
        "history": {
            "path": str(path),
            "last_line": tail,
            "damaged_lines": fr.damaged,
            "open_invokes": fr.open_invokes,
        },
        "analysis": {
            "spark_master": master,
            "session_s": round(t_session, 3),
            "total_s": round(time.monotonic() - t0, 3),
        },
    }
    tmp = run_dir / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, default=str))
    os.replace(tmp, run_dir / "results.json")
    return results


if __name__ == "__main__":
    res = analyze(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps({"valid": res["valid"]}))
