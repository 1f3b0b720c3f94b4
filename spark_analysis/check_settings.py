"""The run's settings for its analysis: the `check` section of spec.json, the faults
the run asked for, and what the application on trial's guarantee allows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_trial.checkers.app_guarantees import app_allows
from kafka_trial.checkers.settings import CheckSpec
from kafka_trial.contracts.errors import TrialError
from kafka_trial.spark_analysis.read import HadoopFile
from pydantic import ValidationError


def read_check_settings(spec: Path | None, remote: HadoopFile | None = None) -> CheckSpec:
    """The analysis reads only its own part of the run's one config object, the
    faults the run asked for (a run that asked for some and injected none tested
    nothing), and the guarantee of the application on trial, if any (what it allows
    is allowed)."""
    data = _saved_spec(spec, remote)
    where = str(spec) if remote is None else remote.uri
    try:
        check = CheckSpec.model_validate(data.get("check") or {})
        asked = tuple((data.get("nemesis") or {}).get("faults") or ())
    except (ValueError, ValidationError, AttributeError) as e:
        first = str(e).splitlines()[0][:200]
        raise TrialError(f"{where} has a bad check section: {first}", "restore spec.json") from None
    extra = _app_allowed(data.get("app"), where)
    if extra:
        allowed = (*check.allowed, *(a for a in extra if a not in check.allowed))
        check = check.model_copy(update={"allowed": allowed})
    return check.model_copy(update={"faults_asked": asked}) if asked else check


def _app_allowed(app: Any, where: str) -> tuple[str, ...]:
    """What the application on trial's declared guarantee allows: nothing without an
    app (a `command` or an `image`)."""
    if not isinstance(app, dict) or not (app.get("command") or app.get("image")):
        return ()
    guarantee = app.get("guarantee")
    try:
        return app_allows(str(guarantee), bool(app.get("per_key_order")))
    except ValueError as e:
        raise TrialError(
            f"{where} has a bad app section: {e if guarantee else 'app.guarantee is not set'}",
            "restore spec.json",
        ) from None


def _saved_spec(spec: Path | None, remote: HadoopFile | None) -> dict[str, Any]:
    if remote is not None and remote.exists():
        text, where = remote.read(0, remote.size()).decode("utf-8", "replace"), remote.uri
    elif spec is not None and spec.is_file():
        text, where = spec.read_text(), str(spec)
    else:
        # A bare history (from another tool, or copied alone): defaults, nothing allowed.
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        first = str(e).splitlines()[0][:200]
        raise TrialError(f"{where} has a bad check section: {first}", "restore spec.json") from None
    return data if isinstance(data, dict) else {}
