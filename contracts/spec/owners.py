"""The checks a spec's shape cannot make alone, registered by the owners of what they
check against.

A fault package's name, what a cluster kind can fault, and an anomaly type's name
belong to the nemesis catalog and the anomaly registry, which sit above contracts.
So the spec models call the checks those owners register here, and each owner
registers its own when its package is imported (`kafka_trial.nemesis`,
`kafka_trial.checkers`): any code that can run a spec has imported them, and a
spec read back from a run directory is checked against the same registries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_CHECKS: dict[type[BaseModel], list[Callable[[BaseModel], None]]] = {}
_OWNERS: dict[type[BaseModel], set[str]] = {}


def owner_check(model: type[M], owner: str) -> Callable[[Callable[[M], None]], Callable[[M], None]]:
    """Register `check(spec)` for every instance of `model`: it raises ValueError with
    the problem and its fix, which the model's validation reports as its own."""

    def register(check: Callable[[M], None]) -> Callable[[M], None]:
        checks = _CHECKS.setdefault(model, [])
        if check not in checks:
            checks.append(check)  # type: ignore[arg-type]
        _OWNERS.setdefault(model, set()).add(owner)
        return check

    return register


def run_owner_checks(spec: M, *owners: str) -> M:
    """The checks `owners` (packages under kafka_trial) registered for this model. A
    model built before its owners were imported is refused, never passed unchecked."""
    missing = [o for o in owners if o not in _OWNERS.get(type(spec), set())]
    if missing:
        raise ValueError(
            f"{type(spec).__name__} needs the checks of "
            + ", ".join(f"kafka_trial.{o}" for o in missing)
            + "; import it (or kafka_trial.harness) before building one"
        )
    for check in _CHECKS.get(type(spec), ()):
        check(spec)
    return spec


def registered(model: type[BaseModel]) -> tuple[Callable[[BaseModel], None], ...]:
    return tuple(_CHECKS.get(model, ()))
