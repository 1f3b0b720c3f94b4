"""The analysis job: RUN_DIR/history.jsonl -> RUN_DIR/results.json (a `Results`).

Runs in-process with an embedded Spark (local[*]) or against a spark:// master;
`python -m kafka_trial.spark_analysis.job RUN_DIR [MASTER]` runs it on its own as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES, with_defaults
from kafka_trial.checkers.app_guarantees import app_allows
from kafka_trial.checkers.results import (
    AnalysisFacts,
    AnomalyResult,
    DamagedLine,
    HistoryHealth,
    Results,
    Stats,
)
from kafka_trial.checkers.settings import CheckSpec
from kafka_trial.checkers.verdict import decide, no_fault_problems
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log, status
from kafka_trial.nemesis.catalog import is_fault
from kafka_trial.spark_analysis.checks_cycles import not_searched
from kafka_trial.spark_analysis.columnar import ParsedRows, Prepared, follow, parsed_rows, prepare
from kafka_trial.spark_analysis.history_frames import Frames, load
from kafka_trial.spark_analysis.history_parse import line_is_damaged
from kafka_trial.spark_analysis.queue_checks import run_checks, stats
from kafka_trial.spark_analysis.report_data import report_data
from kafka_trial.spark_analysis.session import (
    jit_profile,
    prestart,
    spark_session,
    started_early,
)
from kafka_trial.spark_analysis.sources import ByteRanges, HadoopFile, HistorySource, resolve
from kafka_trial.spark_analysis.undecided import undecided_findings
from pydantic import ValidationError
from pyspark import SparkContext
from pyspark.sql import SparkSession

_CHUNK = 65536

# A history up to this size is judged in one task (history_frames.load's one_task):
# on local[*] the planning and scheduling of ~80 shuffle stages cost more than one
# core reading it all, and the checks still run side by side (their union is one
# task each). On a 2-core machine one task won at every size tried: 100 and 113 MB
# campaign histories 25.6 -> 16.6 s and 18.4 -> 13.8 s, the 648 MB benchmark
# history 85.4 -> 72.7 s (README's analysis section). More cores favour splitting
# the input, so the bound shrinks with them (not measured beyond 2 cores).
ONE_TASK_MAX_BYTES_2_CORES = 1 << 30
# Spark SQL settings for a one-task analysis, restored after it: with every input in
# one partition, adaptive re-planning and automatic broadcasts only add jobs, and the
# exchanges that remain (after a union, for the final ranking) need one reducer, not
# eight: a 9-op history's warm analysis took 8.0 s with 8 and 6.9 s with 1 (mean of 5).
_ONE_TASK_SQL = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.shuffle.partitions": "1",
}


# On a cluster, a shuffle partition per this much history, and at least two per core:
# the session's 64 made a 5-line history's checks take 52 s on a 1-core standalone
# worker, 26 s with 4 (and 25 s with 2), every stage scheduling 64 remote tasks.
CLUSTER_BYTES_PER_PARTITION = 64 << 20


def cluster_sql(size: int, parallelism: int) -> dict[str, str]:
    """Spark SQL settings for one analysis on a cluster (spark://...)."""
    parts = max(2 * parallelism, -(-size // CLUSTER_BYTES_PER_PARTITION))
    return {"spark.sql.shuffle.partitions": str(parts)}


# A one-shot analysis (analyze's `one_shot`) starts a C1-only JVM for a local history
# up to this size (session.JIT_ONE_SHOT). Measured faster and cheaper on a 2,164-line
# history; on the benchmark's default-run history (93 MB) its ratio to a bare session
# was the same (8.5x both ways, on different hours), so above this the long-lived
# profile stays, where C2 pays for the big histories' loops.
ONE_SHOT_C1_MAX_BYTES = 64 << 20


def one_task_max_bytes(cores: int = 2) -> int:
    bound = max(64 << 20, ONE_TASK_MAX_BYTES_2_CORES * 2 // max(cores, 2))
    return int(os.environ.get("KAFKA_TRIAL_ONE_TASK_BYTES", bound))


@contextlib.contextmanager
def _sql_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session SQL settings for one analysis: several analyses share a session."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def last_line(src: ByteRanges) -> tuple[bytes, bool] | None:
    """The real last line that is not blank, however long, and whether a line end
    follows it; None for a history of blank lines only."""
    size = src.size()
    end = size
    # Trailing blank lines hold no op (the reader skips them): the line before counts.
    while end > 0:
        lo = max(0, end - _CHUNK)
        chunk = src.read(lo, end - lo)
        kept = chunk.rstrip(b" \r\n")
        if kept:
            end = lo + len(kept)
            break
        end = lo
    if end == 0:
        return None
    start, pos = 0, end
    while pos > 0:
        lo = max(0, pos - _CHUNK)
        chunk = src.read(lo, pos - lo)
        nl = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if nl >= 0:
            start = lo + nl + 1
            break
        pos = lo
    tail = src.read(end, size - end)
    return src.read(start, end - start), b"\n" in tail or b"\r" in tail


def last_line_state(src: ByteRanges) -> str:
    """'empty', 'ok', 'cut' when the real last line was cut off mid-write, or
    'damaged' when it is whole (newline-terminated) but not an op.

    The last line is found however long it is. One that parses is whole even if its
    newline never made it; one that ends in a newline but does not parse was not cut
    off, it is damaged like any other line."""
    found = last_line(src)
    if found is None:
        return "empty"
    line, terminated = found
    try:
        whole = isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        whole = False
    if whole:
        return "ok"
    return "damaged" if terminated else "cut"


def read_check_settings(spec: Path | None, remote: HadoopFile | None = None) -> CheckSpec:
    """The analysis reads only its own part of the run's one config object, the
    faults the run asked for (a run that asked for some and injected none tested
    nothing), and the guarantee of the application on trial, if any (what it allows
    is allowed)."""
    data = _saved_spec(spec, remote)
    where = str(spec) if remote is None else remote.uri
    try:
        check = CheckSpec.model_validate(data.get("check") or {})
        asked = tuple((data.get("nemesis") or {}).get("faults") or ())
    except (ValueError, ValidationError, AttributeError) as e:
        first = str(e).splitlines()[0][:200]
        raise TrialError(f"{where} has a bad check section: {first}", "restore spec.json") from None
    extra = _app_allowed(data.get("app"), where)
    if extra:
        allowed = (*check.allowed, *(a for a in extra if a not in check.allowed))
        check = check.model_copy(update={"allowed": allowed})
    return check.model_copy(update={"faults_asked": asked}) if asked else check


def _app_allowed(app: Any, where: str) -> tuple[str, ...]:
    """What the application on trial's declared guarantee allows: nothing without an
    app (a `command` or an `image`)."""
    if not isinstance(app, dict) or not (app.get("command") or app.get("image")):
        return ()
    guarantee = app.get("guarantee")
    try:
        return app_allows(str(guarantee), bool(app.get("per_key_order")))
    except ValueError as e:
        raise TrialError(
            f"{where} has a bad app section: {e if guarantee else 'app.guarantee is not set'}",
            "restore spec.json",
        ) from None


def _saved_spec(spec: Path | None, remote: HadoopFile | None) -> dict[str, Any]:
    if remote is not None and remote.exists():
        text, where = remote.read(0, remote.size()).decode("utf-8", "replace"), remote.uri
    elif spec is not None and spec.is_file():
        text, where = spec.read_text(), str(spec)
    else:
        # A bare history (from another tool, or copied alone): defaults, nothing allowed.
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        first = str(e).splitlines()[0][:200]
        raise TrialError(f"{where} has a bad check section: {first}", "restore spec.json") from None
    return data if isinstance(data, dict) else {}


def analyze(
    target: str | Path | HistorySource,
    spark_master: str | None = None,
    out_dir: Path | None = None,
    report: bool = False,
    one_shot: bool = False,
) -> Results:
    """Judge a history: a run directory, a history.jsonl, or a URI Spark reads.
    results.json goes beside a local history, or to out_dir; with `report`, also
    report-data.json, the aggregates the HTML report draws. `one_shot`: this process
    judges this one history and exits (the CLI's commands), so a JVM started for it
    need not compile for the long run (ONE_SHOT_C1_MAX_BYTES)."""
    try:
        return _analyze(target, spark_master, out_dir, report, one_shot)
    finally:
        status(None)


def start_analysis_early(
    run_dir: Path, spark_master: str | None = None, one_shot: bool = False
) -> None:
    """Start what `analyze(run_dir, spark_master, one_shot=...)` will need while the
    run still writes its history: the session, on a thread, and the native parse,
    following history.jsonl as it grows (columnar.follow). `kafka-trial run` calls
    this as its final heal begins, so both go on during the heal and drain instead of
    after them. The history is not final yet: the drain reads back about what was
    sent, so twice its size now stands for its size then (ONE_SHOT_C1_MAX_BYTES)."""
    try:
        master = spark_master or read_check_settings(run_dir / "spec.json").spark_master
    except TrialError:
        return  # the analysis reports the bad spec; an early start must not stop a run
    history = run_dir / "history.jsonl"
    size = history.stat().st_size if history.is_file() else 0
    follow(history)
    prestart(master, one_shot=one_shot and 2 * size <= ONE_SHOT_C1_MAX_BYTES)


def _source(target: str | Path | HistorySource, out_dir: Path | None) -> HistorySource:
    src = target if isinstance(target, HistorySource) else resolve(target, out_dir)
    return dataclasses.replace(src, out_dir=out_dir) if out_dir is not None else src


def _start_prepare(src: HistorySource, spark_master: str | None) -> Future[Prepared] | None:
    """A local history's rows made ready while the session starts (columnar.prepare:
    the native parse on one core while the JVM starts on the other)."""
    if src.local is None or not src.local.is_file():
        return None
    try:
        master = spark_master or read_check_settings(src.spec).spark_master
    except TrialError:
        return None  # the session's start reports the bad spec
    # A cluster's executors read the history where it is (shared storage, say): the
    # cache beside it is there too, a temporary directory of this machine's is not.
    temp_ok = master.startswith("local")
    pool = ThreadPoolExecutor(1, thread_name_prefix="history-prepare")
    try:
        return pool.submit(prepare, src.local, temp_ok)
    finally:
        pool.shutdown(wait=False)


def _session_for(
    src: HistorySource, spark_master: str | None, one_shot: bool = False
) -> tuple[SparkSession, str, CheckSpec]:
    """The session that reads the history, its master, and the run's check settings."""
    spark: SparkSession | None = None
    if src.remote:
        # A remote history's spec.json is only reachable through Spark.
        spark = spark_session(spark_master or "local[*]")
        spec_uri = src.uri.rsplit("/", 1)[0] + "/spec.json"
        check = read_check_settings(None, HadoopFile(spark, spec_uri))
        if spark_master is None and check.spark_master != "local[*]":
            spark = None  # the run asked for a cluster: start the session there
    else:
        check = read_check_settings(src.spec)
    master = spark_master or check.spark_master
    local = src.local
    small = local is not None and local.is_file() and local.stat().st_size <= ONE_SHOT_C1_MAX_BYTES
    return spark or spark_session(master, one_shot=one_shot and small), master, check


def _analyze(
    target: str | Path | HistorySource,
    spark_master: str | None,
    out_dir: Path | None,
    report: bool,
    one_shot: bool = False,
) -> Results:
    status("analysis: starting Spark")
    t0 = time.monotonic()
    src = _source(target, out_dir)
    preparing = _start_prepare(src, spark_master)
    try:
        return _judge(src, preparing, spark_master, report, t0, one_shot)
    finally:
        # An analysis that failed before it read the rows leaves no Parquet behind.
        if preparing is not None:
            with contextlib.suppress(Exception):
                temp = preparing.result().temp
                if temp is not None:
                    shutil.rmtree(temp, ignore_errors=True)


def _prepared(preparing: Future[Prepared] | None) -> Prepared | None:
    """What the native parse did; if it failed in a way it should not have, Spark
    parses: an optimisation never costs a verdict."""
    if preparing is None:
        return None
    try:
        return preparing.result()
    except Exception as e:
        log(f"native parse failed ({type(e).__name__}: {str(e)[:200]}); Spark parses the JSON")
        return Prepared("none", False, "failed")


def _judge(
    src: HistorySource,
    preparing: Future[Prepared] | None,
    spark_master: str | None,
    report: bool,
    t0: float,
    one_shot: bool = False,
) -> Results:
    was_up = SparkContext._active_spark_context is not None
    spark, master, check = _session_for(src, spark_master, one_shot)
    started = "early" if started_early(spark) else "reused" if was_up else "now"
    ranges = src.ranges(spark)
    if not ranges.exists():
        raise TrialError(f"{src.uri} not found", "check the URI and that Spark can read it")
    tail = last_line_state(ranges)
    # Spark reuses cached data for an equal plan, and reading the same path again is
    # an equal plan: a history that grew since an earlier analysis in this session
    # (kafka-trial finish appends its drain) would be judged from the stale cache.
    spark.catalog.clearCache()
    t_session = time.monotonic() - t0
    one_task, settings = _analysis_sql(spark, src, ranges)
    with _sql_settings(spark, settings):
        status("analysis: reading the history")
        stages = _Stages(t_session)
        prepared = _prepared(preparing)
        stages.done("wait_native_parse")
        use = None if src.local is None else parsed_rows(spark, src.local, prepared)
        fr = load(
            spark,
            src.uri,
            use.rows if use else None,
            one_task=one_task,
            columnar=use is not None and use.from_parquet,
        )
        tail, problems = _history_problems(spark, ranges, tail, fr)
        stages.done("frames")
        status("analysis: running the checks")
        anomalies = run_checks(fr, not_searched(fr, check.cycles))
        stages.done("checks")
        st = stats(fr)
        damaged_inside = fr.damaged - (1 if tail == "cut" else 0)
        problems += undecided_findings(fr, anomalies, st, damaged_inside, check.allowed)
        st["faults_injected"] = _faults_injected(st["nemesis_done"])
        problems += no_fault_problems(check.faults_asked, st["faults_injected"])
        stages.done("stats")
        facts = AnalysisFacts(
            spark_master=master,
            session_s=round(t_session, 3),
            session_started=started,
            **_parse_facts(use, prepared),
            one_task=one_task,
            jit=jit_profile(spark),
            total_s=round(time.monotonic() - t0, 3),
            results_file=str(src.out_dir / "results.json"),
            stages_s=stages.seconds,
        )
        results = _results(src, fr, anomalies, st, problems, check, tail, facts)
        return _write_results(spark, src, fr, results, report, t0, stages)


def _analysis_sql(
    spark: SparkSession, src: HistorySource, ranges: ByteRanges
) -> tuple[bool, dict[str, str]]:
    """Whether the history is judged in one task, and the SQL settings for it."""
    local = spark.sparkContext.master.startswith("local")
    cores = spark.sparkContext.defaultParallelism
    one_task = (
        local and src.local is not None and src.local.stat().st_size <= one_task_max_bytes(cores)
    )
    settings = _ONE_TASK_SQL if one_task else {} if local else cluster_sql(ranges.size(), cores)
    return one_task, settings


class _Stages:
    """The seconds of each stage of one analysis (AnalysisFacts.stages_s)."""

    def __init__(self, session_s: float) -> None:
        self.seconds: dict[str, float] = {"session": round(session_s, 3)}
        self._mark = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self._mark, 3)
        self._mark = now


def _faults_injected(nemesis_done: Mapping[str, int]) -> int:
    """The nemesis ops that took effect and hurt the cluster: heals, waits and marks
    are no fault (catalog.is_fault)."""
    return sum(n for f, n in nemesis_done.items() if is_fault(f))


def _parse_facts(use: ParsedRows | None, prepared: Prepared | None) -> dict[str, Any]:
    """AnalysisFacts' account of who parsed the history and from where."""
    return {
        "cache": use.status if use else "remote",
        "cache_found": use.found if use else "none",
        "parser": use.parser if use else "spark",
        "native_parse_s": round(prepared.seconds, 3) if prepared else 0.0,
        "parsed_during_run": bool(
            prepared is not None
            and prepared.followed
            and use is not None
            and use.parser == "native"
        ),
    }


def _write_results(
    spark: SparkSession,
    src: HistorySource,
    fr: Frames,
    results: Results,
    report: bool,
    t0: float,
    stages: _Stages,
) -> Results:
    """results.json, and with `report` report-data.json first (its time counted in)."""
    src.out_dir.mkdir(parents=True, exist_ok=True)
    if report:
        status("analysis: aggregating the report's data")
        data = report_data(spark, fr, src.uri, results.to_dict()["anomalies"])
        data["history_uri"] = src.uri
        _write_text(src.out_dir / "report-data.json", json.dumps(data, indent=2, default=str))
        total = round(time.monotonic() - t0, 3)
        stages.done("report_data")
        facts = results.analysis.model_copy(update={"total_s": total, "stages_s": stages.seconds})
        results = results.model_copy(update={"analysis": facts})
    _write_text(src.out_dir / "results.json", results.to_json())
    return results


def _results(
    src: HistorySource,
    fr: Frames,
    anomalies: dict[str, dict[str, Any]],
    st: dict[str, Any],
    problems: list[str],
    check: CheckSpec,
    tail: str,
    facts: AnalysisFacts,
) -> Results:
    allowed = with_defaults(check.allowed)
    verdict = decide(anomalies, allowed, problems)
    return Results(
        valid=verdict.pop("valid"),
        anomalies={
            name: AnomalyResult(**anomalies[name], definition=ANOMALIES[name].definition)
            for name in ANOMALY_TYPES
        },
        **verdict,
        allowed=allowed,
        stats=Stats(**st),
        history=HistoryHealth(
            path=str(src.local) if src.local is not None else src.uri,
            last_line=tail,  # type: ignore[arg-type]
            damaged_lines=fr.damaged,
            damaged_examples=tuple(
                DamagedLine(index=i, line=line) for i, line in fr.damaged_examples
            ),
            open_invokes=fr.open_invokes,
        ),
        analysis=facts,
    )


def _history_problems(
    spark: SparkSession, ranges: ByteRanges, tail: str, fr: Frames
) -> tuple[str, list[str]]:
    """The last line's state as the analysis saw it, and the damage that makes the
    history unable to decide the verdict."""
    cut = ""
    if tail == "cut":
        found = last_line(ranges)
        cut = found[0].decode("utf-8", "replace") if found else ""
        # Python's JSON and Spark's differ at the edges (single quotes, text after the
        # object): the tolerance is exact only if the analysis counted this very line.
        if not line_is_damaged(spark, cut):
            tail, cut = "ok", ""
    problems: list[str] = []
    tolerated = 1 if tail == "cut" else 0
    if fr.damaged > tolerated:
        inside = [(i, ln) for i, ln in fr.damaged_examples if not cut or ln != cut[: len(ln)]]
        shown = "; ".join(
            f"{'index ' + str(i) if i is not None else 'no index'}: {ln[:80]!r}"
            for i, ln in inside[:3]
        )
        problems.append(
            f"{fr.damaged - tolerated} damaged line(s) inside the history; "
            f"results cover only the lines that parse (e.g. {shown})"
        )
    return tail, problems


def _write_text(path: Path, text: str) -> None:
    # Written whole or not at all: a report never reads half a file.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    res = analyze(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, one_shot=True)
    print(json.dumps({"valid": res.valid}))
