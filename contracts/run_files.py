"""Reading a run directory's JSON files through their contracts: a file that is
missing, cut off, or from a version whose keys this one does not know gives one
TrialError line naming the file, the first problem and what to re-run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kafka_trial.contracts.errors import TrialError
from pydantic import ValidationError

T = TypeVar("T")


def load_json(path: Path, parse: Callable[[Any], T], what: str, fix: str) -> T:
    """`parse` turns the file's JSON into its model (raising ValidationError or
    ValueError); `what` names the model in the message."""
    if not path.is_file():
        raise TrialError(f"{path} is missing", fix)
    try:
        data = json.loads(path.read_text())
    except (ValueError, OSError) as e:  # a JSONDecodeError is a ValueError
        raise TrialError(f"{path} cannot be read: {e}", fix) from None
    try:
        return parse(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        why = f"{e.error_count()} problem(s); first: {where}: {first['msg']}"
    except ValueError as e:
        why = str(e)
    raise TrialError(f"{path} does not load as {what} ({why})", fix)
