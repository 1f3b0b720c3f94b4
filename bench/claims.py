"""Run presets against the claims of shared/CLAIMS.md and print what real Kafka did.

    python bench/claims.py [--duration 30] [PRESET ...]

For each preset: one campaign with its own faults, then the Spark checker. Prints
the non-zero anomaly counts, which of them the preset expected, and the verdict.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from kafka_trial.harness.presets import CLAIMS, PRESETS, preset
from kafka_trial.harness.runner import new_run_dir, run
from kafka_trial.harness.spec import _merge, build_spec
from kafka_trial.spark_analysis.job import analyze


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("presets", nargs="*", default=list(PRESETS))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kt-claims-") as tmp:
        for name in a.presets:
            spec = build_spec(
                _merge(preset(name), {"duration_s": a.duration, "seed": a.seed, "runs_dir": tmp})
            )
            t0 = time.monotonic()
            run_dir = new_run_dir(spec)
            run(spec, run_dir)
            res = analyze(run_dir)
            seen = {k: v["count"] for k, v in res["anomalies"].items() if v["count"]}
            rows.append(
                (
                    name,
                    CLAIMS[name].id if name in CLAIMS else "-",
                    ",".join(spec.nemesis.faults),
                    seen,
                    sorted(spec.check.allowed),
                    res["valid"],
                    time.monotonic() - t0,
                )
            )
    for name, claim, faults, seen, allowed, valid, secs in rows:
        found = ", ".join(f"{k}={v}" for k, v in seen.items()) or "none"
        print(f"{claim:>4} {name:<24} faults={faults:<28} seen: {found}")
        print(f"{'':>4} {'':<24} expected={allowed} verdict={valid} ({secs:.0f}s)")


if __name__ == "__main__":
    main()
