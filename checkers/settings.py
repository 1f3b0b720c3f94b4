"""The analysis's settings (the `check` section of spec.json), defined with the other
run-directory contracts; this path is the public one. The anomaly registry checks
the names it allows."""

from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.contracts.spec.check import CheckSpec
from kafka_trial.contracts.spec.owners import owner_check

__all__ = ["CheckSpec"]


@owner_check(CheckSpec, "checkers")
def _known_anomalies(spec: CheckSpec) -> None:
    unknown = [a for a in spec.allowed if a not in ANOMALY_TYPES]
    if unknown:
        raise ValueError(
            f"unknown anomaly type {', '.join(unknown)}; choose from {', '.join(ANOMALY_TYPES)}"
        )
