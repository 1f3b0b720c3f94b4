"""shrink.html: what `kafka-trial shrink` found, as a page a bug report can link: the
smallest failing schedule step by step, and every candidate tried. The words for
anomalies and faults are their owners' (the anomaly registry, the nemesis catalog)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.contracts.shrink_record import SHRINK_PAGE, SHRUNK_CONFIG, ShrinkRecord, Tried
from kafka_trial.nemesis.catalog import PACKAGES

_STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:2em auto}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}"
    ".failed{background:#fdd}"
)


def _step_rows(rec: ShrinkRecord) -> str:
    rows = []
    for s in rec.best_steps:
        info = PACKAGES.get(s.package)
        what = (info.fault if s.action == "fault" else info.heal) if info else s.package
        pick = f" (pick {s.pick})" if s.action == "fault" else ""
        rows.append(
            f"<tr><td>{s.at_s:g} s</td><td>{escape(s.action)}</td>"
            f"<td>{escape(s.package)}{pick}</td><td>{escape(what)}</td></tr>"
        )
    return "".join(rows)


def _tried_row(t: Tried, anomalies: tuple[str, ...]) -> str:
    faults = sum(1 for s in t.steps if s.action == "fault")
    shown = "; ".join(
        f"{escape(r.verdict)}"
        + "".join(f" {escape(a)}={r.shown.get(a, 0)}" for a in anomalies if r.shown.get(a))
        + (f" ({escape(r.error[:120])})" if r.error else "")
        for r in t.repeats
    )
    cls = ' class="failed"' if t.failed else ""
    return (
        f"<tr{cls}><td>{t.number}</td><td>{escape(t.stage)}</td><td>{faults}</td>"
        f"<td>{t.duration_s:g} s</td><td>{escape(', '.join(t.targets or ('as source',)))}</td>"
        f"<td>{'fails' if t.failed else 'passed every run'}</td><td>{shown}</td></tr>"
    )


def render_shrink_page(rec: ShrinkRecord) -> str:
    sought = "".join(
        f"<li><b>{escape(a)}</b>: {escape(ANOMALIES[a].definition)}</li>"
        if a in ANOMALIES
        else f"<li>{escape(a)}</li>"
        for a in rec.anomalies
    )
    faults = sum(1 for s in rec.best_steps if s.action == "fault")
    found = (
        f"candidate {rec.best}, replayed by <code>kafka-trial run --config {SHRUNK_CONFIG}</code>"
        if rec.best
        else "no smaller schedule failed: the source run's schedule is the smallest known"
    )
    tried = "".join(_tried_row(t, rec.anomalies) for t in rec.tried)
    return (
        f"<!doctype html><meta charset=utf-8><title>kafka-trial shrink</title>"
        f"<style>{_STYLE}</style><h1>Shrink of {escape(rec.source_run)}</h1>"
        f"<p>State: {escape(rec.state)}; {rec.runs} runs of {len(rec.tried)} candidates, up "
        f"to {rec.repeats} runs each (a candidate fails when any run shows what is "
        f"sought).</p><h2>Sought</h2><ul>{sought}</ul>"
        f"<h2>Smallest failing schedule: {faults} fault steps, fault phase "
        f"{rec.best_duration_s:g} s</h2><p>{found}"
        + (f"; targets {escape(', '.join(rec.best_targets))}" if rec.best_targets else "")
        + "</p><table><tr><th>at</th><th>step</th><th>package</th><th>what</th></tr>"
        f"{_step_rows(rec)}</table><h2>Every candidate</h2><table><tr><th>#</th>"
        "<th>stage</th><th>fault steps</th><th>fault phase</th><th>targets</th>"
        f"<th>result</th><th>runs</th></tr>{tried}</table>"
    )


def write_shrink_page(out: Path, rec: ShrinkRecord) -> Path:
    page = out / SHRINK_PAGE
    page.write_text(render_shrink_page(rec))
    return page
