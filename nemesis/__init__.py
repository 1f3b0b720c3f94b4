"""Faults as data: packages of fault + heal, a seeded schedule, and the nemesis that
records them. Public: `Nemesis` (see docs/api.md)."""

from __future__ import annotations

from typing import Any

# The catalog checks every spec built once the nemesis is imported.
from kafka_trial.nemesis import spec_checks  # noqa: F401

_PUBLIC = {
    "Nemesis": "kafka_trial.nemesis.core",
    "Applied": "kafka_trial.nemesis.core",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the settings does not import the Kafka client.
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(name)
