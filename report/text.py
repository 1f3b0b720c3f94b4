"""The short verdict printed after run/analyze, rendered from `Results` alone: the
counts, and a few witnesses of each anomaly found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_trial.checkers.results import Results

WITNESSES = 3


def _witness(ex: Any) -> str:
    """One example on one line: its fields, long ones cut, so a terminal shows it."""
    if not isinstance(ex, dict):
        return str(ex)[:140]
    text = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in ex.items())
    return text if len(text) <= 140 else text[:137] + "..."


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def render(results: Results, run_dir: Path) -> str:
    lines = [f"verdict: {results.word}"]
    for name, a in results.anomalies.items():
        count = "?" if a.count is None else str(a.count)
        tag = ""
        if a.count:
            # Found but proving nothing (undecided): the verdict is unknown, not invalid.
            tag = {
                "undecided": f"  (undecided: {a.undecided})",
                "allowed by this config": "  (allowed)",
            }.get(results.judged(name), "  <-- forbidden")
        elif a.count is None and a.skipped:
            count, tag = "-", f"  (not checked: {a.skipped})"
        elif a.count is None:
            tag = f"  (check failed: {a.error or ''})"
        lines.append(f"  {name:<22}{count:>8}{tag}")
        if a.count:
            lines += [f"      e.g. {_witness(ex)}" for ex in a.examples[:WITNESSES]]
    st = results.stats
    outcomes = f" ({_counts(st.send_outcomes)})" if st.send_outcomes else ""
    lines.append(
        f"  sends: {st.sends_attempted} attempted{outcomes}; "
        f"records read {st.records_read}; faults injected {st.faults_injected}"
    )
    for label, counts in (("nemesis", st.nemesis_done), ("client events", st.client_events)):
        if counts:
            lines.append(f"  {label}: " + _counts(counts))
    lines += [f"  problem: {p}" for p in results.problems]
    written = results.analysis.results_file
    lines.append(f"results: {written or Path(run_dir) / 'results.json'}")
    return "\n".join(lines)
