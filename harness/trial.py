"""Put an application on trial from Python: one run with the user's program between
the run's topic and its output topic, judged end to end (`kafka-trial run
--app-command ...` does the same from a shell; docs/apps.md is the contract)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_trial.checkers.results import Results
from kafka_trial.harness.runner import new_run_dir, run
from kafka_trial.harness.spec import RunSpec, load_spec, merge_config


def app_spec(
    *,
    command: str | None = None,
    image: str | None = None,
    guarantee: str,
    instances: int = 2,
    faults: Sequence[str] = (),
    duration_s: float = 30.0,
    seed: int = 0,
    runs_dir: str | Path = "runs",
    settings: Mapping[str, Any] | None = None,
) -> RunSpec:
    """The run spec of a trial. `settings` are further spec keys as a nested mapping
    (e.g. {"app": {"per_key_order": True}, "producer": {"target_rate": 500}}); they
    win over the arguments."""
    given: dict[str, Any] = {
        "name": "app",
        "seed": seed,
        "duration_s": duration_s,
        "runs_dir": str(runs_dir),
        "app": {"command": command, "image": image, "guarantee": guarantee, "instances": instances},
        "nemesis": {"faults": list(faults)},
    }
    return load_spec(None, merge_config(given, dict(settings or {})))


def put_on_trial(
    *,
    command: str | None = None,
    image: str | None = None,
    guarantee: str,
    instances: int = 2,
    faults: Sequence[str] = (),
    duration_s: float = 30.0,
    seed: int = 0,
    runs_dir: str | Path = "runs",
    settings: Mapping[str, Any] | None = None,
    spark_master: str | None = None,
) -> Results:
    """Run the application under `faults` for `duration_s`, drain its output, and judge
    it against the declared guarantee. The run directory holds the history
    (`results.history.path`), each instance's output and the report; a bad setting
    raises `TrialError` before anything starts."""
    from kafka_trial.report.judge import judge

    spec = app_spec(
        command=command,
        image=image,
        guarantee=guarantee,
        instances=instances,
        faults=faults,
        duration_s=duration_s,
        seed=seed,
        runs_dir=runs_dir,
        settings=settings,
    )
    run_dir = new_run_dir(spec)
    run(spec, run_dir)
    judged = judge(run_dir, spark_master=spark_master, one_shot=True)
    if judged.results is None:
        raise RuntimeError(f"{run_dir} has no verdict: its history could not be analysed")
    return judged.results
