"""A campaign: a matrix of runs (presets or config files x nemesis packages x seeds x
Kafka versions), one after another, each judged and reported, with one summary.

CAMPAIGN_DIR/
  campaign.json       the matrix and every run's outcome, rewritten after each run
  index.html          links to every run's report.html
  <run key>/          one run directory per matrix entry (history, results, report)

Runs that finished keep their results when the campaign is interrupted;
`kafka-trial campaign --resume DIR` runs what is missing.

A run takes the cluster the run before it left warm when their broker side is the
same (harness/warm_cluster.py), so runs are grouped by broker side: a Kafka version
or broker config change costs one restart, not one per run.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

import yaml
from kafka_trial.checkers.verdict import exit_code
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import status_muted
from kafka_trial.contracts.settings import Frozen
from kafka_trial.harness.presets import CLAIMS, preset
from kafka_trial.harness.spec import RunSpec, _merge, build_spec
from kafka_trial.harness.warm_cluster import broker_side
from pydantic import Field, ValidationError

CAMPAIGN_FILE = "campaign.json"


class CampaignSpec(Frozen):
    name: str = Field("campaign", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    presets: tuple[str, ...] = ()
    configs: tuple[str, ...] = Field((), description="run config files (relative to this file)")
    nemesis: tuple[str, ...] = Field(
        (), description="fault package lists, each comma-separated; empty: each run's own"
    )
    seeds: int | tuple[int, ...] = Field(1, description="a count (0..N-1) or a list of seeds")
    kafka_versions: tuple[str, ...] = Field((), description="empty: each run's own")
    duration_s: float | None = Field(None, gt=0, description="every run's fault phase")
    overrides: dict[str, Any] = Field(default_factory=dict, description="applied to every run")
    reuse_clusters: bool = Field(
        True, description="keep a healthy cluster warm for the next run with the same broker side"
    )
    overlap_analysis: bool = Field(
        True, description="judge each run on a background thread while the next one runs"
    )

    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)


@dataclass(frozen=True)
class Entry:
    key: str  # the run directory's name in the campaign directory
    config: dict[str, Any]


def config_path(source: str, origin: Path | None) -> Path:
    p = Path(source)
    return p if p.is_absolute() or origin is None else origin.parent / p


def _base(source: str, origin: Path | None) -> tuple[str, dict[str, Any]]:
    """(label, config) of a preset name or a config file."""
    if source.endswith((".yaml", ".yml", ".json")):
        p = config_path(source, origin)
        if not p.is_file():
            raise TrialError(f"campaign config file {p} does not exist", "fix its path")
        data = yaml.safe_load(p.read_text()) or {}
        if not isinstance(data, dict):
            raise TrialError(f"config file {p} must hold a mapping", "write key: value pairs")
        return p.stem, data
    return source, dict(preset(source))


def entries(spec: CampaignSpec, origin: Path | None = None) -> list[Entry]:
    """The matrix, in order; every entry's config is validated before anything runs."""
    sources = [*spec.presets, *spec.configs]
    if not sources:
        raise TrialError("the campaign names no presets or configs", "add presets: or configs:")
    out: list[Entry] = []
    faults: list[str | None] = list(spec.nemesis) or [None]
    versions: list[str | None] = list(spec.kafka_versions) or [None]
    problems: list[str] = []
    for source, nem, seed, version in itertools.product(
        sources, faults, spec.seed_list(), versions
    ):
        label, base = _base(source, origin)
        over: dict[str, Any] = {"seed": seed}
        if spec.duration_s is not None:
            over["duration_s"] = spec.duration_s
        if version:
            over.setdefault("cluster", {})["kafka_version"] = version
        if nem is not None:
            over.setdefault("nemesis", {})["faults"] = [x for x in nem.split(",") if x]
        config = _merge(_merge(base, spec.overrides), over)
        parts = [label]
        if nem is not None:
            parts.append(nem.replace(",", "+") or "no-faults")
        parts.append(f"s{seed}")
        if version:
            parts.append(f"k{version}")
        key = "-".join(parts)
        try:
            build_spec(config, source=key)
        except TrialError as e:
            problems.append(e.problem)
        out.append(Entry(key, config))
    if problems:
        raise TrialError("; ".join(problems), "fix the campaign's runs named above")
    if len({e.key for e in out}) != len(out):
        raise TrialError("the campaign lists the same run twice", "remove the duplicate")
    return _grouped_by_broker_side(out)


def _grouped_by_broker_side(matrix: list[Entry]) -> list[Entry]:
    """The matrix in order, except that runs sharing a broker side run together
    (first come, first served), so a warm cluster serves all of them in a row."""
    keys = [broker_side(build_spec(e.config, source=e.key).cluster) for e in matrix]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    return [e for _, e in sorted(zip(keys, matrix, strict=True), key=lambda p: first[p[0]])]


