"""The nemesis's settings (the `nemesis` section of spec.json), defined with the other
run-directory contracts; this path is the public one. What the shape cannot check
alone, the catalog checks (nemesis/spec_checks.py)."""

from kafka_trial.contracts.spec.nemesis import (
    MIN_STROBE_MS,
    PARTITION_TOPOLOGIES,
    TARGET_ROLES,
    ClockSpec,
    DegradeSpec,
    NemesisSpec,
)
from kafka_trial.nemesis import spec_checks  # noqa: F401

__all__ = [
    "MIN_STROBE_MS",
    "PARTITION_TOPOLOGIES",
    "TARGET_ROLES",
    "ClockSpec",
    "DegradeSpec",
    "NemesisSpec",
]
