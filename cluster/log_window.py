"""A broker's log cut to a run's time span. Broker logs on a user's nodes hold days;
the run directory keeps only what was written while the run went on. A line without
a timestamp (a stack trace's) belongs with the stamped line before it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# log4j's default `[2026-11-28 12:00:00,123]` and slf4j-simple's `2026-11-28T12:00:00.123`.
_STAMP = re.compile(rb"^\[?(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})")


def stamp_of(line: bytes) -> float | None:
    """The line's time as epoch seconds, read as UTC (what containers and most servers
    log in), or None if it has no stamp."""
    m = _STAMP.match(line)
    if m is None:
        return None
    try:
        t = datetime.strptime(f"{m[1].decode()} {m[2].decode()}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return t.replace(tzinfo=UTC).timestamp()


def cut(text: bytes, start: float, end: float, slack_s: float = 2.0) -> bytes:
    """The lines stamped within [start - slack, end + slack], with their unstamped
    continuations. A file whose lines carry no stamp at all is kept whole: better a
    long log than none."""
    kept: list[bytes] = []
    keep = False
    stamped = False
    for line in text.splitlines(keepends=True):
        t = stamp_of(line)
        if t is not None:
            stamped = True
            keep = start - slack_s <= t <= end + slack_s
        if keep:
            kept.append(line)
    return b"".join(kept) if stamped else text