def load_campaign(path: str | Path | None, over: dict[str, Any]) -> CampaignSpec:
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise TrialError(f"campaign file {p} does not exist", "pass an existing YAML file")
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as e:
            raise TrialError(
                f"campaign file {p} is not valid YAML: {str(e).splitlines()[0]}", "fix its syntax"
            ) from None
    try:
        return CampaignSpec.model_validate({**data, **over})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise TrialError(
            f"bad campaign value at {where}: {err['msg']}", f"correct {where}"
        ) from None


# ---------------------------------------------------------------- running


RunOne = Callable[[RunSpec, Path], dict[str, Any] | None]
# Judges a run directory that run_one filled: its results.json, as analyze returns it.
Judge = Callable[[Path], dict[str, Any]]


def worst(codes: list[int]) -> int:
    """Setup problems (3) > invalid (1) > unknown (2) > valid (0), as the CI examples."""
    for c in (3, 1, 2):
        if c in codes:
            return c
    return 0


def _summary(results: dict[str, Any]) -> dict[str, Any]:
    an = results.get("anomalies", {})
    seen = {n: a["count"] for n, a in an.items() if a.get("count")}
    allowed = set(results.get("allowed", []))
    return {
        "valid": results.get("valid"),
        "forbidden": {n: c for n, c in seen.items() if n not in allowed},
        "allowed": {n: c for n, c in seen.items() if n in allowed},
        "problems": results.get("problems", []),
        "acked": (results.get("stats") or {}).get("send_outcomes", {}).get("ok", 0),
    }


def _settings(spec: RunSpec) -> str:
    p, t = spec.producer, spec.topic
    faults = ",".join(spec.nemesis.faults) or "none"
    return (
        f"acks={p.acks} idem={str(p.idempotence).lower()} rf={t.replication_factor} "
        f"isr={t.min_insync_replicas} faults={faults}"
    )


def _save(camp_dir: Path, state: dict[str, Any]) -> None:
    tmp = camp_dir / (CAMPAIGN_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, default=str))
    os.replace(tmp, camp_dir / CAMPAIGN_FILE)


