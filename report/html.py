"""RUN_DIR/report.html: one self-contained page that shows what happened in a run and
why the verdict is what it is.

It reads only files the run and the analysis wrote (results.json, report-data.json,
spec.json, run.json, schedule.json, cluster-state.jsonl, logs/). Each may be missing
or cut off; the page then says so where that part would be, never a traceback. The
heavy lifting (per-second aggregates, the ops behind each witness) is Spark's
(spark_analysis/report_data.py), so building the page costs the same for any history.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES
from kafka_trial.harness import svg_plots as sp
from kafka_trial.harness.presets import CLAIMS

REPORT = "report.html"

# A fault op's f -> the f of the op that undoes it (nemesis/packages.py).
HEAL_OF = {
    "kill": "start",
    "stop": "start",
    "pause": "resume",
    "partition": "heal",
    "client-partition": "client-heal",
    "degrade": "restore",
}
# Faults over when their op completes: drawn as a thin band.
INSTANT = {"bounce", "wipe", "elect-unclean"}
NOT_FAULTS = {*HEAL_OF.values(), "heal-all", "await-healthy", "await-isr-shrink"}

# Checks that only have something to check when the run had that kind of client.
NEEDS = {
    "group-missed": "consumer group",
    "group-redelivered": "consumer group",
    "eos-output-lost": "exactly-once copier",
    "eos-output-duplicate": "exactly-once copier",
    "torn-txn": "transactions",
    "precommitted-read": "transactions",
    "vanished-read": "consumers besides the final drain",
    "aborted-read": "reads",
    "nonmonotonic-poll": "reads",
    "int-nonmonotonic-poll": "reads",
    "poll-skip": "reads",
    "int-poll-skip": "reads",
}

MAX_WITNESSES = 10


@dataclass
class Inputs:
    run_dir: Path
    results: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    spec: dict[str, Any] | None = None
    run: dict[str, Any] | None = None
    schedule: list[Any] | None = None
    states: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what the page cannot show, and why


def _json_file(inp: Inputs, name: str, why: str, where: Path | None = None) -> Any:
    p = (where or inp.run_dir) / name
    if not p.is_file():
        inp.missing.append(f"{name} is missing: {why}")
        return None
    try:
        return json.loads(p.read_text())
    except (ValueError, OSError) as e:
        inp.missing.append(f"{name} cannot be read ({type(e).__name__}): {why}")
        return None


def load_inputs(run_dir: Path, out_dir: Path | None = None) -> Inputs:
    """run_dir: what the run wrote; out_dir: where the analysis wrote (default run_dir)."""
    inp = Inputs(run_dir)
    results_dir = out_dir or run_dir
    inp.results = _json_file(
        inp, "results.json", f"no verdict; run `kafka-trial analyze {run_dir}`", results_dir
    )
    inp.data = _json_file(
        inp,
        "report-data.json",
        f"no timeline, latency or witness ops; run `kafka-trial report {run_dir}`",
        results_dir,
    )
    inp.spec = _json_file(inp, "spec.json", "settings unknown (a bare history)")
    inp.run = _json_file(inp, "run.json", "no phase timings (the run did not finish)")
    inp.schedule = _json_file(inp, "schedule.json", "no fault schedule")
    states = run_dir / "cluster-state.jsonl"
    if states.is_file():
        bad = 0
        for line in states.read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(row, dict) and isinstance(row.get("time"), int):
                inp.states.append(row)
        if bad:
            inp.missing.append(f"cluster-state.jsonl: {bad} line(s) cut off or damaged, skipped")
    else:
        inp.missing.append("cluster-state.jsonl is missing: no leader, ISR or broker lanes")
    return inp


# ---------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    band: sp.Band
    f: str
    brokers: tuple[int, ...]


def _brokers(value: Any) -> tuple[int, ...]:
    if isinstance(value, dict):
        b = value.get("brokers") or value.get("isolated") or []
        return tuple(x for x in b if isinstance(x, int))
    return ()


def _fault_label(f: str, value: Any) -> str:
    v = value if isinstance(value, dict) else {}
    what = [str(v[k]) for k in ("target", "topology", "toxic", "mode") if v.get(k)]
    b = _brokers(v)
    return " ".join([f, *what]) + (f" brokers {list(b)}" if b else "")


def faults(nemesis: list[dict[str, Any]], t_end: float) -> list[Fault]:
    """Fault bands from the nemesis ops: from a fault's invoke to the completion of the
    op that undoes it (same brokers), or of heal-all, or the end of the history."""
    done = [o for o in nemesis if o.get("type") in ("ok", "info")]
    invoked = {}
    for o in nemesis:
        if o.get("type") == "invoke":
            invoked.setdefault(o.get("f"), []).append(o)
    out: list[Fault] = []
    for i, o in enumerate(done):
        f = o.get("f") or ""
        if f in NOT_FAULTS:
            continue
        inv = [x for x in invoked.get(f, []) if x["index"] < o["index"]]
        start = (inv[-1]["time"] if inv else o["time"]) / 1e9
        brokers = _brokers(o.get("value"))
        end = o["time"] / 1e9
        healed = f in INSTANT
        if not healed:
            for later in done[i + 1 :]:
                lf = later.get("f")
                lb = _brokers(later.get("value"))
                if lf == "heal-all" or (
                    lf == HEAL_OF.get(f) and (not brokers or not lb or set(lb) & set(brokers))
                ):
                    end, healed = later["time"] / 1e9, True
                    break
        label = _fault_label(f, o.get("value"))
        if not healed:
            end, label = t_end, label + " (never healed)"
        unknown = o.get("type") == "info"
        if unknown:
            label += " (outcome unknown)"
        out.append(Fault(sp.Band(start, max(end, start), label, unknown), f, brokers))
    return out


# ---------------------------------------------------------------- helpers


def _e(v: Any) -> str:
    return escape(str(v))


def _table(headers: list[str], rows: list[list[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _s(t_ns: Any) -> str:
    return f"{t_ns / 1e9:.3f}s" if isinstance(t_ns, (int, float)) else "?"


def _get(d: dict[str, Any] | None, path: str, default: Any = None) -> Any:
    cur: Any = d
    for k in path.split("."):
        if not isinstance(cur, dict) or k not in cur:
            return default
        cur = cur[k]
    return cur


# ---------------------------------------------------------------- sections


def verdict_sentence(results: dict[str, Any] | None) -> tuple[str, str]:
    if results is None:
        return "unknown", "No verdict: this run was never analyzed (results.json is missing)."
    valid = results.get("valid")
    anomalies = results.get("anomalies", {})
    allowed = set(results.get("allowed", []))
    seen = {n: a.get("count") for n, a in anomalies.items() if a.get("count")}
    forbidden = {n: c for n, c in seen.items() if n not in allowed}
    if valid is True:
        extra = (
            " Allowed by this config and seen: "
            + ", ".join(f"{n} ({c})" for n, c in seen.items())
            + "."
            if seen
            else ""
        )
        return "valid", "VALID: no anomaly this config forbids was found." + extra
    if valid is False:
        return "invalid", "INVALID: " + ", ".join(
            f"{c} {n}" for n, c in forbidden.items()
        ) + " found, which this config does not allow."
    why = "; ".join(results.get("problems", [])) or "a check could not decide"
    return "unknown", f"UNKNOWN: the history cannot decide the verdict ({why})."


def _applicable(name: str, spec: dict[str, Any] | None, fs: set[str]) -> bool:
    need = NEEDS.get(name)
    if need is None:
        return True
    if need == "consumer group":
        return "process" in fs or _get(spec, "consumer.mode") == "subscribe"
    if need == "exactly-once copier":
        return (_get(spec, "copier.workers") or 0) > 0
    if need == "transactions":
        return "txn" in fs or bool(_get(spec, "producer.transactional"))
    if need == "consumers besides the final drain":
        return (
            (_get(spec, "consumer.workers") or 0) > 0
            or "process" in fs
            or ((_get(spec, "copier.workers") or 0) > 0)
        )
    return "poll" in fs or "txn" in fs


def header(inp: Inputs, fs: set[str]) -> str:
    cls, sentence = verdict_sentence(inp.results)
    spec = inp.spec or {}
    settings = [
        ["acks", _get(spec, "producer.acks", "?")],
        ["idempotence", _get(spec, "producer.idempotence", "?")],
        ["max in flight", _get(spec, "producer.max_in_flight", "?")],
        ["retries", _get(spec, "producer.retries", "?")],
        ["transactions", _get(spec, "producer.transactional", "?")],
        [
            "consumers",
            f"{_get(spec, 'consumer.workers', '?')} ({_get(spec, 'consumer.mode', '?')})",
        ],
        ["isolation level", _get(spec, "consumer.isolation_level", "?")],
        ["commit style", _get(spec, "consumer.commit", "?")],
        ["replication factor", _get(spec, "topic.replication_factor", "?")],
        ["min.insync.replicas", _get(spec, "topic.min_insync_replicas", "?")],
        ["unclean leader election", _get(spec, "topic.unclean_leader_election", "?")],
        ["faults", ", ".join(_get(spec, "nemesis.faults", []) or ["none"])],
        ["allowed anomalies", ", ".join(_get(spec, "check.allowed", []) or ["none"])],
    ]
    name = _get(spec, "name", "?")
    facts = [
        ["run", inp.run_dir.name],
        ["preset / name", name],
        ["Kafka", _get(inp.run, "kafka_version", _get(spec, "cluster.kafka_version", "?"))],
        ["seed", _get(spec, "seed", "?")],
        ["fault phase", f"{_get(spec, 'duration_s', '?')} s"],
        ["history span", f"{_get(inp.results, 'stats.span_s', '?')} s"],
        [
            "reproduce",
            f"kafka-trial run --config {shlex.quote(str(inp.run_dir / 'spec.json'))}"
            if inp.spec
            else "(no spec.json: not reproducible from this directory)",
        ],
    ]
    out = [f'<h1 class="verdict {cls}">{_e(sentence)}</h1>']
    claim = CLAIMS.get(name)
    if claim is not None:
        out.append(_claim(claim, inp.results))
    out.append('<div class="cols">')
    out.append(
        "<div><h3>Settings that matter</h3>" + _table(["setting", "value"], settings) + "</div>"
    )
    out.append("<div><h3>Run</h3>" + _table(["fact", "value"], facts) + "</div>")
    out.append("<div><h3>Checks</h3>" + _counts(inp, fs) + "</div></div>")
    if inp.results is not None:
        for p in inp.results.get("problems", []):
            out.append(f'<p class="problem">Problem: {_e(p)}</p>')
    for m in inp.missing:
        out.append(f'<p class="missing">Not shown: {_e(m)}</p>')
    return "\n".join(out)


def _claim(claim: Any, results: dict[str, Any] | None) -> str:
    if results is None:
        borne = "not judged (no results)"
    else:
        seen = [n for n in claim.anomalies if _get(results, f"anomalies.{n}.count")]
        if claim.expected == "anomaly":
            borne = (
                f"borne out: {', '.join(seen)} observed"
                if seen
                else "not borne out in this run: the expected anomaly did not appear "
                "(a claim of possibility needs faults that hit at the right moment)"
            )
        else:
            borne = (
                "borne out: none of " + ", ".join(claim.anomalies) + " appeared"
                if not seen and results.get("valid") is True
                else "NOT borne out: " + (", ".join(seen) or "the verdict is not valid")
            )
    return (
        f'<p class="claim"><b>Claim {claim.id}</b>: {_e(claim.text)} '
        + (
            f"(expected: {_e(', '.join(claim.anomalies))} can appear). "
            if claim.expected == "anomaly"
            else f"(expected: never {_e(', '.join(claim.anomalies))}). "
        )
        + f"<b>{_e(borne)}</b></p>"
    )


def _counts(inp: Inputs, fs: set[str]) -> str:
    if inp.results is None:
        return "<p>no results</p>"
    allowed = set(inp.results.get("allowed", []))
    rows = []
    for name in ANOMALY_TYPES:
        a = inp.results.get("anomalies", {}).get(name, {})
        c = a.get("count")
        if c is None:
            shown, tag = "?", f"could not decide: {a.get('error', '')}"[:120]
        elif c == 0 and inp.data is not None and not _applicable(name, inp.spec, fs):
            shown, tag = "not applicable", f"no {NEEDS[name]} in this run"
        else:
            shown = str(c)
            tag = ("allowed" if name in allowed else "FORBIDDEN") if c else ""
        link = f'<a href="#a-{name}">{_e(name)}</a>' if c else _e(name)
        rows.append(f"<tr><td>{link}</td><td>{_e(shown)}</td><td>{_e(tag)}</td></tr>")
    return (
        '<table class="counts"><thead><tr><th>anomaly</th><th>count</th><th></th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _throughput(data: dict[str, Any], axis: sp.Axis, bands: list[sp.Band]) -> str:
    w = data["bucket_s"]
    t0 = data["t0"] / 1e9
    series: dict[str, dict[float, float]] = {}
    for r in data.get("throughput", []):
        key = f"{r['f']} {r['type']}"
        series.setdefault(key, {})[t0 + r["bucket"] * w] = r["n"] / w
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


def _latency(data: dict[str, Any], axis: sp.Axis, bands: list[sp.Band]) -> str:
    w = data["bucket_s"]
    t0 = data["t0"] / 1e9
    by_f: dict[str, list[dict[str, Any]]] = {}
    for r in data.get("latency_ms", []):
        by_f.setdefault(r["f"], []).append(r)
    main = max(by_f, key=lambda f: sum(r["n"] for r in by_f[f]), default=None)
    if main is None:
        return sp.line_chart(axis, {}, bands, "latency", "ms")
    rows = by_f[main]
    series = {
        q: [(t0 + r["bucket"] * w + w / 2, float(r[q] or 0)) for r in rows]
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


def _state_lanes(inp: Inputs, axis: sp.Axis, bands: list[sp.Band]) -> str:
    rows = sorted((s for s in inp.states if "error" not in s), key=lambda s: s["time"])
    errors = [s for s in inp.states if "error" in s]
    if not rows:
        return '<p class="missing">No cluster-state samples to draw.</p>'
    lanes: dict[str, list[sp.Segment]] = {}
    nodes = sorted({b for s in rows for b in (s.get("up") or []) + (s.get("registered") or [])})

    def spans(key: Any) -> list[tuple[float, float, Any]]:
        out: list[tuple[float, float, Any]] = []
        for i, s in enumerate(rows):
            t = s["time"] / 1e9
            t_next = rows[i + 1]["time"] / 1e9 if i + 1 < len(rows) else t + 1
            v = key(s)
            if out and out[-1][2] == v:
                out[-1] = (out[-1][0], t_next, v)
            else:
                out.append((t, t_next, v))
        return out

    def color(v: Any) -> str:
        return "#d62728" if v is None else sp.PALETTE[hash(v) % len(sp.PALETTE)]

    parts = sorted({p for s in rows for p in (s.get("partitions") or {})}, key=int)
    for p in parts:
        segs = []
        for a, b, v in spans(
            lambda s, p=p: (
                (s.get("partitions") or {}).get(p, {}).get("leader"),
                len((s.get("partitions") or {}).get(p, {}).get("isr") or []),
                len((s.get("partitions") or {}).get(p, {}).get("replicas") or []) or 1,
            )
        ):
            leader, isr, reps = v
            lead = leader if isinstance(leader, int) and leader >= 0 else None
            segs.append(
                sp.Segment(
                    a,
                    b,
                    f"L{lead} isr {isr}" if lead is not None else "no leader",
                    color(lead),
                    max(isr / reps, 0.15),
                    f"partition {p}: leader {lead}, ISR size {isr} of {reps} ({a:.1f}s-{b:.1f}s)",
                )
            )
        lanes[f"partition {p}"] = segs
    lanes["controller"] = [
        sp.Segment(
            a,
            b,
            f"c{v}" if v is not None else "none",
            color(v),
            1.0,
            f"active controller {v} ({a:.1f}s-{b:.1f}s)",
        )
        for a, b, v in spans(lambda s: s.get("controller"))
    ]
    n = max(len(nodes), 1)
    for label, key in (("brokers up", "up"), ("registered", "registered")):
        lanes[label] = [
            sp.Segment(
                a,
                b,
                ",".join(map(str, v)) or "none",
                "#2ca02c" if len(v) == n else "#ff7f0e",
                max(len(v) / n, 0.15),
                f"{label}: {list(v)} ({a:.1f}s-{b:.1f}s)",
            )
            for a, b, v in spans(lambda s, key=key: tuple(sorted(s.get(key) or [])))
        ]
    html = sp.lanes_chart(
        axis,
        lanes,
        bands,
        "leader and ISR size per partition (bar height = ISR share), controller, brokers",
    )
    if errors:
        html += (
            f'<p class="missing">{len(errors)} cluster-state samples failed, '
            f"e.g. {_e(errors[0]['error'])}</p>"
        )
    return html


def _client_lane(data: dict[str, Any], axis: sp.Axis, bands: list[sp.Band]) -> str:
    events = data.get("client_events", [])
    kinds = sorted({e["f"] for e in events})
    lanes: dict[str, list[sp.Segment]] = {}
    width = axis.span / 400
    for i, k in enumerate(kinds):
        lanes[k] = [
            sp.Segment(
                e["time"] / 1e9,
                e["time"] / 1e9 + width,
                "",
                sp.PALETTE[i % len(sp.PALETTE)],
                1.0,
                f"{k} by process {e['process']} at {e['time'] / 1e9:.2f}s",
            )
            for e in events
            if e["f"] == k
        ]
    if not lanes:
        return '<p class="note">No client events (crash, rebalance, leave, join, stall).</p>'
    note = " (first 2000 only)" if data.get("client_events_capped") else ""
    return sp.lanes_chart(axis, lanes, bands, "client events" + note)


# ---------------------------------------------------------------- witnesses


def _ops_of(data: dict[str, Any] | None, kind: str, **match: Any) -> list[dict[str, Any]]:
    rows = _get(data, f"witnesses.{kind}", []) or []
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def _active(fs: list[Fault], t0: float, t1: float) -> list[str]:
    return [f.band.label for f in fs if f.band.t0 <= t1 and f.band.t1 >= t0]


def explain(
    name: str, ex: dict[str, Any], data: dict[str, Any] | None, fs: list[Fault], t_end: float
) -> tuple[str, float | None]:
    """An example in words, from the history: its sends, its reads, what was read at
    its position instead, and the faults in between. Returns (html, time to mark)."""
    parts: list[str] = []
    value = ex.get("value")
    mark: float | None = None
    sends = _ops_of(data, "sends", value=value) if value is not None else []
    reads = _ops_of(data, "reads", value=value) if value is not None else []
    for s in sends[:4]:
        acked = s.get("outcome") == "ok"
        where = f"partition {s.get('partition')} offset {s.get('offset')}"
        parts.append(
            f"Sent by process {_e(s.get('process'))} in {_e(s.get('f'))} op #{_e(s.get('index'))}"
            f": invoked {_s(s.get('invoke_time'))}, completed {_s(s.get('time'))} "
            f"<b>{_e(s.get('outcome'))}</b>" + (f" at {where}" if acked else "") + "."
        )
        if acked and mark is None and isinstance(s.get("time"), int):
            mark = s["time"] / 1e9
    if value is not None and data is not None:
        if reads:
            for r in reads[:4]:
                parts.append(
                    f"Read by {_e(r.get('role') or 'consumer')} process {_e(r.get('process'))} "
                    f"(op #{_e(r.get('index'))}, {_s(r.get('time'))}) at partition "
                    f"{_e(r.get('partition'))} offset {_e(r.get('offset'))}."
                )
            if len(reads) > 4:
                parts.append(f"... and {len(reads) - 4} more reads of it.")
        else:
            parts.append("No read ever returned this value.")
    pos = (ex.get("topic"), ex.get("partition"), ex.get("offset"))
    if None not in pos:
        at = [
            r for r in _ops_of(data, "at_position", topic=pos[0], partition=pos[1], offset=pos[2])
        ]
        others = [r for r in at if r.get("value") != value]
        if others:
            parts.append(
                f"At partition {pos[1]} offset {pos[2]}, reads returned instead: "
                + "; ".join(
                    f"value {_e(r.get('value'))} ({_e(r.get('role') or 'consumer')} process "
                    f"{_e(r.get('process'))}, {_s(r.get('time'))})"
                    for r in others[:4]
                )
                + "."
            )
        elif value is not None and data is not None and not at:
            parts.append(f"No read returned any record at partition {pos[1]} offset {pos[2]}.")
    if None not in pos and data is not None:
        past = [
            r
            for r in _ops_of(data, "past_position")
            if (r.get("p_topic"), r.get("p_partition"), r.get("p_offset")) == pos
        ]
        if past and not reads:
            parts.append(
                f"Reads that went past offset {pos[2]} first: "
                + "; ".join(
                    f"{_e(r.get('role') or 'consumer')} process {_e(r.get('process'))} read "
                    f"offset {_e(r.get('offset'))} (value {_e(r.get('value'))}, op "
                    f"#{_e(r.get('index'))}, {_s(r.get('time'))})"
                    for r in past
                )
                + "."
            )
    if name == "lost-write":
        reason = ex.get("reason")
        if reason == "read past":
            parts.append(
                f"Reads of partition {_e(ex.get('partition'))} reached offset "
                f"{_e(ex.get('max_read_offset'))}, past the acknowledged offset, "
                "so the value is not late: it is gone."
            )
        elif reason == "truncated":
            parts.append(
                "The final drain read this partition to its end, below the acknowledged "
                "offset: the log was truncated after the acknowledgement."
            )
        elif reason == "read to end":
            parts.append(
                "No offset was ever known (acks=0), and the final drain read the partition "
                "to its end without finding it."
            )
    if mark is not None:
        last_read = max(
            (r["time"] / 1e9 for r in reads if isinstance(r.get("time"), int)), default=t_end
        )
        active = _active(fs, mark, last_read)
        parts.append(
            "Faults active between the acknowledgement and the last read: "
            + (", ".join(_e(a) for a in active) if active else "none")
            + "."
        )
    fields = ", ".join(f"{_e(k)}={_e(json.dumps(v))}" for k, v in ex.items())
    parts.append(f'<span class="fields">evidence: {fields}</span>')
    return " ".join(parts), mark


def anomalies_section(
    inp: Inputs, fs: list[Fault], t_end: float
) -> tuple[str, list[tuple[float, str]]]:
    markers: list[tuple[float, str]] = []
    if inp.results is None:
        return "<p>No anomalies to show: the run was not analyzed.</p>", markers
    allowed = set(inp.results.get("allowed", []))
    out: list[str] = []
    for name in ANOMALY_TYPES:
        a = inp.results.get("anomalies", {}).get(name) or {}
        count = a.get("count")
        if not count and count is not None:
            continue
        verdict = (
            "could not be decided"
            if count is None
            else ("allowed by this config" if name in allowed else "forbidden by this config")
        )
        out.append(
            f'<section class="anomaly" id="a-{name}"><h3>{_e(name)}: '
            f"{'?' if count is None else count} {_e(a.get('unit', ''))}, "
            f"{verdict}</h3>"
        )
        out.append(f"<p>{_e(ANOMALIES[name].definition)}.</p>")
        if count is None:
            out.append(f'<p class="problem">The check failed: {_e(a.get("error", ""))}</p>')
        items = []
        for i, ex in enumerate((a.get("examples") or [])[:MAX_WITNESSES]):
            if not isinstance(ex, dict):
                continue
            text, mark = explain(name, ex, inp.data, fs, t_end)
            tag = f"{name} W{i + 1}"
            link = ""
            if mark is not None:
                markers.append((mark, f"{name} W{i + 1}"))
                link = f' <a href="#timeline">(W{i + 1} at {mark:.1f}s on the timeline)</a>'
            items.append(
                f'<li class="witness" id="w-{name}-{i + 1}"><b>{_e(tag)}</b>{link}: {text}</li>'
            )
        if items:
            shown = len(items)
            more = f" (showing {shown} of {count})" if count and count > shown else ""
            out.append(f"<p>Witnesses{more}:</p><ol>{''.join(items)}</ol>")
        out.append("</section>")
    if not out:
        return "<p>No anomaly was found.</p>", markers
    return "\n".join(out), markers


# ---------------------------------------------------------------- offsets and facts


def offsets_section(inp: Inputs, axis: sp.Axis, bands: list[sp.Band]) -> str:
    data = inp.data
    if data is None:
        return '<p class="missing">No offset data (report-data.json is missing).</p>'
    w = data["bucket_s"]
    t0 = data["t0"] / 1e9
    by_tp: dict[tuple[str, int], list[tuple[float, float, int, int, str]]] = {}
    for r in data.get("offsets", []):
        color = "#1f77b4" if r["kind"] == "acked" else "#2ca02c"
        by_tp.setdefault((r["topic"], r["partition"]), []).append(
            (t0 + r["bucket"] * w, w, r["lo"], r["hi"], color)
        )
    marks: dict[tuple[str, int], list[tuple[float, int, str, str]]] = {}
    for name, a in (_get(inp.results, "anomalies", {}) or {}).items():
        for ex in a.get("examples") or []:
            if not isinstance(ex, dict) or not isinstance(ex.get("offset"), int):
                continue
            tp = (ex.get("topic"), ex.get("partition"))
            sends = _ops_of(data, "sends", value=ex.get("value"))
            t = next((s["time"] / 1e9 for s in sends if isinstance(s.get("time"), int)), None)
            if t is None:
                at = _ops_of(data, "at_position", topic=tp[0], partition=tp[1], offset=ex["offset"])
                t = next((r["time"] / 1e9 for r in at if isinstance(r.get("time"), int)), t0)
            marks.setdefault(tp, []).append(  # type: ignore[arg-type]
                (
                    t,
                    ex["offset"],
                    f"{name}: value {ex.get('value')} at offset {ex['offset']}",
                    "#d62728",
                )
            )
    if not by_tp:
        return "<p>No acknowledged send or read with an offset.</p>"
    out = [
        "<p>Blue: acknowledged sends, green: reads, as the offset range per "
        f"{w}s bucket. Red crosses: anomaly positions (all of them, whatever the "
        "down-sampling).</p>"
    ]
    for tp in sorted(by_tp, key=lambda k: (str(k[0]), k[1]))[:24]:
        out.append(
            sp.offsets_chart(
                axis, by_tp[tp], marks.get(tp, []), bands, f"{tp[0]} partition {tp[1]}"
            )
        )
    if len(by_tp) > 24:
        out.append(f"<p>{len(by_tp) - 24} more partitions not drawn.</p>")
    return "\n".join(out)


def facts_section(inp: Inputs) -> str:
    out = []
    phases = _get(inp.run, "phases", {}) or {}
    st = _get(inp.results, "stats", {}) or {}
    rows = [[k, f"{v:.1f} s"] for k, v in phases.items() if isinstance(v, (int, float))]
    span = st.get("span_s") or 0
    if span:
        rows.append(["client ops per second", f"{st.get('client_ops', 0) / span:.0f}"])
    rows.append(["sends attempted", st.get("sends_attempted", "?")])
    rows.append(
        ["send outcomes", ", ".join(f"{k} {v}" for k, v in (st.get("send_outcomes") or {}).items())]
    )
    rows.append(["records read", st.get("records_read", "?")])
    hist = _get(inp.results, "history", {}) or {}
    rows.append(["history damaged lines", hist.get("damaged_lines", "?")])
    rows.append(["history last line", hist.get("last_line", "?")])
    rows.append(["analysis time", f"{_get(inp.results, 'analysis.total_s', '?')} s"])
    out.append(_table(["fact", "value"], rows))
    logs = sorted((inp.run_dir / "logs").glob("*.log")) if (inp.run_dir / "logs").is_dir() else []
    extra = [p for p in (inp.run_dir / "clients.log",) if p.is_file()]
    if logs or extra:
        links = [
            f'<a href="{_e(rel)}">{_e(rel)}</a>'
            for rel in (os.path.relpath(p, inp.run_dir) for p in [*logs, *extra])
        ]
        out.append("<p>Logs: " + ", ".join(links) + "</p>")
    else:
        out.append("<p>No broker or proxy logs in this run directory.</p>")
    if inp.schedule:
        keys = sorted({k for s in inp.schedule if isinstance(s, dict) for k in s})
        rows = [
            [i + 1, *(json.dumps(s.get(k)) for k in keys)]
            for i, s in enumerate(inp.schedule)
            if isinstance(s, dict)
        ]
        out.append("<h3>Fault schedule (schedule.json)</h3>" + _table(["#", *keys], rows))
    return "\n".join(out)


_CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1150px}
h1.verdict{font-size:20px;padding:8px 12px;border-radius:4px}
h1.valid{background:#e3f4e3}h1.invalid{background:#fbe0e0}h1.unknown{background:#fff2cc}
h2{border-bottom:1px solid #ccc;margin-top:28px}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top}th{background:#f4f4f4}
.cols{display:flex;gap:18px;flex-wrap:wrap}.problem{color:#a00}.missing{color:#8a6d00}
.claim{background:#eef3fb;padding:6px 10px}.fields{color:#666;font-size:11px;display:block}
li.witness{margin-bottom:6px}svg{display:block;margin:2px 0}
"""


