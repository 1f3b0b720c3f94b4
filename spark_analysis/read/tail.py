"""The history's last line, read on its own: a run killed mid-write leaves its last
line cut off, which is the end of the run, not damage inside the history.

Read from the history itself (local or through Hadoop) every time, never from the
columnar cache, whose rows say nothing of where the file ends.
"""

from __future__ import annotations

import json

from kafka_trial.spark_analysis.read.history_parse import line_is_damaged
from kafka_trial.spark_analysis.read.sources import ByteRanges
from pyspark.sql import SparkSession

_CHUNK = 65536


def last_line(src: ByteRanges) -> tuple[bytes, bool] | None:
    """The real last line that is not blank, however long, and whether a line end
    follows it; None for a history of blank lines only."""
    size = src.size()
    end = size
    # Trailing blank lines hold no op (the reader skips them): the line before counts.
    while end > 0:
        lo = max(0, end - _CHUNK)
        chunk = src.read(lo, end - lo)
        kept = chunk.rstrip(b" \r\n")
        if kept:
            end = lo + len(kept)
            break
        end = lo
    if end == 0:
        return None
    start, pos = 0, end
    while pos > 0:
        lo = max(0, pos - _CHUNK)
        chunk = src.read(lo, pos - lo)
        nl = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if nl >= 0:
            start = lo + nl + 1
            break
        pos = lo
    tail = src.read(end, size - end)
    return src.read(start, end - start), b"\n" in tail or b"\r" in tail


def last_line_state(src: ByteRanges) -> str:
    """'empty', 'ok', 'cut' when the real last line was cut off mid-write, or
    'damaged' when it is whole (newline-terminated) but not an op.

    The last line is found however long it is. One that parses is whole even if its
    newline never made it; one that ends in a newline but does not parse was not cut
    off, it is damaged like any other line."""
    found = last_line(src)
    if found is None:
        return "empty"
    line, terminated = found
    try:
        whole = isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        whole = False
    if whole:
        return "ok"
    return "damaged" if terminated else "cut"


def cut_line(spark: SparkSession, src: ByteRanges, state: str) -> tuple[str, str]:
    """The last line's state as the analysis counted it, and the cut-off line's text
    ("" unless the state is 'cut'): `state` is `last_line_state`'s, taken before
    the history was read."""
    if state != "cut":
        return state, ""
    found = last_line(src)
    cut = found[0].decode("utf-8", "replace") if found else ""
    # Python's JSON and Spark's differ at the edges (single quotes, text after the
    # object): the tolerance is exact only if the analysis counted this very line.
    if not line_is_damaged(spark, cut):
        return "ok", ""
    return state, cut
