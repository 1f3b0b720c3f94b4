"""spec.json's reference table, rendered from the models so that the document
(docs/run-directory.md) cannot drift from them; a test compares the two."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kafka_trial.contracts.spec.run import RunSpec
from pydantic import BaseModel


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "…"


def _rows(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for name, f in model.model_fields.items():
        if f.exclude:
            continue  # filled by the analysis, never written
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _rows(ann, f"{prefix}{name}.")
            continue
        default = _default(f.get_default(call_default_factory=True))
        meaning = (f.description or "").replace("|", "\\|")
        yield f"| `{prefix}{name}` | `{_type_name(ann)}` | `{default}` | {meaning} |"


def spec_table() -> str:
    return "\n".join(["| key | type | default | meaning |", "|---|---|---|---|", *_rows(RunSpec)])
