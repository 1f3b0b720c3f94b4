"""The application on trial in the report: a lane per instance (when it ran, when it
was paused or cut off, how each run of it ended), and the sentence that says which
inputs went missing or doubled, and around which fault.

Lifecycle ops come from report-data.json's `app_events` (the instances' own processes,
`app-<i>`), the faults on the app from its `nemesis` ops; what an anomaly means is the
registry's, not this module's.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.report_data import AppEvent, NemesisOp, OpFacts, ReportData
from kafka_trial.nemesis.catalog import heals, is_fault
from kafka_trial.report import svg_plots as sp
from kafka_trial.report.witnesses import sends_of

RUNNING, PAUSED, EXITED = "#2ca02c", "#ff7f0e", "#d62728"
# Faults on an instance that last until their heal (the nemesis catalog pairs them),
# drawn over its running spans, with the word for the state they leave it in.
_HELD = {"app-pause": "paused", "app-partition": "cut off"}
_APP_ANOMALIES = ("app-output-lost", "app-output-duplicate", "app-output-unexpected")
_NAMED = 5


def _running(events: Sequence[AppEvent], t_end: float, tick: float) -> dict[int, list[sp.Segment]]:
    """Each instance's running spans: from an ok app-start to its app-exit (a `tick`
    wide red mark)."""
    lanes: dict[int, list[sp.Segment]] = {}
    started: dict[int, tuple[float, OpFacts]] = {}
    for e in events:
        v, t = e.facts, e.time / 1e9
        i = v.instance
        if i is None or e.type != "ok":
            continue
        if e.f == "app-start":
            started[i] = (t, v)
            lanes.setdefault(i, [])
        elif e.f == "app-exit" and i in started:
            t0, sv = started.pop(i)
            tip = (
                f"instance {i} ({_who(sv)}) ran {t0:.2f}-{t:.2f}s; "
                f"ended by {v.by if v.by is not None else '?'}, exit code {v.exit_code}"
            )
            lanes[i].append(sp.Segment(t0, t, "", RUNNING, 1.0, tip))
            lanes[i].append(sp.Segment(t, t + tick, "", EXITED, 1.0, tip))
    for i, (t0, sv) in started.items():
        tip = f"instance {i} ({_who(sv)}) running from {t0:.2f}s"
        lanes[i].append(sp.Segment(t0, t_end, "", RUNNING, 1.0, tip))
    return lanes


def _who(v: OpFacts) -> str:
    if v.pid is not None:
        return f"pid {v.pid}"
    if v.container is not None:
        return f"container {v.container[:12]}"
    return "?"


def _held(nemesis: Sequence[NemesisOp], t_end: float) -> list[tuple[int, sp.Segment]]:
    """Pauses and cut links of instances, from the fault op to its heal."""
    out: list[tuple[int, sp.Segment]] = []
    open_: dict[tuple[str, int], float] = {}
    for op in nemesis:
        f, t = op.f, op.time / 1e9
        if op.type == "ok" and f in _HELD and (i := op.facts.instance) is not None:
            open_[(f, i)] = t
        for fault, word in _HELD.items():
            if op.type == "ok" and heals(fault, f):
                for key in [k for k in open_ if k[0] == fault]:
                    t0 = open_.pop(key)
                    tip = f"instance {key[1]} {word} {t0:.2f}-{t:.2f}s"
                    out.append((key[1], sp.Segment(t0, t, "", PAUSED, 0.6, tip)))
    for (fault, i), t0 in open_.items():
        out.append((i, sp.Segment(t0, t_end, "", PAUSED, 0.6, f"instance {i} {_HELD[fault]}")))
    return out


def app_lanes(data: ReportData, axis: sp.Axis, bands: list[sp.Band]) -> str:
    """One lane per instance: green while it ran, orange while paused or cut off, red
    where it ended (hover: pid or container, who ended it, the exit code)."""
    if not data.app_events:
        return ""
    per = _running(data.app_events, axis.t1, axis.span / 400)
    for i, seg in _held(data.nemesis, axis.t1):
        per.setdefault(i, []).append(seg)
    lanes = {f"app {i}": per[i] for i in sorted(per)}
    return sp.lanes_chart(axis, lanes, bands, "application instances")


def _nearest_fault(t: float, nemesis: Sequence[NemesisOp]) -> str | None:
    """The fault (on the app or the brokers) that began nearest to `t`, before or
    after it, in words: "0.3s before app-kill of instance 0 at 5.1s"."""
    faults = [op for op in nemesis if op.type == "ok" and is_fault(op.f)]
    if not faults:
        return None
    op = min(faults, key=lambda o: abs(o.time / 1e9 - t))
    at = op.time / 1e9
    i = op.facts.instance
    what = f"{op.f} of instance {i}" if i is not None else op.f
    side = "before" if t <= at else "after"
    return f"{abs(at - t):.1f}s {side} {what} at {at:.1f}s"


def app_sentence(results: Results | None, data: ReportData | None) -> str:
    """Which inputs went missing, doubled or appeared from nowhere in the output, and
    the fault each followed; empty where the run has no such finding."""
    if results is None:
        return ""
    nemesis = data.nemesis if data is not None else ()
    parts = []
    for name in _APP_ANOMALIES:
        count = results.count(name)
        if not count:
            continue
        items = []
        for ex in results.anomalies[name].example_views()[:_NAMED]:
            where = f"{ex.topic}/{ex.partition}@{ex.offset}"
            # The last send of the input: when it was acknowledged, against the fault
            # nearest to it.
            sent = sends_of(data, ex.value)
            t = sent[-1].time if sent else None
            near = _nearest_fault(t / 1e9, nemesis) if t else None
            items.append(
                f"input {ex.value} ({where}" + (f", acknowledged {near})" if near else ")")
            )
        more = f" and {count - len(items)} more" if count > len(items) else ""
        parts.append(
            f"<li><b>{escape(name)}</b> ({count}): {escape(', '.join(items) + more)}. "
            f"{escape(ANOMALIES[name].definition)}.</li>"
        )
    if not parts:
        return ""
    return "<p>The application's output:</p><ul>" + "".join(parts) + "</ul>"
