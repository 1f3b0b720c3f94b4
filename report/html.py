"""RUN_DIR/report.html: one self-contained page that shows what happened in a run and
why the verdict is what it is.

It reads only files the run and the analysis wrote (results.json, report-data.json,
spec.json, run.json, schedule.json, cluster-state.jsonl, logs/). Each may be missing
or cut off; the page then says so where that part would be, never a traceback. The
heavy lifting (per-second aggregates, the ops behind each witness) is Spark's
(spark_analysis/report_data.py), so building the page costs the same for any history.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, TypeVar

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES, NEED_WORDS, Need
from kafka_trial.checkers.claims import CLAIMS, Claim
from kafka_trial.checkers.results import AnomalyResult, Example, Results
from kafka_trial.contracts.cluster_state import STATES_FILE, StateSample, read_states
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.report_data import REPORT_DATA_FILE, ReportData
from kafka_trial.contracts.run_record import RUN_FILE, RunRecord
from kafka_trial.contracts.schedule import SCHEDULE_FILE, Step, read_schedule
from kafka_trial.contracts.spec import (
    SPEC_FILE,
    AppSpec,
    ClusterSpec,
    ConsumerSpec,
    CopierSpec,
    ProducerSpec,
    RunSpec,
    TopicSpec,
    read_spec,
)
from kafka_trial.nemesis.catalog import MARK_OPS
from kafka_trial.nemesis.effects import effect
from kafka_trial.report import charts
from kafka_trial.report import svg_plots as sp
from kafka_trial.report.app_lanes import app_lanes, app_sentence
from kafka_trial.report.faults import Fault, faults
from kafka_trial.report.leaders import Handover, handover, sentence
from kafka_trial.report.witnesses import ack_time, explain, runs

REPORT = "report.html"

T = TypeVar("T")

MAX_WITNESSES = 10


@dataclass
class Inputs:
    run_dir: Path
    results: Results | None = None
    data: ReportData | None = None
    spec: RunSpec | None = None
    run: RunRecord | None = None
    schedule: list[Step] | None = None
    states: list[StateSample] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what the page cannot show, and why
    # Every time on the page counts from here (history clock, ns), and what it is.
    origin_ns: int = 0
    origin: str = "the start of the history (no fault phase start known)"


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


def _report_data(inp: Inputs, path: Path, run_dir: Path) -> ReportData | None:
    lost = "no timeline, latency or witness ops"
    if not path.is_file():
        inp.missing.append(
            f"{REPORT_DATA_FILE} is missing: {lost}; run `kafka-trial report {run_dir}`"
        )
        return None
    try:
        return ReportData.load(path)
    except TrialError as e:
        inp.missing.append(f"{e.problem} -- {e.fix}: {lost}")
        return None


def load_inputs(run_dir: Path, out_dir: Path | None = None) -> Inputs:
    """run_dir: what the run wrote; out_dir: where the analysis wrote (default run_dir)."""
    inp = Inputs(run_dir)
    results_dir = out_dir or run_dir
    inp.results = _results(inp, results_dir / "results.json", run_dir)
    inp.data = _report_data(inp, results_dir / REPORT_DATA_FILE, run_dir)
    inp.spec = _contract(inp, SPEC_FILE, "settings unknown (a bare history)", read_spec)
    inp.run = _contract(inp, RUN_FILE, "no phase timings (the run did not finish)", RunRecord.read)
    inp.schedule = _contract(inp, SCHEDULE_FILE, "no fault schedule", read_schedule)
    _load_states(inp, run_dir / STATES_FILE)
    inp.origin_ns, inp.origin = fault_phase_origin(inp.run, inp.schedule, inp.data)
    if inp.origin_ns:
        inp.data = inp.data.shifted(inp.origin_ns) if inp.data is not None else None
        inp.states = [s.shifted(inp.origin_ns) for s in inp.states]
    return inp


def _contract(inp: Inputs, name: str, why: str, read: Callable[[Path], T]) -> T | None:
    """A run-directory file through its contract; what is missing or does not load is
    said on the page (with what to re-run), never raised."""
    if not (inp.run_dir / name).is_file():
        inp.missing.append(f"{name} is missing: {why}")
        return None
    try:
        return read(inp.run_dir)
    except TrialError as e:
        inp.missing.append(f"{e.problem} -- {e.fix}: {why}")
        return None


def _load_states(inp: Inputs, states: Path) -> None:
    if not states.is_file():
        inp.missing.append(f"{STATES_FILE} is missing: no leader, ISR or broker lanes")
        return
    timeline = read_states(states)
    inp.states = timeline.samples
    if timeline.damaged:
        inp.missing.append(f"{STATES_FILE}: {timeline.damaged} line(s) cut off or damaged, skipped")


def fault_phase_origin(
    run: RunRecord | None, schedule: list[Step] | None, data: ReportData | None
) -> tuple[int, str]:
    """Where the page's clock starts, in history nanoseconds: the start of the fault
    phase, from which schedule.json's at_s counts, so a band drawn at 20 s is the step
    scheduled `at_s: 20`. Runs written before run.json recorded it get an estimate:
    the first nemesis op, less its step's at_s."""
    start = run.fault_phase_start_ns if run is not None else None
    if start is not None:
        return start, "the start of the fault phase (run.json)"
    first = data.nemesis[0] if data is not None and data.nemesis else None
    at = schedule[0].at_s if schedule else None
    if first is not None and at is not None:
        origin = max(first.time - round(at * 1e9), 0)
        return origin, "the start of the fault phase (estimated: the first fault op less its at_s)"
    return 0, "the start of the history (no fault phase start known)"


