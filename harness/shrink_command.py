"""`kafka-trial shrink`: the search on real runs, a warm cluster and Spark kept
between candidates, and what it prints."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.checkers.results import Results
from kafka_trial.contracts.log import activity
from kafka_trial.contracts.shrink_record import SHRINK_FILE, SHRUNK_CONFIG
from kafka_trial.contracts.spec.run import RunSpec
from kafka_trial.harness.runner import run, signals_deferred, signals_interrupt
from kafka_trial.harness.shrink import load_source, shrink
from kafka_trial.harness.warm_cluster import WarmCluster
from kafka_trial.report.judge import judge
from kafka_trial.report.shrink_page import write_shrink_page
from kafka_trial.spark_analysis.spark.session import spark_session


def shrink_command(
    run_dir: Path, repeats: int, anomaly: str | None, out: Path | None, spark_master: str | None
) -> int:
    """Exit 0 with a schedule found (the source's own, if nothing smaller failed),
    130 when interrupted (what was found is kept)."""
    source = load_source(run_dir, anomaly)
    out = out or run_dir / "shrink"
    print(
        f"shrink: {len(source.candidate.episodes)} fault steps of {run_dir}, seeking "
        f"{', '.join(source.anomalies)}; up to {repeats} runs per candidate; writing {out}"
    )
    with activity("analysis: starting Spark"):
        spark_session(spark_master or "local[*]")
    warm = WarmCluster()

    def run_one(spec: RunSpec, d: Path) -> None:
        run(spec, d, warm)

    def judge_one(d: Path) -> Results:
        judged = judge(d, spark_master=spark_master, say=None)
        assert judged.results is not None
        return judged.results

    try:
        with signals_interrupt():
            record = shrink(source, out, repeats, run_one, judge_one)
    finally:
        with signals_deferred():
            warm.close()
    page = write_shrink_page(out, record)
    steps = [s for s in record.best_steps if s.action == "fault"]
    print(
        f"shrink {record.state}: {record.runs} runs of {len(record.tried)} candidates; "
        f"smallest failing schedule: {len(steps)} fault steps, fault phase "
        f"{record.best_duration_s:g} s"
        + (f", targets {', '.join(record.best_targets)}" if record.best_targets else "")
    )
    for s in steps:
        print(f"  at {s.at_s:g} s: {s.package} (pick {s.pick})")
    if record.best:
        print(f"replay: kafka-trial run --config {out / SHRUNK_CONFIG}")
    else:
        print("no smaller schedule failed; the source run's is the smallest known")
    print(f"record: {out / SHRINK_FILE}\npage: {page}")
    return 130 if record.state == "interrupted" else 0
