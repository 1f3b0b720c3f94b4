"""The report's charts: throughput, latency, the cluster's state lanes, client events
and offsets per partition, each an inline SVG over one time axis."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from html import escape
from typing import Any

from kafka_trial.checkers.results import Results
from kafka_trial.contracts.cluster_state import StateSample
from kafka_trial.contracts.report_data import LatencyBucket, ReportData
from kafka_trial.report import svg_plots as sp
from kafka_trial.report.witnesses import reads_at, sends_of


def _e(v: Any) -> str:
    return escape(str(v))


def throughput(data: ReportData, axis: sp.Axis, bands: list[sp.Band]) -> str:
    w = data.bucket_s
    t0 = data.t0 / 1e9
    series: dict[str, dict[float, float]] = {}
    for r in data.throughput:
        series.setdefault(f"{r.f} {r.type}", {})[t0 + r.bucket * w] = r.n / w
    # The busiest kinds first; every ok/fail/info of them is its own line.
    ordered = sorted(series, key=lambda k: -sum(series[k].values()))[:9]
    return sp.line_chart(
        axis,
        {k: _fill_gaps(series[k], t0, w, axis) for k in ordered},
        bands,
        f"ops per second by kind and outcome (bucket {w}s)",
        "ops/s",
    )


def _fill_gaps(
    pts: dict[float, float], t0: float, w: float, axis: sp.Axis
) -> list[tuple[float, float]]:
    """A bucket with no op of a kind is a zero, not a straight line across the gap."""
    out = []
    n = int((axis.t1 - t0) // w) + 1
    for i in range(max(n, 0)):
        t = t0 + i * w
        out.append((t + w / 2, pts.get(t, 0.0)))
    return out


def latency(data: ReportData, axis: sp.Axis, bands: list[sp.Band]) -> str:
    w = data.bucket_s
    t0 = data.t0 / 1e9
    by_f: dict[str, list[LatencyBucket]] = {}
    for r in data.latency_ms:
        by_f.setdefault(r.f, []).append(r)
    main = max(by_f, key=lambda f: sum(r.n for r in by_f[f]), default=None)
    if main is None:
        return sp.line_chart(axis, {}, bands, "latency", "ms")
    rows = by_f[main]
    series = {
        q: [(t0 + r.bucket * w + w / 2, float(getattr(r, q) or 0)) for r in rows]
        for q in ("p50", "p99", "max")
    }
    return sp.line_chart(
        axis,
        series,
        bands,
        f"{main} latency per bucket, invoke to completion (log scale; gaps: none completed)",
        "ms",
        log_scale=True,
        max_gap=w * 1.5,
        colors={"p50": "#1f77b4", "p99": "#ff7f0e", "max": "#d62728"},
    )


def _spans(rows: list[StateSample], key: Any) -> list[tuple[float, float, Any]]:
    """Runs of consecutive samples with the same key(sample): (from, to, value)."""
    out: list[tuple[float, float, Any]] = []
    for i, s in enumerate(rows):
        t = s.time / 1e9
        t_next = rows[i + 1].time / 1e9 if i + 1 < len(rows) else t + 1
        v = key(s)
        if out and out[-1][2] == v:
            out[-1] = (out[-1][0], t_next, v)
        else:
            out.append((t, t_next, v))
    return out


def _color(v: Any) -> str:
    return "#d62728" if v is None else sp.PALETTE[hash(v) % len(sp.PALETTE)]


def _partition_lane(rows: list[StateSample], p: str) -> list[sp.Segment]:
    def state(s: StateSample) -> tuple[int | None, int, int]:
        ps = s.partition(p)
        return ps.leading, len(ps.isr), len(ps.replicas) or 1

    segs = []
    for a, b, (lead, isr, reps) in _spans(rows, state):
        segs.append(
            sp.Segment(
                a,
                b,
                f"L{lead} isr {isr}" if lead is not None else "no leader",
                _color(lead),
                max(isr / reps, 0.15),
                f"partition {p}: leader {lead}, ISR size {isr} of {reps} ({a:.1f}s-{b:.1f}s)",
            )
        )
    return segs


def _node_lanes(rows: list[StateSample]) -> dict[str, list[sp.Segment]]:
    lanes = {
        "controller": [
            sp.Segment(
                a,
                b,
                f"c{v}" if v is not None else "none",
                _color(v),
                1.0,
                f"active controller {v} ({a:.1f}s-{b:.1f}s)",
            )
            for a, b, v in _spans(rows, lambda s: s.controller)
        ]
    }
    nodes = {b for s in rows for b in s.up + s.registered}
    n = max(len(nodes), 1)
    lanes_of: tuple[tuple[str, Callable[[StateSample], tuple[int, ...]]], ...] = (
        ("brokers up", lambda s: s.up),
        ("registered", lambda s: s.registered),
    )
    for label, key in lanes_of:
        lanes[label] = [
            sp.Segment(
                a,
                b,
                ",".join(map(str, v)) or "none",
                "#2ca02c" if len(v) == n else "#ff7f0e",
                max(len(v) / n, 0.15),
                f"{label}: {list(v)} ({a:.1f}s-{b:.1f}s)",
            )
            for a, b, v in _spans(rows, lambda s, key=key: tuple(sorted(key(s))))
        ]
    return lanes


def state_lanes(states: list[StateSample], axis: sp.Axis, bands: list[sp.Band]) -> str:
    rows = sorted((s for s in states if s.error is None), key=lambda s: s.time)
    errors = [s.error for s in states if s.error is not None]
    if not rows:
        return '<p class="missing">No cluster-state samples to draw.</p>'
    parts = sorted({p for s in rows for p in s.partitions}, key=int)
    lanes = {f"partition {p}": _partition_lane(rows, p) for p in parts}
    lanes.update(_node_lanes(rows))
    html = sp.lanes_chart(
        axis,
        lanes,
        bands,
        "leader and ISR size per partition (bar height = ISR share), controller, brokers",
    )
    if errors:
        html += (
            f'<p class="missing">{len(errors)} cluster-state samples failed, '
            f"e.g. {_e(errors[0])}</p>"
        )
    return html


def client_lane(data: ReportData, axis: sp.Axis, bands: list[sp.Band]) -> str:
    events = data.client_events
    kinds = sorted({e.f for e in events})
    lanes: dict[str, list[sp.Segment]] = {}
    width = axis.span / 400
    for i, k in enumerate(kinds):
        lanes[k] = [
            sp.Segment(
                e.time / 1e9,
                e.time / 1e9 + width,
                "",
                sp.PALETTE[i % len(sp.PALETTE)],
                1.0,
                f"{k} by process {e.process} at {e.time / 1e9:.2f}s",
            )
            for e in events
            if e.f == k
        ]
    if not lanes:
        return '<p class="note">No client events (crash, rebalance, leave, join, stall).</p>'
    note = " (first 2000 only)" if data.client_events_capped else ""
    return sp.lanes_chart(axis, lanes, bands, "client events" + note)


Mark = tuple[float, int, str, str]  # time, offset, text, colour


def _anomaly_marks(
    results: Results | None, data: ReportData, t0: float
) -> defaultdict[tuple[str, int], list[Mark]]:
    """Every witness with a position, at the time of its acknowledgement (or first
    read there)."""
    marks: defaultdict[tuple[str, int], list[Mark]] = defaultdict(list)
    for name, a in (results.anomalies if results is not None else {}).items():
        for ex in a.example_views():
            if ex.topic is None or ex.partition is None or ex.offset is None:
                continue
            sends = sends_of(data, ex.value)
            t = next((s.time / 1e9 for s in sends if s.time is not None), None)
            if t is None:
                at = reads_at(data, ex.topic, ex.partition, ex.offset)
                t = next((r.time / 1e9 for r in at if r.time is not None), t0)
            text = f"{name}: value {ex.value} at offset {ex.offset}"
            marks[(ex.topic, ex.partition)].append((t, ex.offset, text, "#d62728"))
    return marks


def offsets_section(
    results: Results | None, data: ReportData | None, axis: sp.Axis, bands: list[sp.Band]
) -> str:
    if data is None:
        return '<p class="missing">No offset data (report-data.json is missing).</p>'
    w = data.bucket_s
    t0 = data.t0 / 1e9
    by_tp: dict[tuple[str, int], list[tuple[float, float, int, int, str]]] = {}
    for r in data.offsets:
        color = "#1f77b4" if r.kind == "acked" else "#2ca02c"
        by_tp.setdefault((r.topic, r.partition), []).append(
            (t0 + r.bucket * w, w, r.lo, r.hi, color)
        )
    marks = _anomaly_marks(results, data, t0)
    if not by_tp:
        return "<p>No acknowledged send or read with an offset.</p>"
    out = [
        "<p>Blue: acknowledged sends, green: reads, as the offset range per "
        f"{w}s bucket. Red crosses: anomaly positions (all of them, whatever the "
        "down-sampling).</p>"
    ]
    for tp in sorted(by_tp, key=lambda k: (str(k[0]), k[1]))[:24]:
        out.append(
            sp.offsets_chart(axis, by_tp[tp], marks[tp], bands, f"{tp[0]} partition {tp[1]}")
        )
    if len(by_tp) > 24:
        out.append(f"<p>{len(by_tp) - 24} more partitions not drawn.</p>")
    return "\n".join(out)