def new_campaign_dir(runs_dir: Path, name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    d = runs_dir / f"{stamp}-campaign-{name}"
    d.mkdir(parents=True, exist_ok=False)
    return d


def run_campaign(
    spec: CampaignSpec,
    camp_dir: Path,
    run_one: RunOne,
    origin: Path | None = None,
    resume: bool = False,
    say: Callable[[str], None] = print,
    judge: Judge | None = None,
) -> dict[str, Any]:
    """Run every entry not already done; campaign.json after each. Returns the state.

    With `judge`, `run_one` only runs (its return value is ignored) and each finished
    run is judged on a background thread while the next one runs. Both use the CPU
    (on 2 cores a fault phase's brokers and clients keep it busy), so the overlap
    saves what the CPU has to spare, not the whole judging time.

    A KeyboardInterrupt (Ctrl-C, SIGTERM) ends the campaign after the run in progress
    has healed and cleaned up; the state then says `interrupted`. A run that ended but
    was not judged yet stays `ran`, and --resume judges it without running it again."""
    matrix = entries(spec, origin)
    path = camp_dir / CAMPAIGN_FILE
    state: dict[str, Any] = (
        json.loads(path.read_text())
        if resume and path.is_file()
        else {"spec": spec.model_dump(), "runs": {}}
    )
    state["status"] = "running"
    state["order"] = [e.key for e in matrix]
    _save(camp_dir, state)
    judging = _Judging(judge) if judge is not None else None

    def record(key: str, rec: dict[str, Any], outcome: _Outcome) -> None:
        if outcome.results is not None:
            rec.update(_summary(outcome.results), status="done")
            rec["code"] = exit_code(outcome.results.get("valid"))
            rec["verdict"] = {0: "valid", 1: "INVALID", 2: "unknown"}[rec["code"]]
        elif isinstance(outcome.error, TrialError):
            rec.update(
                status="done", code=3, verdict="setup problem", error=outcome.error.one_line()
            )
        else:
            # A bug in one run must not cost the runs after it; it still fails the
            # campaign, and its traceback went to stderr for the bug report.
            err = outcome.error
            rec.update(status="done", code=3, verdict="error", error=f"{type(err).__name__}: {err}")
        rec["time_s"] = round(rec.get("run_s", 0) + outcome.seconds, 1)
        state["runs"][key] = rec
        _save(camp_dir, state)

    def collect(wait: bool) -> None:
        assert judging is not None
        for key, outcome in judging.finished(wait):
            rec = {**state["runs"][key], "judge_s": round(outcome.seconds, 1)}
            record(key, rec, outcome)
            took = f"ran {rec['run_s']:.0f}s, judged {outcome.seconds:.0f}s"
            say(f"    {key}: {rec['verdict']} ({took})")

    try:
        for i, e in enumerate(matrix, 1):
            if judging is not None:
                collect(wait=False)
            done = state["runs"].get(e.key)
            if done and done.get("status") == "done":
                say(f"[{i}/{len(matrix)}] {e.key}: done before, {done.get('verdict')}")
                continue
            if done and done.get("status") == "ran" and judging is not None:
                say(f"[{i}/{len(matrix)}] {e.key}: ran before, judging it")
                judging.submit(e.key, camp_dir / e.key)
                continue
            run_dir = camp_dir / e.key
            if run_dir.exists():
                # An interrupted attempt: keep its history beside the new one.
                n = sum(1 for p in camp_dir.glob(f"{e.key}.interrupted-*"))
                shutil.move(str(run_dir), str(camp_dir / f"{e.key}.interrupted-{n + 1}"))
            run_dir.mkdir()
            run_spec = build_spec(e.config, source=e.key)
            say(f"[{i}/{len(matrix)}] {e.key}: {_settings(run_spec)}")
            t0 = time.monotonic()
            rec: dict[str, Any] = {"run_dir": e.key, "settings": _settings(run_spec)}
            state["runs"][e.key] = {**rec, "status": "running"}
            _save(camp_dir, state)
            try:
                results = run_one(run_spec, run_dir)
            except KeyboardInterrupt:
                rec.update(status="interrupted", time_s=round(time.monotonic() - t0, 1))
                state["runs"][e.key] = rec
                state["status"] = "interrupted"
                _save(camp_dir, state)
                raise
            except Exception as err:
                if not isinstance(err, TrialError):
                    traceback.print_exc()
                rec["run_s"] = round(time.monotonic() - t0, 1)
                record(e.key, rec, _Outcome(None, err, 0.0))
                say(f"    {rec['verdict']} in {rec['time_s']:.0f}s")
                continue
            rec["run_s"] = round(time.monotonic() - t0, 1)
            rec.update(_cluster_use(run_dir))
            if judging is None:
                record(e.key, rec, _Outcome(results, None, 0.0))
                say(f"    {rec['verdict']} in {rec['time_s']:.0f}s")
                continue
            rec["status"] = "ran"
            state["runs"][e.key] = rec
            _save(camp_dir, state)
            judging.submit(e.key, run_dir)
        if judging is not None:
            while judging.pending:
                collect(wait=True)
    except KeyboardInterrupt:
        if judging is not None:
            collect(wait=False)  # what was judged by now is kept
        state["status"] = "interrupted"
        _save(camp_dir, state)
        raise
    finally:
        if judging is not None:
            judging.stop()
    state["status"] = "done"
    state["clusters"] = cluster_savings(state)
    state["exit_code"] = worst([r["code"] for r in state["runs"].values() if "code" in r])
    _save(camp_dir, state)
    return state


@dataclass(frozen=True)
class _Outcome:
    results: dict[str, Any] | None
    error: BaseException | None
    seconds: float


class _Judging:
    """One background thread that judges finished runs in the order they ended.

    A daemon thread: Ctrl-C must not wait for a Spark job; a run it was judging stays
    `ran` in campaign.json, which only the main thread writes."""

    def __init__(self, judge: Judge) -> None:
        self._judge = judge
        self._todo: queue.Queue[tuple[str, Path] | None] = queue.Queue()
        self._done: queue.Queue[tuple[str, _Outcome]] = queue.Queue()
        self.pending = 0
        self._thread = threading.Thread(target=self._loop, name="campaign-judge", daemon=True)
        self._thread.start()

    def submit(self, key: str, run_dir: Path) -> None:
        self.pending += 1
        self._todo.put((key, run_dir))

    def finished(self, wait: bool) -> list[tuple[str, _Outcome]]:
        out: list[tuple[str, _Outcome]] = []
        if wait and self.pending:
            out.append(self._done.get())
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                break
        self.pending -= len(out)
        return out

    def stop(self) -> None:
        self._todo.put(None)

    def _loop(self) -> None:
        # The run going on in the main thread owns the status line.
        with status_muted():
            while (item := self._todo.get()) is not None:
                key, run_dir = item
                t0 = time.monotonic()
                results, error = None, None
                try:
                    results = self._judge(run_dir)
                except Exception as err:
                    if not isinstance(err, TrialError):
                        traceback.print_exc()
                    error = err
                self._done.put((key, _Outcome(results, error, time.monotonic() - t0)))


def _cluster_use(run_dir: Path) -> dict[str, Any]:
    """Whether the run had a warm cluster, and what getting it ready cost."""
    try:
        info = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return {
        "warm_cluster": bool(info.get("warm_cluster")),
        "cluster_ready_s": (info.get("phases") or {}).get("cluster_ready"),
    }


def cluster_savings(state: dict[str, Any]) -> dict[str, Any]:
    """How many runs had a warm cluster, and the set-up time they saved: a warm run's
    readiness (its topics in sync) against the mean of the cold starts in this campaign."""
    runs = [r for r in state["runs"].values() if r.get("cluster_ready_s") is not None]
    cold = [r["cluster_ready_s"] for r in runs if not r.get("warm_cluster")]
    warm = [r["cluster_ready_s"] for r in runs if r.get("warm_cluster")]
    out: dict[str, Any] = {"runs": len(runs), "started": len(cold), "warm": len(warm)}
    if cold and warm:
        mean_cold = sum(cold) / len(cold)
        out["mean_cold_ready_s"] = round(mean_cold, 1)
        out["mean_warm_ready_s"] = round(sum(warm) / len(warm), 1)
        out["saved_s"] = round(sum(mean_cold - w for w in warm), 1)
    return out


def savings_line(clusters: dict[str, Any]) -> str:
    if not clusters.get("runs"):
        return ""
    line = f"clusters: {clusters['started']} started for {clusters['runs']} runs"
    if "saved_s" in clusters:
        line += (
            f"; a warm run was ready in {clusters['mean_warm_ready_s']}s against "
            f"{clusters['mean_cold_ready_s']}s cold, ~{clusters['saved_s']:.0f}s saved "
            "(plus a teardown per warm run)"
        )
    return line


# ---------------------------------------------------------------- output


def _cluster_cell(warm: bool | None) -> str:
    return "" if warm is None else "warm" if warm else "new"


def summary_table(state: dict[str, Any]) -> str:
    rows = [
        ("run", "settings", "verdict", "forbidden seen", "allowed seen", "acked", "cluster", "time")
    ]
    for key in state.get("order", []):
        r = state["runs"].get(key, {})
        fmt = lambda d: ", ".join(f"{n} {c}" for n, c in (d or {}).items()) or "-"  # noqa: E731
        rows.append(
            (
                key,
                r.get("settings", ""),
                r.get("verdict", r.get("status", "not run")),
                fmt(r.get("forbidden")),
                fmt(r.get("allowed")),
                str(r.get("acked", "")),
                _cluster_cell(r.get("warm_cluster")),
                f"{r['time_s']:.0f}s" if "time_s" in r else "",
            )
        )
    widths = [min(max(len(row[i]) for row in rows), 48) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell[:48].ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def write_index(camp_dir: Path, state: dict[str, Any]) -> Path:
    """index.html: every run with its verdict, linked to its report (relative links)."""
    rows = []
    for key in state.get("order", []):
        r = state["runs"].get(key, {})
        name = key.split("-s")[0]
        claim = CLAIMS.get(name)
        report = Path(key) / "report.html"
        link = (
            f'<a href="{escape(str(report))}">{escape(key)}</a>'
            if (camp_dir / report).is_file()
            else escape(key)
        )
        forbidden = ", ".join(f"{n} {c}" for n, c in (r.get("forbidden") or {}).items())
        allowed = ", ".join(f"{n} {c}" for n, c in (r.get("allowed") or {}).items())
        verdict = r.get("verdict", r.get("status", "not run"))
        cls = {"valid": "ok", "INVALID": "bad"}.get(verdict, "unk")
        rows.append(
            f'<tr class="{cls}"><td>{link}</td><td>{escape(claim.id if claim else "")}</td>'
            f"<td>{escape(r.get('settings', ''))}</td><td>{escape(str(verdict))}</td>"
            f"<td>{escape(forbidden or '-')}</td><td>{escape(allowed or '-')}</td>"
            f"<td>{escape(str(r.get('time_s', '')))}</td></tr>"
        )
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>kafka-trial campaign {escape(camp_dir.name)}</title>"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        "<style>body{font:13px system-ui,sans-serif;margin:16px}table{border-collapse:"
        "collapse}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
        "tr.ok td:nth-child(4){background:#e3f4e3}tr.bad td:nth-child(4){background:#fbe0e0}"
        "tr.unk td:nth-child(4){background:#fff2cc}</style></head><body>"
        f"<h1>Campaign {escape(camp_dir.name)}: {escape(str(state.get('status')))}</h1>"
        "<table><thead><tr><th>run</th><th>claim</th><th>settings</th><th>verdict</th>"
        "<th>forbidden seen</th><th>allowed seen</th><th>time (s)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )
    out = camp_dir / "index.html"
    out.write_text(html)
    return out