# ---------------------------------------------------------------- helpers


def _e(v: Any) -> str:
    return escape(str(v))


def _table(headers: list[str], rows: list[list[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


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


def _part(spec: RunSpec | None, name: str) -> Any:
    """A key of the spec as spec.json holds it, or None where it does not: a bare
    history has no spec, and the pytest plugin's holds only its `check` section."""
    return getattr(spec, name) if spec is not None and name in spec.model_fields_set else None


def clients_present(spec: RunSpec | None, fs: set[str]) -> set[Need]:
    """The kinds of client a run had, from its settings and the op kinds it recorded."""
    producer: ProducerSpec | None = _part(spec, "producer")
    consumer: ConsumerSpec | None = _part(spec, "consumer")
    copier_spec: CopierSpec | None = _part(spec, "copier")
    app: AppSpec | None = _part(spec, "app")
    copier = copier_spec is not None and copier_spec.workers > 0
    present: set[Need] = set()
    if "process" in fs or (consumer is not None and consumer.mode == "subscribe"):
        present.add("group")
    if copier:
        present.add("copier")
    if "txn" in fs or (producer is not None and producer.transactional):
        present.add("transactions")
    if (consumer is not None and consumer.workers > 0) or "process" in fs or copier:
        present.add("consumers")
    if "poll" in fs or "txn" in fs:
        present.add("reads")
    if (app is not None and app.present) or "app-start" in fs:
        present.add("app")
    return present


def _consumers(consumer: ConsumerSpec | None) -> str:
    if consumer is None:
        return "? (?)"
    if consumer.workers == 0:
        return "none (only the final drain reads)"
    return f"{consumer.workers} ({consumer.mode})"


def _settings(spec: RunSpec | None, present: set[Need]) -> list[list[Any]]:
    """The settings that shape what this run could do; a client's settings only if the
    run had that client (isolation level: consumers, and transactions' own reads)."""
    p: ProducerSpec | None = _part(spec, "producer")
    c: ConsumerSpec | None = _part(spec, "consumer")
    t: TopicSpec | None = _part(spec, "topic")
    faults = n.faults if (n := _part(spec, "nemesis")) is not None else ()
    allowed = k.allowed if (k := _part(spec, "check")) is not None else ()
    q = "?"
    rows: list[tuple[str, Any, set[Need] | None]] = [
        ("acks", p.acks if p else q, None),
        ("idempotence", p.idempotence if p else q, None),
        ("max in flight", p.max_in_flight if p else q, None),
        ("retries", p.retries if p else q, None),
        ("transactions", p.transactional if p else q, None),
        ("consumers", _consumers(c), None),
        ("isolation level", c.isolation_level if c else q, {"consumers", "transactions"}),
        ("commit style", c.commit if c else q, {"group"}),
        ("replication factor", t.replication_factor if t else q, None),
        ("min.insync.replicas", t.min_insync_replicas if t else q, None),
        ("unclean leader election", t.unclean_leader_election if t else q, None),
        ("faults", ", ".join(faults or ["none"]), None),
        ("allowed anomalies", ", ".join(allowed or ["none"]), None),
    ]
    return [[k, v] for k, v, needs in rows if needs is None or needs & present]


def _kafka_version(inp: Inputs) -> str:
    if inp.run is not None and inp.run.kafka_version:
        return inp.run.kafka_version
    cluster: ClusterSpec | None = _part(inp.spec, "cluster")
    return cluster.kafka_version if cluster is not None else "?"


def _run_facts(inp: Inputs) -> list[list[Any]]:
    span = inp.results.stats.span_s if inp.results is not None else "?"
    duration = _part(inp.spec, "duration_s")
    return [
        ["run", inp.run_dir.name],
        ["preset / name", _part(inp.spec, "name") or "?"],
        ["Kafka", _kafka_version(inp)],
        ["seed", s if (s := _part(inp.spec, "seed")) is not None else "?"],
        ["fault phase", f"{duration if duration is not None else '?'} s"],
        ["history span", f"{span} s"],
        ["faults injected", inp.results.stats.faults_injected if inp.results else "?"],
        [
            "reproduce",
            f"kafka-trial run --config {shlex.quote(str(inp.run_dir / SPEC_FILE))}"
            if inp.spec is not None
            else "(no spec.json: not reproducible from this directory)",
        ],
    ]


def header(inp: Inputs, fs: set[str]) -> str:
    cls, sentence = verdict_sentence(inp.results)
    out = [f'<h1 class="verdict {cls}">{_e(sentence)}</h1>']
    claim = CLAIMS.get(_part(inp.spec, "name") or "")
    if claim is not None:
        out.append(_claim(claim, inp.results))
    out.append('<div class="cols">')
    out.append(
        "<div><h3>Settings that matter</h3>"
        + _table(["setting", "value"], _settings(inp.spec, clients_present(inp.spec, fs)))
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


def _run_intro(run: list[Example], unit: str, acks: list[float]) -> str:
    """What a run of alike witnesses is, before the first of them is explained."""
    offsets = [ex.offset for ex in run]
    values = [ex.value for ex in run if ex.value is not None]
    when = f", acknowledged {min(acks):.3f}s to {max(acks):.3f}s" if acks else ""
    vals = _span(values, "values") if len(values) == len(run) else ""
    return (
        f"{len(run)} {_e(unit)} at consecutive offsets {offsets[0]}-{offsets[-1]} of "
        f"partition {_e(run[0].partition)} ({_e(vals)}{_e(when)}), alike in all "
        "but value and offset. The first of them: "
    )


def _witness_items(
    name: str,
    a: AnomalyResult,
    shown: list[Example],
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


def _leaders(shown: list[Example], groups: list[list[int]], inp: Inputs) -> str:
    """In words, which broker led each witness's partition when it was acknowledged
    and which took over: one sentence per leader and successor."""
    by: dict[Handover, list[tuple[str, float, float]]] = {}
    for run in groups:
        acks = [t for i in run if (t := ack_time(shown[i], inp.data)) is not None]
        p = shown[run[0]].partition
        if not acks or p is None:
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
    producer: ProducerSpec | None = _part(inp.spec, "producer")
    if producer is not None and str(producer.acks) == "1":
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
        shown = [ex.shifted(inp.origin_ns) for ex in a.example_views()[:MAX_WITNESSES]]
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
    phases = inp.run.phases if inp.run is not None else {}
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
    for o in inp.data.nemesis if inp.data is not None else ():
        # A mark is the user's word, not a fault: the timeline shows its text.
        if o.type not in ("ok", "info") or o.f in MARK_OPS:
            continue
        said = effect(o.f, o.type, o.value, o.error)
        if said:
            rows.append([f"{o.time / 1e9:.1f}", o.f, o.type, said])
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
        # The columns in the order they always had: the step's keys, sorted.
        keys = sorted(f.name for f in dataclasses.fields(Step))
        rows = [
            [i + 1, *(json.dumps(getattr(s, k)) for k in keys)] for i, s in enumerate(inp.schedule)
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


def _marks(data: ReportData | None) -> list[tuple[float, str]]:
    """Outside events the user marked (`kafka-trial mark`), with their text, where the
    run recorded them: the user's word on what happened, neither fault nor heal."""
    out = []
    for o in data.nemesis if data is not None else ():
        if o.type == "invoke" and o.f in MARK_OPS and isinstance(o.value, dict):
            text = o.facts.text
            text = text if len(text) <= 80 else text[:79] + "\u2026"
            out.append((o.time / 1e9, f"mark: {text}"))
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
    t_start = data.t0 / 1e9 if data else None
    t_end = data.t1 / 1e9 if data else None
    st_times = [s.time / 1e9 for s in inp.states]
    lo = min([t for t in (t_start, *st_times[:1]) if t is not None], default=0.0)
    hi = max([t for t in (t_end, *st_times[-1:]) if t is not None], default=lo + 1)
    axis = sp.Axis(lo, max(hi, lo + 1))
    fs = faults(data.nemesis if data else (), axis.t1)
    bands = [f.band for f in fs]
    fs_seen = {r.f for r in data.throughput} if data else set()
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
