"""The application on trial in the report: a lane per instance (when it ran, when it
was paused or cut off, how each run of it ended), and the sentence that says which
inputs went missing or doubled, and around which fault.

Lifecycle ops come from report-data.json's `app_events` (the instances' own processes,
`app-<i>`), the faults on the app from its `nemesis` ops; what an anomaly means is the
registry's, not this module's.
"""

from __future__ import annotations

from html import escape
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.checkers.results import Results
from kafka_trial.nemesis.catalog import heals, is_fault
from kafka_trial.report import svg_plots as sp

RUNNING, PAUSED, EXITED = "#2ca02c", "#ff7f0e", "#d62728"
# Faults on an instance that last until their heal (the nemesis catalog pairs them),
# drawn over its running spans, with the word for the state they leave it in.
_HELD = {"app-pause": "paused", "app-partition": "cut off"}
_APP_ANOMALIES = ("app-output-lost", "app-output-duplicate", "app-output-unexpected")
_NAMED = 5


def _instance(op: dict[str, Any]) -> int | None:
    v = op.get("value")
    i = v.get("instance") if isinstance(v, dict) else None
    return i if isinstance(i, int) else None


def _running(
    events: list[dict[str, Any]], t_end: float, tick: float
) -> dict[int, list[sp.Segment]]:
    """Each instance's running spans: from an ok app-start to its app-exit (a `tick`
    wide red mark)."""
    lanes: dict[int, list[sp.Segment]] = {}
    started: dict[int, tuple[float, dict[str, Any]]] = {}
    for e in events:
        i, t = _instance(e), e["time"] / 1e9
        if i is None or e.get("type") != "ok":
            continue
        v = e.get("value") or {}
        if e["f"] == "app-start":
            started[i] = (t, v)
            lanes.setdefault(i, [])
        elif e["f"] == "app-exit" and i in started:
            t0, sv = started.pop(i)
            who = v.get("by", "?")
            tip = (
                f"instance {i} ({_who(sv)}) ran {t0:.2f}-{t:.2f}s; "
                f"ended by {who}, exit code {v.get('exit_code')}"
            )
            lanes[i].append(sp.Segment(t0, t, "", RUNNING, 1.0, tip))
            lanes[i].append(sp.Segment(t, t + tick, "", EXITED, 1.0, tip))
    for i, (t0, sv) in started.items():
        tip = f"instance {i} ({_who(sv)}) running from {t0:.2f}s"
        lanes[i].append(sp.Segment(t0, t_end, "", RUNNING, 1.0, tip))
    return lanes


def _who(v: dict[str, Any]) -> str:
    if "pid" in v:
        return f"pid {v['pid']}"
    if "container" in v:
        return f"container {str(v['container'])[:12]}"
    return "?"


def _held(nemesis: list[dict[str, Any]], t_end: float) -> list[tuple[int, sp.Segment]]:
    """Pauses and cut links of instances, from the fault op to its heal."""
    out: list[tuple[int, sp.Segment]] = []
    open_: dict[tuple[str, int], float] = {}
    for op in nemesis:
        f, t = op.get("f"), op["time"] / 1e9
        if op.get("type") == "ok" and f in _HELD and (i := _instance(op)) is not None:
            open_[(str(f), i)] = t
        for fault, word in _HELD.items():
            if op.get("type") == "ok" and heals(fault, str(f)):
                for key in [k for k in open_ if k[0] == fault]:
                    t0 = open_.pop(key)
                    tip = f"instance {key[1]} {word} {t0:.2f}-{t:.2f}s"
                    out.append((key[1], sp.Segment(t0, t, "", PAUSED, 0.6, tip)))
    for (fault, i), t0 in open_.items():
        out.append((i, sp.Segment(t0, t_end, "", PAUSED, 0.6, f"instance {i} {_HELD[fault]}")))
    return out


def app_lanes(data: dict[str, Any], axis: sp.Axis, bands: list[sp.Band]) -> str:
    """One lane per instance: green while it ran, orange while paused or cut off, red
    where it ended (hover: pid or container, who ended it, the exit code)."""
    events = data.get("app_events") or []
    if not events:
        return ""
    per = _running(events, axis.t1, axis.span / 400)
    for i, seg in _held(data.get("nemesis") or [], axis.t1):
        per.setdefault(i, []).append(seg)
    lanes = {f"app {i}": per[i] for i in sorted(per)}
    return sp.lanes_chart(axis, lanes, bands, "application instances")


def _nearest_fault(t: float, nemesis: list[dict[str, Any]]) -> str | None:
    """The fault (on the app or the brokers) that began nearest to `t`, before or
    after it, in words: "0.3s before app-kill of instance 0 at 5.1s"."""
    faults = [op for op in nemesis if op.get("type") == "ok" and is_fault(str(op.get("f")))]
    if not faults:
        return None
    op = min(faults, key=lambda o: abs(o["time"] / 1e9 - t))
    at = op["time"] / 1e9
    i = _instance(op)
    what = f"{op['f']} of instance {i}" if i is not None else str(op["f"])
    side = "before" if t <= at else "after"
    return f"{abs(at - t):.1f}s {side} {what} at {at:.1f}s"


def app_sentence(results: Results | None, data: dict[str, Any] | None) -> str:
    """Which inputs went missing, doubled or appeared from nowhere in the output, and
    the fault each followed; empty where the run has no such finding."""
    if results is None:
        return ""
    data = data or {}
    nemesis = data.get("nemesis") or []
    sends = {s.get("value"): s for s in (data.get("witnesses") or {}).get("sends", [])}
    parts = []
    for name in _APP_ANOMALIES:
        found = results.anomalies.get(name)
        if found is None or not found.count:
            continue
        items = []
        for ex in found.examples[:_NAMED]:
            v = ex.get("value")
            where = f"{ex.get('topic')}/{ex.get('partition')}@{ex.get('offset')}"
            s = sends.get(v)
            near = _nearest_fault(s["time"] / 1e9, nemesis) if s and s.get("time") else None
            # When the input was acknowledged, against the fault nearest to it.
            items.append(f"input {v} ({where}" + (f", acknowledged {near})" if near else ")"))
        more = f" and {found.count - len(items)} more" if found.count > len(items) else ""
        parts.append(
            f"<li><b>{escape(name)}</b> ({found.count}): {escape(', '.join(items) + more)}. "
            f"{escape(ANOMALIES[name].definition)}.</li>"
        )
    if not parts:
        return ""
    return "<p>The application's output:</p><ul>" + "".join(parts) + "</ul>"
