"""Field types for typed views of free-form JSON: what a fault recorded in its op's
value, what a check wrote as a witness. Their shapes are each writer's own, so a view
must never fail on one odd value: a field whose value is not of its type reads as
None (or empty), as an isinstance check on a dict lookup did, and the rest still loads.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, Strict, ValidationError, ValidatorFunctionWrapHandler
from pydantic.functional_validators import WrapValidator

T = TypeVar("T")


def _or_none(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


# The value if it is a T, else None.
Lenient = Annotated[T | None, WrapValidator(_or_none)]
# An int as JSON wrote it: not a numeric string, not a bool.
StrictInt = Annotated[int, Strict()]


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(x for x in value if isinstance(x, int)) if isinstance(value, list) else ()


# The ints of a list; () for anything else.
Ints = Annotated[tuple[int, ...], BeforeValidator(_ints)]
# The value as text, whatever JSON type it has (a null is "None", as str() says).
Text = Annotated[str, BeforeValidator(str)]
