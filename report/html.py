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

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES, NEED_WORDS, Need
from kafka_trial.checkers.claims import CLAIMS, Claim
from kafka_trial.checkers.results import AnomalyResult, Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.nemesis.catalog import MARK_OPS
from kafka_trial.nemesis.effects import effect
from kafka_trial.report import charts
from kafka_trial.report import svg_plots as sp
from kafka_trial.report.app_lanes import app_lanes, app_sentence
from kafka_trial.report.faults import Fault, faults
from kafka_trial.report.leaders import Handover, handover, sentence
from kafka_trial.report.witnesses import ack_time, explain, runs

REPORT = "report.html"

MAX_WITNESSES = 10


@dataclass
class Inputs:
    run_dir: Path
    results: Results | None = None
    data: dict[str, Any] | None = None
    spec: dict[str, Any] | None = None
    run: dict[str, Any] | None = None
    schedule: list[Any] | None = None
    states: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what the page cannot show, and why
    # Every time on the page counts from here (history clock, ns), and what it is.
    origin_ns: int = 0
    origin: str = "the start of the history (no fault phase start known)"


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


def _results(inp: Inputs, path: Path, run_dir: Path) -> Results | None:
    if not path.is_file():
        inp.missing.append(
            f"results.json is missing: no verdict; run `kafka-trial analyze {run_dir}`"
        )
        return None
    try:
        return Results.from_json(path)
    except TrialError as e:
        inp.missing.append(f"{e.problem} -- {e.fix}")
        return None


def load_inputs(run_dir: Path, out_dir: Path | None = None) -> Inputs:
    """run_dir: what the run wrote; out_dir: where the analysis wrote (default run_dir)."""
    inp = Inputs(run_dir)
    results_dir = out_dir or run_dir
    inp.results = _results(inp, results_dir / "results.json", run_dir)
    inp.data = _json_file(
        inp,
        "report-data.json",
        f"no timeline, latency or witness ops; run `kafka-trial report {run_dir}`",
        results_dir,
    )
    inp.spec = _json_file(inp, "spec.json", "settings unknown (a bare history)")
    inp.run = _json_file(inp, "run.json", "no phase timings (the run did not finish)")
    inp.schedule = _json_file(inp, "schedule.json", "no fault schedule")
    _load_states(inp, run_dir / "cluster-state.jsonl")
    inp.origin_ns, inp.origin = fault_phase_origin(inp.run, inp.schedule, inp.data)
    if inp.origin_ns:
        _shift(inp.data, inp.origin_ns)
        _shift(inp.states, inp.origin_ns)
    return inp


def _load_states(inp: Inputs, states: Path) -> None:
    if not states.is_file():
        inp.missing.append("cluster-state.jsonl is missing: no leader, ISR or broker lanes")
        return
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


def fault_phase_origin(
    run: dict[str, Any] | None, schedule: list[Any] | None, data: dict[str, Any] | None
) -> tuple[int, str]:
    """Where the page's clock starts, in history nanoseconds: the start of the fault
    phase, from which schedule.json's at_s counts, so a band drawn at 20 s is the step
    scheduled `at_s: 20`. Runs written before run.json recorded it get an estimate:
    the first nemesis op, less its step's at_s."""
    start = _get(run, "fault_phase_start_ns")
    if isinstance(start, int) and not isinstance(start, bool):
        return start, "the start of the fault phase (run.json)"
    first = next(
        (o for o in (data or {}).get("nemesis", []) if isinstance(o.get("time"), int)), None
    )
    at = schedule[0].get("at_s") if schedule and isinstance(schedule[0], dict) else None
    if first is not None and isinstance(at, (int, float)):
        origin = max(first["time"] - round(at * 1e9), 0)
        return origin, "the start of the fault phase (estimated: the first fault op less its at_s)"
    return 0, "the start of the history (no fault phase start known)"


def _is_time(key: str) -> bool:
    """The history's times, wherever they are copied (report-data.json's rows, its
    span, cluster-state.jsonl, a cycle witness's steps): "time", "*_time", t0 and t1."""
    return key in ("time", "t0", "t1") or key.endswith("_time")


def _shift(obj: Any, origin_ns: int) -> None:
    """Move every history time in `obj` to the page's clock, in place. A nemesis op's
    value is what the op recorded, not a time of ours: left alone."""
    if isinstance(obj, list):
        for v in obj:
            _shift(v, origin_ns)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if _is_time(k) and isinstance(v, int) and not isinstance(v, bool):
                obj[k] = v - origin_ns
            elif k != "value":
                _shift(v, origin_ns)


