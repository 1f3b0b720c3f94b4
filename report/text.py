"""The short verdict printed after run/analyze, rendered from results.json alone: the
counts, and a few witnesses of each anomaly found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_trial.contracts.errors import TrialError

WITNESSES = 3


def _witness(ex: Any) -> str:
    """One example on one line: its fields, long ones cut, so a terminal shows it."""
    if not isinstance(ex, dict):
        return str(ex)[:140]
    text = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in ex.items())
    return text if len(text) <= 140 else text[:137] + "..."


def render(results: dict[str, Any], run_dir: Path) -> str:
    valid = results["valid"]
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")  # type: ignore[call-overload]
    allowed = set(results.get("allowed", []))
    lines = [f"verdict: {word}"]
    for name, a in results["anomalies"].items():
        count = "?" if a["count"] is None else str(a["count"])
        tag = ""
        if a["count"]:
            tag = "  (allowed)" if name in allowed else "  <-- forbidden"
        elif a["count"] is None:
            tag = f"  (check failed: {a.get('error', '')})"
        lines.append(f"  {name:<22}{count:>8}{tag}")
        if a["count"]:
            lines += [f"      e.g. {_witness(ex)}" for ex in a.get("examples", [])[:WITNESSES]]
    st = results.get("stats", {})
    outcomes = st.get("send_outcomes", {})
    lines.append(
        f"  sends: {st.get('sends_attempted', 0)} attempted, "
        + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        + f"; records read {st.get('records_read', 0)}; nemesis ops {st.get('nemesis_ops', 0)}"
    )
    for label, key in (("nemesis", "nemesis_done"), ("client events", "client_events")):
        counts = st.get(key) or {}
        if counts:
            lines.append(f"  {label}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for p in results.get("problems", []):
        lines.append(f"  problem: {p}")
    written = results.get("analysis", {}).get("results_file")
    lines.append(f"results: {written or Path(run_dir) / 'results.json'}")
    return "\n".join(lines)


def load_results(run_dir: Path) -> dict[str, Any]:
    p = run_dir / "results.json"
    if not p.is_file():
        raise TrialError(f"{p} is missing", f"run `kafka-trial analyze {run_dir}` first")
    return json.loads(p.read_text())
