"""The pydantic models a contract is made of, for tests that hold its documentation to
its fields."""

from __future__ import annotations

import types
import typing

from pydantic import BaseModel


def nested_models(model: type[BaseModel], seen: set[type] | None = None) -> list[type[BaseModel]]:
    """The model and every model inside its fields, however nested (dicts, tuples)."""
    seen = seen if seen is not None else set()
    if model in seen:
        return []
    seen.add(model)
    out = [model]
    for f in model.model_fields.values():
        stack = [f.annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                out += nested_models(t, seen)
            stack += [a for a in typing.get_args(t) if a is not Ellipsis]
            if isinstance(t, types.UnionType):
                stack += list(t.__args__)
    return out


def undocumented(model: type[BaseModel], doc: str) -> list[str]:
    """Model.field for every field of `model`'s models without a `| `field` |` row."""
    return [
        f"{m.__name__}.{name}"
        for m in nested_models(model)
        for name in m.model_fields
        if f"| `{name}` |" not in doc
    ]