def _on_page_clock(examples: Any, inp: Inputs) -> list[dict[str, Any]]:
    """Witnesses as results.json holds them, their times moved to the page's clock."""
    out = json.loads(json.dumps(list(examples)))
    _shift(out, inp.origin_ns)
    return out


# ---------------------------------------------------------------- helpers


def _e(v: Any) -> str:
    return escape(str(v))


def _table(headers: list[str], rows: list[list[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _get(d: dict[str, Any] | None, path: str, default: Any = None) -> Any:
    cur: Any = d
    for k in path.split("."):
        if not isinstance(cur, dict) or k not in cur:
            return default
        cur = cur[k]
    return cur


# ---------------------------------------------------------------- sections


def verdict_sentence(results: Results | None) -> tuple[str, str]:
    if results is None:
        return "unknown", "No verdict: this run was never analyzed (results.json is missing)."
    if results.valid is True:
        seen = results.seen()
        extra = (
            " Allowed by this config and seen: "
            + ", ".join(f"{n} ({c})" for n, c in seen.items())
            + "."
            if seen
            else ""
        )
        return "valid", "VALID: no anomaly this config forbids was found." + extra
    if results.valid is False:
        return "invalid", "INVALID: " + ", ".join(
            f"{c} {n}" for n, c in results.forbidden().items()
        ) + " found, which this config does not allow."
    why = "; ".join(results.problems) or "a check could not decide"
    return "unknown", f"UNKNOWN: the history cannot decide the verdict ({why})."


def clients_present(spec: dict[str, Any] | None, fs: set[str]) -> set[Need]:
    """The kinds of client a run had, from its settings and the op kinds it recorded."""
    copier = (_get(spec, "copier.workers") or 0) > 0
    present: set[Need] = set()
    if "process" in fs or _get(spec, "consumer.mode") == "subscribe":
        present.add("group")
    if copier:
        present.add("copier")
    if "txn" in fs or bool(_get(spec, "producer.transactional")):
        present.add("transactions")
    if (_get(spec, "consumer.workers") or 0) > 0 or "process" in fs or copier:
        present.add("consumers")
    if "poll" in fs or "txn" in fs:
        present.add("reads")
    if _get(spec, "app.command") or _get(spec, "app.image") or "app-start" in fs:
        present.add("app")
    return present


def _consumers(spec: dict[str, Any]) -> str:
    workers = _get(spec, "consumer.workers")
    if workers == 0:
        return "none (only the final drain reads)"
    return f"{workers if workers is not None else '?'} ({_get(spec, 'consumer.mode', '?')})"


def _settings(spec: dict[str, Any], present: set[Need]) -> list[list[Any]]:
    """The settings that shape what this run could do; a client's settings only if the
    run had that client (isolation level: consumers, and transactions' own reads)."""
    rows: list[tuple[str, Any, set[Need] | None]] = [
        ("acks", _get(spec, "producer.acks", "?"), None),
        ("idempotence", _get(spec, "producer.idempotence", "?"), None),
        ("max in flight", _get(spec, "producer.max_in_flight", "?"), None),
        ("retries", _get(spec, "producer.retries", "?"), None),
        ("transactions", _get(spec, "producer.transactional", "?"), None),
        ("consumers", _consumers(spec), None),
        (
            "isolation level",
            _get(spec, "consumer.isolation_level", "?"),
            {"consumers", "transactions"},
        ),
        ("commit style", _get(spec, "consumer.commit", "?"), {"group"}),
        ("replication factor", _get(spec, "topic.replication_factor", "?"), None),
        ("min.insync.replicas", _get(spec, "topic.min_insync_replicas", "?"), None),
        ("unclean leader election", _get(spec, "topic.unclean_leader_election", "?"), None),
        ("faults", ", ".join(_get(spec, "nemesis.faults", []) or ["none"]), None),
        ("allowed anomalies", ", ".join(_get(spec, "check.allowed", []) or ["none"]), None),
    ]
    return [[k, v] for k, v, needs in rows if needs is None or needs & present]


def _run_facts(inp: Inputs) -> list[list[Any]]:
    spec = inp.spec or {}
    span = inp.results.stats.span_s if inp.results is not None else "?"
    return [
        ["run", inp.run_dir.name],
        ["preset / name", _get(spec, "name", "?")],
        ["Kafka", _get(inp.run, "kafka_version", _get(spec, "cluster.kafka_version", "?"))],
        ["seed", _get(spec, "seed", "?")],
        ["fault phase", f"{_get(spec, 'duration_s', '?')} s"],
        ["history span", f"{span} s"],
        ["faults injected", inp.results.stats.faults_injected if inp.results else "?"],
        [
            "reproduce",
            f"kafka-trial run --config {shlex.quote(str(inp.run_dir / 'spec.json'))}"
            if inp.spec
            else "(no spec.json: not reproducible from this directory)",
        ],
    ]


def header(inp: Inputs, fs: set[str]) -> str:
    cls, sentence = verdict_sentence(inp.results)
    out = [f'<h1 class="verdict {cls}">{_e(sentence)}</h1>']
    claim = CLAIMS.get(_get(inp.spec, "name", ""))
    if claim is not None:
        out.append(_claim(claim, inp.results))
    out.append('<div class="cols">')
    out.append(
        "<div><h3>Settings that matter</h3>"
        + _table(["setting", "value"], _settings(inp.spec or {}, clients_present(inp.spec, fs)))
        + "</div>"
    )
    out.append("<div><h3>Run</h3>" + _table(["fact", "value"], _run_facts(inp)) + "</div>")
    out.append("<div><h3>Checks</h3>" + _counts(inp, fs) + "</div></div>")
    if inp.results is not None:
        out += [f'<p class="problem">Problem: {_e(p)}</p>' for p in inp.results.problems]
    out += [f'<p class="missing">Not shown: {_e(m)}</p>' for m in inp.missing]
    return "\n".join(out)


def _claim(claim: Claim, results: Results | None) -> str:
    return (
        f'<p class="claim"><b>Claim {claim.id}</b>: {_e(claim.text)} '
        f"(expected: {_e(claim.expectation())}). "
        f"<b>{_e(claim.judge(results).text)}</b></p>"
    )


def _counts(inp: Inputs, fs: set[str]) -> str:
    if inp.results is None:
        return "<p>no results</p>"
    present = clients_present(inp.spec, fs)
    rows = []
    for name in ANOMALY_TYPES:
        a = inp.results.anomalies.get(name)
        c = None if a is None else a.count
        entry = ANOMALIES[name]
        if c is None and a is not None and a.skipped:
            shown, tag = "-", f"not checked: {a.skipped}"[:120]
        elif c is None:
            shown, tag = "?", f"could not decide: {a.error if a else 'missing'}"[:120]
        elif c == 0 and inp.data is not None and not entry.applicable(present):
            shown, tag = "not applicable", f"no {NEED_WORDS[entry.needs]} in this run"  # type: ignore[index]
        else:
            shown = str(c)
            tag = _tag(inp.results, name) if c else ""
        link = f'<a href="#a-{name}">{_e(name)}</a>' if c else _e(name)
        rows.append(f"<tr><td>{link}</td><td>{_e(shown)}</td><td>{_e(tag)}</td></tr>")
    return (
        '<table class="counts"><thead><tr><th>anomaly</th><th>count</th><th></th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _tag(results: Results, name: str) -> str:
    """A found anomaly's word in the counts table; an undecided count is no finding."""
    judged = results.judged(name)
    return {"undecided": "undecided", "allowed by this config": "allowed"}.get(judged, "FORBIDDEN")


Marker = tuple[float, str, int, int]  # time, anomaly, first and last witness number


def _wtag(lo: int, hi: int) -> str:
    return f"W{lo}" if lo == hi else f"W{lo}-W{hi}"


def _span(xs: list[int], what: str) -> str:
    """ "values 5-9" for consecutive numbers, "values 5, 7" otherwise."""
    if len(xs) > 1 and xs == list(range(xs[0], xs[0] + len(xs))):
        return f"{what} {xs[0]}-{xs[-1]}"
    return f"{what} " + ", ".join(map(str, xs))


def _run_intro(run: list[dict[str, Any]], unit: str, acks: list[float]) -> str:
    """What a run of alike witnesses is, before the first of them is explained."""
    offsets = [ex["offset"] for ex in run]
    values = [ex.get("value") for ex in run]
    when = f", acknowledged {min(acks):.3f}s to {max(acks):.3f}s" if acks else ""
    vals = _span(values, "values") if all(isinstance(v, int) for v in values) else ""
    return (
        f"{len(run)} {_e(unit)} at consecutive offsets {offsets[0]}-{offsets[-1]} of "
        f"partition {_e(run[0].get('partition'))} ({_e(vals)}{_e(when)}), alike in all "
        "but value and offset. The first of them: "
    )


def _witness_items(
    name: str,
    a: AnomalyResult,
    shown: list[dict[str, Any]],
    inp: Inputs,
    fs: list[Fault],
    t_end: float,
) -> tuple[list[str], list[Marker], list[list[int]]]:
    """One list item per witness shown, or per run of witnesses at consecutive
    positions with the same explanation; the runs, by index into `shown`."""
    groups = runs(shown, inp.data, fs, t_end)
    items: list[str] = []
    markers: list[Marker] = []
    for run in groups:
        lo, hi = run[0] + 1, run[-1] + 1
        tag = f"{name} {_wtag(lo, hi)}"
        text, mark = explain(name, shown[run[0]], inp.data, fs, t_end)
        intro = ""
        if len(run) > 1:
            acks = [t for i in run if (t := ack_time(shown[i], inp.data)) is not None]
            intro = _run_intro([shown[i] for i in run], a.unit, acks)
        link = ""
        if mark is not None:
            markers.append((mark, name, lo, hi))
            link = f' <a href="#timeline">({_wtag(lo, hi)} at {mark:.1f}s on the timeline)</a>'
        items.append(
            f'<li class="witness" id="w-{name}-{lo}"><b>{_e(tag)}</b>{link}: {intro}{text}</li>'
        )
    return items, markers, groups


def _leaders(shown: list[dict[str, Any]], groups: list[list[int]], inp: Inputs) -> str:
    """In words, which broker led each witness's partition when it was acknowledged
    and which took over: one sentence per leader and successor."""
    by: dict[Handover, list[tuple[str, float, float]]] = {}
    for run in groups:
        acks = [t for i in run if (t := ack_time(shown[i], inp.data)) is not None]
        p = shown[run[0]].get("partition")
        if not acks or not isinstance(p, int):
            continue
        h = handover(inp.states, p, min(acks))
        if h is not None:
            by.setdefault(h, []).append((_wtag(run[0] + 1, run[-1] + 1), min(acks), max(acks)))
    said = [
        sentence(
            h, ", ".join(w for w, _, _ in ws), min(t for _, t, _ in ws), max(t for _, _, t in ws)
        )
        for h, ws in by.items()
    ]
    if not said:
        return ""
    if str(_get(inp.spec, "producer.acks")) == "1":
        said.append("With acks=1 a leader acknowledges alone, without waiting for any follower.")
    return '<p class="leaders">Leaders (cluster-state.jsonl): ' + _e(" ".join(said)) + "</p>"


def anomalies_section(inp: Inputs, fs: list[Fault], t_end: float) -> tuple[str, list[Marker]]:
    markers: list[Marker] = []
    if inp.results is None:
        return "<p>No anomalies to show: the run was not analyzed.</p>", markers
    out: list[str] = []
    for name in ANOMALY_TYPES:
        a = inp.results.anomalies.get(name)
        if a is None or a.skipped or (not a.count and a.count is not None):
            continue
        out.append(
            f'<section class="anomaly" id="a-{name}"><h3>{_e(name)}: '
            f"{'?' if a.count is None else a.count} {_e(a.unit)}, "
            f"{_e(inp.results.judged(name))}</h3>"
        )
        out.append(f"<p>{_e(inp.results.definition(name))}.</p>")
        if a.count is None:
            out.append(f'<p class="problem">The check failed: {_e(a.error or "")}</p>')
        shown = _on_page_clock(a.examples[:MAX_WITNESSES], inp)
        items, marks, groups = _witness_items(name, a, shown, inp, fs, t_end)
        markers += marks
        if name in ANOMALIES and not ANOMALIES[name].allowed_by_default:
            # Normal behaviour (the registry's word) is no leader's doing.
            out.append(_leaders(shown, groups, inp))
        if items:
            n = min(len(a.examples), MAX_WITNESSES)
            more = f" (showing {n} of {a.count})" if a.count and a.count > n else ""
            out.append(f"<p>Witnesses{more}:</p><ol>{''.join(items)}</ol>")
        out.append("</section>")
    if not out:
        return "<p>No anomaly was found.</p>", markers
    return "\n".join(out), markers


# ---------------------------------------------------------------- facts


def _fact_rows(inp: Inputs) -> list[list[Any]]:
    phases = _get(inp.run, "phases", {}) or {}
    rows: list[list[Any]] = [
        [k, f"{v:.1f} s"] for k, v in phases.items() if isinstance(v, (int, float))
    ]
    r = inp.results
    if r is None:
        unknown = ("sends attempted", "records read", "history damaged lines", "history last line")
        return [*rows, *([k, "?"] for k in unknown), ["analysis time", "? s"]]
    st = r.stats
    if st.span_s:
        rows.append(["client ops per second", f"{st.client_ops / st.span_s:.0f}"])
    rows += [
        ["sends attempted", st.sends_attempted],
        ["send outcomes", ", ".join(f"{k} {v}" for k, v in st.send_outcomes.items())],
        ["records read", st.records_read],
        ["history damaged lines", r.history.damaged_lines],
        ["history last line", r.history.last_line],
        ["analysis time", f"{r.analysis.total_s} s"],
    ]
    return rows


def _fault_effects(inp: Inputs) -> str:
    """Each nemesis op that did something its label does not say, as its completion
    records it (the nemesis package's own reading, nemesis/effects.py)."""
    rows = []
    for o in (inp.data or {}).get("nemesis", []):
        # A mark is the user's word, not a fault: the timeline shows its text.
        if o.get("type") not in ("ok", "info") or o.get("f") in MARK_OPS:
            continue
        said = effect(o.get("f") or "", o["type"], o.get("value"), o.get("error"))
        if said:
            rows.append([f"{o['time'] / 1e9:.1f}", o.get("f"), o["type"], said])
    if not rows:
        return ""
    return "<h3>What the faults did</h3>" + _table(["s", "op", "type", "effect"], rows)


def facts_section(inp: Inputs) -> str:
    out = [_table(["fact", "value"], _fact_rows(inp)), _fault_effects(inp)]
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


def _cluster(axis: sp.Axis, markers: list[Marker]) -> list[tuple[float, str]]:
    """Witnesses of one anomaly a few pixels apart share one marker ("lost-write
    W1-W8"): ten labels in a row would say no more than one."""
    out: list[Marker] = []
    for t, name, lo, hi in sorted(markers, key=lambda m: (m[1], m[0])):
        if out and out[-1][1] == name and axis.x(t) - axis.x(out[-1][0]) < 40:
            last = out[-1]
            out[-1] = (last[0], name, min(last[2], lo), max(last[3], hi))
        else:
            out.append((t, name, lo, hi))
    return [(t, f"{n} {_wtag(lo, hi)}") for t, n, lo, hi in out]


def _marks(data: dict[str, Any] | None) -> list[tuple[float, str]]:
    """Outside events the user marked (`kafka-trial mark`), with their text, where the
    run recorded them: the user's word on what happened, neither fault nor heal."""
    out = []
    for o in (data or {}).get("nemesis", []):
        v = o.get("value")
        if o.get("type") == "invoke" and o.get("f") in MARK_OPS and isinstance(v, dict):
            text = str(v.get("text", ""))
            text = text if len(text) <= 80 else text[:79] + "\u2026"
            out.append((o["time"] / 1e9, f"mark: {text}"))
    return out


def _clock_note(inp: Inputs) -> str:
    if inp.origin_ns:
        how = (
            f"as schedule.json's at_s counts them (history.jsonl's time less "
            f"{inp.origin_ns / 1e9:.3f}s)"
        )
    else:
        how = "history.jsonl's time; schedule.json's at_s may count from later"
    return f'<p class="clock">Times on this page: seconds from {_e(inp.origin)}, {_e(how)}.</p>'


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
    timeline = [sp.fault_strip(axis, bands, _cluster(axis, markers) + _marks(data))]
    if data is not None:
        timeline += [
            charts.throughput(data, axis, bands),
            charts.latency(data, axis, bands),
        ]
    timeline.append(charts.state_lanes(inp.states, axis, bands))
    if data is not None:
        timeline.append(charts.client_lane(data, axis, bands))
        timeline.append(app_lanes(data, axis, bands))
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
        + _clock_note(inp)
        + "\n".join(timeline)
        + '<h2 id="anomalies">Anomalies</h2>'
        + app_sentence(inp.results, data)
        + anomalies_html
        + '<h2 id="offsets">Offsets per partition</h2>'
        + charts.offsets_section(inp.results, data, axis, bands)
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
