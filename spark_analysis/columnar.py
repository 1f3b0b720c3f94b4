"""One parse: the history's flat rows, cached as Parquet beside history.jsonl.

The JSONL stays the contract and the source of truth. The cache records which bytes
it was made from (size, mtime and a hash of both ends of the file) in a sidecar
written only once the Parquet is complete, and is used only while history.jsonl
still matches; a history that grew (`kafka-trial finish`) or changed is parsed again
and the cache rewritten. Writing it is best effort: a read-only run directory only
costs the next analysis the parse.

The rows hold each line's damaged flag (history_parse.FLAT_SCHEMA), so the
damaged-line count is the same from the cache as from the JSON; the last line's
state is read from history.jsonl itself every time.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_trial.contracts.log import log
from kafka_trial.spark_analysis.history_parse import FLAT_SCHEMA, flatten, read_json
from pyspark.sql import DataFrame, SparkSession

CACHE = "history.parquet"
_ENDS = 65536
# Bump when FLAT_SCHEMA or the parse changes: an older cache is then stale.
# 2: rows carry `damaged` and `bad_line` instead of the corrupt text.
# 3: flat rows (history_parse.FLAT_SCHEMA) instead of the parsed lines.
FORMAT = 3
# Below this, parsing the JSON costs less than writing and reading the cache. Not
# the one-task bound of that time (64 MiB): a 31 MB history's first analysis took as long
# without the cache (29.9-30.1 s against 29.8-30.9 s) and a second one longer
# (12.2-12.6 s against 10.7-11.4 s); 2026-11-24, 2 cores.
MIN_BYTES_DEFAULT = 16 << 20


def _min_bytes() -> int:
    return int(os.environ.get("KAFKA_TRIAL_CACHE_MIN_BYTES", MIN_BYTES_DEFAULT))


def fingerprint(path: Path) -> dict[str, object]:
    st = path.stat()
    h = hashlib.sha256()
    with path.open("rb") as fh:
        h.update(fh.read(_ENDS))
        fh.seek(max(0, st.st_size - _ENDS))
        h.update(fh.read(_ENDS))
    return {
        "format": FORMAT,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ends_sha256": h.hexdigest(),
        "schema": FLAT_SCHEMA.json(),
    }


def _files(cache: Path) -> dict[str, int]:
    """The cache's data files and their sizes: a file lost or cut since the sidecar
    was written makes the cache unusable rather than the analysis fail."""
    return {
        p.name: p.stat().st_size
        for p in sorted(cache.iterdir())
        if p.is_file() and not p.name.startswith((".", "_"))
    }


def _sidecar(cache: Path) -> Path:
    return cache.with_name(cache.name + ".json")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class ParsedRows:
    rows: DataFrame
    # "hit" (read from the cache), "written" (parsed, cached, read back), "small"
    # (parsed only: not worth a cache) or "unwritable" (parsed only)
    status: str
    # what was there before: "none", "stale" (a cache the JSONL no longer matches, or
    # whose record is unreadable: not used) or "current"
    found: str

    @property
    def from_parquet(self) -> bool:
        """The rows are read from the cache's Parquet files, not parsed from JSON."""
        return self.status in ("hit", "written")


def _current(cache: Path, want: dict[str, object]) -> tuple[bool, bool]:
    """(whether some cache is there, whether it matches `want`)."""
    side = _sidecar(cache)
    there = cache.exists() or side.exists()
    try:
        have: Any = json.loads(side.read_text())
    except (OSError, ValueError):
        return there, False
    if not isinstance(have, dict) or not cache.is_dir():
        return there, False
    files = have.pop("files", None)
    try:
        return there, have == want and bool(files) and files == _files(cache)
    except OSError:
        return there, False


def _flat_rows(spark: SparkSession, history: Path) -> DataFrame:
    return flatten(read_json(spark, history.as_uri()))


def parsed_rows(spark: SparkSession, history: Path) -> ParsedRows:
    """The flat rows (FLAT_SCHEMA) of a local history, from its cache when that
    still matches it, else parsed from the JSON (and cached when worth it)."""
    if history.stat().st_size < _min_bytes():
        return ParsedRows(_flat_rows(spark, history), "small", "none")
    cache = history.with_name(CACHE)
    want = fingerprint(history)
    there, current = _current(cache, want)
    if current:
        rows = spark.read.schema(FLAT_SCHEMA).parquet(cache.as_uri())
        return ParsedRows(rows, "hit", "current")
    found = "stale" if there else "none"
    tmp = cache.with_name(f".{CACHE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        # No sidecar while the Parquet is replaced: never a half-made cache in use.
        _sidecar(cache).unlink(missing_ok=True)
        _flat_rows(spark, history).write.parquet(tmp.as_uri())
        _remove(cache)
        tmp.rename(cache)
        if fingerprint(history) != want:
            # Written to while it was parsed: these rows are of bytes no longer there.
            log("history.jsonl changed while it was cached; parsing it again")
            return ParsedRows(_flat_rows(spark, history), "unwritable", found)
        side_tmp = tmp.with_name(tmp.name + ".json")
        side_tmp.write_text(json.dumps({**want, "files": _files(cache)}))
        os.replace(side_tmp, _sidecar(cache))
    except Exception as e:  # the cache is an optimisation; the JSON still answers
        log(f"history cache not written ({type(e).__name__}: {str(e)[:200]}); parsing the JSON")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.with_name(tmp.name + ".json").unlink(missing_ok=True)
        return ParsedRows(_flat_rows(spark, history), "unwritable", found)
    rows = spark.read.schema(FLAT_SCHEMA).parquet(cache.as_uri())
    return ParsedRows(rows, "written", found)
