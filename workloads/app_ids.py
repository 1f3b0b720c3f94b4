"""The id rule of the application on trial: which input record an output record came
from, read from the output's value (docs/apps.md).

Default: the whole value is the input's value, a decimal integer. `app.id_json`: a
dotted field path into a JSON value. `app.id_regex`: the first capture group of the
pattern's first match. A value the rule does not recognise gives None: the history
keeps the record with a null value, and the analysis names it rather than guessing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

IdParser = Callable[[bytes | None], int | None]

# Surrounding whitespace is forgiven (an app that prints a line per record), a sign is
# kept (an id no send carried is the analysis's to name), and nothing else is: int()
# alone would also read "1_000" and "٣".
_DECIMAL = re.compile(rb"\s*(-?[0-9]+)\s*")


def decimal_id(raw: bytes | None) -> int | None:
    """The value itself, as a decimal integer."""
    if raw is None:
        return None
    m = _DECIMAL.fullmatch(raw)
    return int(m.group(1)) if m else None


def _as_id(v: object) -> int | None:
    # A JSON number or a string of digits; not a bool (json's true is an int in Python),
    # not a float (1.0 is not an id the harness wrote).
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        return decimal_id(v.encode())
    return None


def json_id(path: str) -> IdParser:
    """The field at a dotted path (`meta.id`) of a JSON object value."""
    keys = path.split(".")

    def parse(raw: bytes | None) -> int | None:
        if raw is None:
            return None
        try:
            v: object = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        for k in keys:
            if not isinstance(v, dict) or k not in v:
                return None
            v = v[k]
        return _as_id(v)

    return parse


def regex_id(pattern: str) -> IdParser:
    """The first capture group of the first match in the value (read as UTF-8)."""
    rx = re.compile(pattern)

    def parse(raw: bytes | None) -> int | None:
        if raw is None:
            return None
        m = rx.search(raw.decode("utf-8", errors="replace"))
        if m is None or m.group(1) is None:
            return None
        return decimal_id(m.group(1).encode())

    return parse


def id_parser(id_json: str | None = None, id_regex: str | None = None) -> IdParser:
    """The parser an app spec asks for (AppSpec refuses both at once)."""
    if id_json is not None:
        return json_id(id_json)
    if id_regex is not None:
        return regex_id(id_regex)
    return decimal_id
