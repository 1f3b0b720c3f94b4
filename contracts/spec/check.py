"""Settings of the analysis: which anomalies the run allows, and where Spark runs."""

from __future__ import annotations

from typing import Literal

from kafka_trial.contracts.settings import Frozen
from kafka_trial.contracts.spec.owners import run_owner_checks
from pydantic import Field, model_validator


class CheckSpec(Frozen):
    allowed: tuple[str, ...] = ()
    spark_master: str = "local[*]"
    # The dependency-cycle search (G0, G1c, G1c-process, G1c-realtime) more than
    # doubles the analysis of a large history of plain sends and polls, whose ops are
    # no transactions (README.md, on `check.cycles`; bench/cycles_bench.py): by
    # default ("auto") it runs where the history holds a transaction; "on" searches
    # every history, "off" none. A check that did not run is `skipped`, never a pass.
    cycles: Literal["auto", "on", "off"] = "auto"
    # Not a setting: the analysis fills it from the run's nemesis section, so that a run
    # that asked for faults and injected none is not judged as if it had met them.
    faults_asked: tuple[str, ...] = Field((), exclude=True)

    @model_validator(mode="after")
    def _owners(self) -> CheckSpec:
        return run_owner_checks(self, "checkers")  # the anomaly types' names (the registry's)
