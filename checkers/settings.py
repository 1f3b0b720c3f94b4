"""Settings of the analysis: which anomalies the run allows, and where Spark runs."""

from __future__ import annotations

from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.contracts.settings import Frozen
from pydantic import Field, model_validator


class CheckSpec(Frozen):
    allowed: tuple[str, ...] = ()
    spark_master: str = "local[*]"
    # Not a setting: the analysis fills it from the run's nemesis section, so that a run
    # that asked for faults and injected none is not judged as if it had met them.
    faults_asked: tuple[str, ...] = Field((), exclude=True)

    @model_validator(mode="after")
    def _known(self) -> CheckSpec:
        unknown = [a for a in self.allowed if a not in ANOMALY_TYPES]
        if unknown:
            raise ValueError(
                f"unknown anomaly type {', '.join(unknown)}; choose from {', '.join(ANOMALY_TYPES)}"
            )
        return self
