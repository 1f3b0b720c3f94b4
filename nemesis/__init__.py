"""Faults as data: packages of fault + heal, a seeded schedule, and the nemesis that
records them. Public: `Nemesis` (see docs/api.md)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the settings does not import the Kafka client.
    if name in ("Nemesis", "Applied"):
        from kafka_trial.nemesis import core

        return getattr(core, name)
    raise AttributeError(name)
