"""Client workloads: the only code that produces or consumes.

Public (docs/api.md): `ClientContext`, `plan_workloads`, `WorkloadSession` (its
`finish()` gives a `SessionSummary`), the `Workload` protocol, and the workload classes
in `plan.py`.
"""

from __future__ import annotations

from typing import Any

_PUBLIC = {
    "ClientContext": "kafka_trial.workloads.base",
    "Lane": "kafka_trial.workloads.base",
    "Workload": "kafka_trial.workloads.base",
    "plan_workloads": "kafka_trial.workloads.plan",
    "ProducerWorkload": "kafka_trial.workloads.plan",
    "ConsumerWorkload": "kafka_trial.workloads.plan",
    "CopierWorkload": "kafka_trial.workloads.plan",
    "AppWorkload": "kafka_trial.workloads.app",
    "WorkloadSession": "kafka_trial.workloads.session",
    "SessionSummary": "kafka_trial.workloads.session",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the settings does not import the Kafka client.
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(name)