def _cluster(axis: sp.Axis, markers: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Witnesses of one anomaly a few pixels apart share one marker ("lost-write
    W1-W8"), so their labels do not print over each other."""
    out: list[tuple[float, str, list[int]]] = []  # t, anomaly, witness numbers
    for t, label in sorted(markers, key=lambda m: (m[1].rsplit(" ", 1)[0], m[0])):
        name, w = label.rsplit(" W", 1)
        if out and out[-1][1] == name and axis.x(t) - axis.x(out[-1][0]) < 40:
            out[-1][2].append(int(w))
        else:
            out.append((t, name, [int(w)]))
    return [(t, f"{n} W{min(ws)}" + (f"-W{max(ws)}" if len(ws) > 1 else "")) for t, n, ws in out]


def render(inp: Inputs) -> str:
    data = inp.data
    t_start = data["t0"] / 1e9 if data else None
    t_end = data["t1"] / 1e9 if data else None
    st_times = [s["time"] / 1e9 for s in inp.states]
    lo = min([t for t in (t_start, *st_times[:1]) if t is not None], default=0.0)
    hi = max([t for t in (t_end, *st_times[-1:]) if t is not None], default=lo + 1)
    axis = sp.Axis(lo, max(hi, lo + 1))
    fs = faults((data or {}).get("nemesis", []), axis.t1)
    bands = [f.band for f in fs]
    fs_seen = {r["f"] for r in (data or {}).get("throughput", [])}
    anomalies_html, markers = anomalies_section(inp, fs, axis.t1)
    timeline = [sp.fault_strip(axis, bands, _cluster(axis, markers))]
    if data is not None:
        timeline += [
            _throughput(data, axis, bands),
            _latency(data, axis, bands),
        ]
    timeline.append(_state_lanes(inp, axis, bands))
    if data is not None:
        timeline.append(_client_lane(data, axis, bands))
    title = f"kafka-trial report: {inp.run_dir.name}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title>"
        # The page must not reach any host, even by accident.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<style>{_CSS}</style></head><body>"
        f"<p>{_e(title)}</p>"
        + header(inp, fs_seen)
        + '<h2 id="timeline">Timeline</h2>'
        + "<p>Shaded bands: faults, from the fault op's invoke to the op that healed it. "
        "Hatched: the fault op's outcome is unknown. W1, W2 ...: witnesses below, at "
        "their acknowledgement. Hover for details.</p>"
        + "\n".join(timeline)
        + '<h2 id="anomalies">Anomalies</h2>'
        + anomalies_html
        + '<h2 id="offsets">Offsets per partition</h2>'
        + offsets_section(inp, axis, bands)
        + '<h2 id="facts">Run facts</h2>'
        + facts_section(inp)
        + "</body></html>\n"
    )


def write_report(run_dir: Path, out_dir: Path | None = None) -> Path:
    """Write report.html (into out_dir, default run_dir) from whatever the run
    directory and the analysis's output hold."""
    html = render(load_inputs(run_dir, out_dir))
    out = (out_dir or run_dir) / REPORT
    tmp = out.with_name(REPORT + ".tmp")
    tmp.write_text(html)
    os.replace(tmp, out)
    return out
