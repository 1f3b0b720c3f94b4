"""Settings of the analysis: which anomalies the run allows, and where Spark runs."""

from __future__ import annotations

from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.contracts.settings import Frozen
from pydantic import model_validator


class CheckSpec(Frozen):
    allowed: tuple[str, ...] = ()
    spark_master: str = "local[*]"

    @model_validator(mode="after")
    def _known(self) -> CheckSpec:
        unknown = [a for a in self.allowed if a not in ANOMALY_TYPES]
        if unknown:
            raise ValueError(
                f"unknown anomaly type {', '.join(unknown)}; choose from {', '.join(ANOMALY_TYPES)}"
            )
        return self
