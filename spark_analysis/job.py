"""The analysis job: RUN_DIR/history.jsonl -> RUN_DIR/results.json (a `Results`).

The order of its stages, each a subpackage or module of its own:

1. read (read/): the history's rows, parsed natively while the Spark session starts
   (spark/), and its `Frames`;
2. facts (facts/): what the history proves, built once and shared as the checks ask
   for them (facts/shared_frames.AnalysisFrames);
3. checks (checks/), the cycle checks (cycles/) among them, all in one pass;
4. stats (facts/stats.py), then what the history cannot decide (checks/undecided.py);
5. the verdict and its files (output.py, report_data.py).

Runs in-process with an embedded Spark (local[*]) or against a spark:// master;
`python -m kafka_trial.spark_analysis.job RUN_DIR [MASTER]` runs it on its own as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from kafka_trial.checkers.results import AnalysisFacts, Results
from kafka_trial.checkers.settings import CheckSpec
from kafka_trial.checkers.verdict import no_fault_problems
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log, status
from kafka_trial.spark_analysis.check_settings import read_check_settings
from kafka_trial.spark_analysis.checks.runner import run_checks
from kafka_trial.spark_analysis.checks.undecided import (
    damaged_inside,
    damaged_problems,
    undecided_findings,
)
from kafka_trial.spark_analysis.cycles.edges import not_searched
from kafka_trial.spark_analysis.facts.shared_frames import analysis
from kafka_trial.spark_analysis.facts.stats import stats
from kafka_trial.spark_analysis.output import StageClock, results, write_results
from kafka_trial.spark_analysis.read import (
    HadoopFile,
    HistorySource,
    Prepared,
    cut_line,
    follow,
    last_line_state,
    parse_facts,
    prepare,
    read_frames,
    resolve,
)
from kafka_trial.spark_analysis.spark.session import (
    jit_profile,
    prestart,
    spark_session,
    started_early,
)
from kafka_trial.spark_analysis.spark.sizing import (
    ONE_SHOT_C1_MAX_BYTES,
    analysis_sql,
    sql_settings,
)
from pyspark import SparkContext
from pyspark.sql import SparkSession


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
    following history.jsonl as it grows (read.follow). `kafka-trial run` calls
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


def _analyze(
    target: str | Path | HistorySource,
    spark_master: str | None,
    out_dir: Path | None,
    report: bool,
    one_shot: bool = False,
) -> Results:
    status("analysis: starting Spark")
    t0 = time.monotonic()
    src = target if isinstance(target, HistorySource) else resolve(target, out_dir)
    if out_dir is not None:
        src = dataclasses.replace(src, out_dir=out_dir)
    preparing = _start_prepare(src, spark_master)
    try:
        return _judge(src, preparing, spark_master, report, t0, one_shot)
    finally:
        # An analysis that failed before it read the rows leaves no Parquet behind.
        if preparing is not None:
            with contextlib.suppress(Exception):
                preparing.result().remove_temp()


def _start_prepare(src: HistorySource, spark_master: str | None) -> Future[Prepared] | None:
    """A local history's rows made ready while the session starts (read.prepare:
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
    local_bytes = src.local.stat().st_size if src.local is not None else None
    one_task, settings = analysis_sql(spark, local_bytes, ranges.size)
    with sql_settings(spark, settings):
        status("analysis: reading the history")
        stages = StageClock(t_session)
        prepared = _prepared(preparing)
        stages.done("wait_native_parse")
        fr, rows = read_frames(spark, src, prepared, one_task)
        tail, cut = cut_line(spark, ranges, tail)
        problems = damaged_problems(fr, tail, cut)
        stages.done("frames")
        status("analysis: running the checks")
        # One analysis for the checks and what the history cannot decide: the drain's
        # shortfall reads the value pass's unseen rows the checks kept.
        with analysis(fr) as plan:
            anomalies = run_checks(plan, not_searched(fr, check.cycles))
            stages.done("checks")
            st = stats(fr)
            inside = damaged_inside(fr, tail)
            problems += undecided_findings(plan, anomalies, st, inside, check.allowed)
        problems += no_fault_problems(check.faults_asked, st["faults_injected"])
        stages.done("stats")
        facts = AnalysisFacts(
            spark_master=master,
            session_s=round(t_session, 3),
            session_started=started,
            **parse_facts(rows, prepared),
            one_task=one_task,
            jit=jit_profile(spark),
            total_s=round(time.monotonic() - t0, 3),
            results_file=str(src.out_dir / "results.json"),
            stages_s=stages.seconds,
        )
        judged = results(src, fr, anomalies, st, problems, check, tail, facts)
        return write_results(spark, src, fr, judged, report, t0, stages)


if __name__ == "__main__":
    res = analyze(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, one_shot=True)
    print(json.dumps({"valid": res.valid}))
