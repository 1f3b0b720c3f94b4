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
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_trial.contracts.log import log
from kafka_trial.spark_analysis.read.follow_parse import Follower, file_sha256
from kafka_trial.spark_analysis.read.history_parse import FLAT_SCHEMA, flatten, read_json
from kafka_trial.spark_analysis.read.native_parse import lanes, to_parquet
from pyspark.sql import DataFrame, SparkSession

CACHE = "history.parquet"
_ENDS = 65536
# Bump when FLAT_SCHEMA or the parse changes: an older cache is then stale.
# 2: rows carry `damaged` and `bad_line` instead of the corrupt text.
# 3: flat rows (history_parse.FLAT_SCHEMA) instead of the parsed lines.
FORMAT = 3
# Below this, parsing the JSON costs less than writing and reading the cache. It is
# lower than the one-task bound of that time (64 MiB) because a history of half that
# size already gained from the cache by its second analysis (docs/findings.md, "The
# columnar cache starts at 16 MiB").
MIN_BYTES_DEFAULT = 16 << 20


# Above this the native parse (one core) costs more than Spark's (every core). The
# bound lies between a size where the native parse won and one where it lost, and
# was not measured finer (docs/findings.md, "The native parse stops at 192 MiB").
NATIVE_MAX_BYTES = 192 << 20


# How long an analysis waits for a follower (follow_parse) to parse what is left.
FOLLOW_TIMEOUT_S = 300
_followers: dict[Path, Follower] = {}
_followers_lock = threading.Lock()


def _native_on() -> bool:
    return os.environ.get("KAFKA_TRIAL_NATIVE_PARSE", "1") != "0"


def follow(history: Path) -> None:
    """Start parsing history.jsonl while it is still being written (follow_parse):
    the next `prepare` of it in this process takes those rows if they are of exactly
    the bytes it holds by then."""
    if not _native_on() or not history.is_file():
        return
    key = history.resolve()
    with _followers_lock:
        if key not in _followers:
            out = history.with_name(f".{CACHE}.follow.{os.getpid()}.{uuid.uuid4().hex[:8]}")
            _followers[key] = Follower(history, out)


def _take_follower(history: Path) -> Follower | None:
    with _followers_lock:
        return _followers.pop(history.resolve(), None)


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
    # (parsed only: not worth a cache), "unwritable" (parsed only) or "remote" (a
    # history not on this machine: Spark parses it where it is, and caches nothing)
    status: str
    # what was there before: "none", "stale" (a cache the JSONL no longer matches, or
    # whose record is unreadable: not used) or "current"
    found: str
    # what parsed history.jsonl: "native" (native_parse, before Spark's session was
    # needed), "spark" (Spark's JSON reader), or "" (nothing: the cache was current)
    parser: str = ""
    # Parquet the native parse wrote for this analysis only (a history too small to
    # cache): removed (Prepared.remove_temp) once the analysis is done, or has failed.
    temp: Path | None = None
    # The nemesis's and the application's ops, whole, as the native parse kept them
    # in the Parquet (native_parse.lanes); None where it did not (read from the text).
    lanes: tuple[dict[str, Any], ...] | None = None

    @property
    def from_parquet(self) -> bool:
        """The rows are read from Parquet files, not parsed from JSON."""
        return self.status in ("hit", "written") or self.temp is not None


@dataclass(frozen=True)
class Prepared:
    """What `prepare` did before Spark was needed: the cache's state for `parsed_rows`."""

    found: str  # as ParsedRows.found
    current: bool  # the cache matches history.jsonl now (found current, or written natively)
    # "written", "temp" (small: Parquet in `temp`), "declined" (Spark must parse),
    # "unwritable", "failed" (it raised: Spark parses), or "" (not tried)
    native: str
    seconds: float = 0.0
    temp: Path | None = None
    followed: bool = False  # the rows were parsed while the run wrote them (follow)

    def remove_temp(self) -> None:
        """Remove the Parquet made for this analysis only, once it no longer reads it."""
        if self.temp is not None:
            shutil.rmtree(self.temp, ignore_errors=True)


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


def _tmp_beside(cache: Path) -> Path:
    return cache.with_name(f".{CACHE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _install(tmp: Path, cache: Path, history: Path, want: dict[str, object]) -> bool:
    """Make the Parquet directory `tmp` the cache of `history`, with its sidecar; False
    (and nothing installed) if history.jsonl changed since `want` was taken."""
    _remove(cache)
    tmp.rename(cache)
    if fingerprint(history) != want:
        # Written to while it was parsed: these rows are of bytes no longer there.
        log("history.jsonl changed while it was cached; parsing it again")
        return False
    side_tmp = tmp.with_name(tmp.name + ".json")
    side_tmp.write_text(json.dumps({**want, "files": _files(cache)}))
    os.replace(side_tmp, _sidecar(cache))
    return True


def prepare(history: Path, temp_ok: bool = True) -> Prepared:
    """Before the session: whether the cache is current, and if it is not, the native
    parse (native_parse.py) writing it. Needs no Spark, so it runs while the JVM
    starts. A history below the cache's size bound gets its Parquet in a temporary
    directory (`Prepared.temp`), unless not `temp_ok` (a cluster's executors would
    not see it); one above NATIVE_MAX_BYTES is left to Spark's parse, unless it was
    followed while it was written (`follow`): then only what was left is parsed."""
    follower = _take_follower(history)
    try:
        return _prepare(history, temp_ok, follower)
    finally:
        if follower is not None:
            follower.abandon()  # a no-op once its rows were taken


def _prepare(history: Path, temp_ok: bool, follower: Follower | None) -> Prepared:
    t0 = time.monotonic()
    size = history.stat().st_size
    native_on = _native_on() and (
        follower is not None
        or size <= int(os.environ.get("KAFKA_TRIAL_NATIVE_MAX_BYTES", NATIVE_MAX_BYTES))
    )
    if size < _min_bytes():
        # Not worth a cache beside it, but the native parse still spares Spark the JSON.
        if not native_on or not temp_ok:
            return Prepared("none", False, "")
        temp = Path(tempfile.mkdtemp(prefix="kt-native-"))
        rows, followed = _native(history, temp / "part-00000.snappy.parquet", follower)
        if rows is None:
            shutil.rmtree(temp, ignore_errors=True)
            return Prepared("none", False, "declined", time.monotonic() - t0)
        return Prepared("none", False, "temp", time.monotonic() - t0, temp, followed)
    cache = history.with_name(CACHE)
    want = fingerprint(history)
    there, current = _current(cache, want)
    if current:
        return Prepared("current", True, "", time.monotonic() - t0)
    found = "stale" if there else "none"
    if not native_on:
        return Prepared(found, False, "")  # the benchmark's comparison: Spark parses
    tmp = _tmp_beside(cache)
    try:
        _sidecar(cache).unlink(missing_ok=True)
        tmp.mkdir()
        rows, followed = _native(history, tmp / "part-00000.snappy.parquet", follower)
        if rows is None:
            shutil.rmtree(tmp, ignore_errors=True)
            return Prepared(found, False, "declined", time.monotonic() - t0)
        ok = _install(tmp, cache, history, want)
    except OSError as e:  # a read-only run directory: Spark parses the JSON
        log(f"history cache not written ({type(e).__name__}: {str(e)[:200]}); parsing the JSON")
        shutil.rmtree(tmp, ignore_errors=True)
        return Prepared(found, False, "unwritable", time.monotonic() - t0)
    return Prepared(
        found, ok, "written" if ok else "declined", time.monotonic() - t0, followed=followed and ok
    )


def _native(history: Path, dest: Path, follower: Follower | None) -> tuple[int | None, bool]:
    """history's flat rows into the Parquet file `dest`, and whether they came from
    the follower: its rows only if the bytes it parsed are exactly what history.jsonl
    holds now, else a parse now (None: declined)."""
    if follower is not None:
        got = follower.finish(FOLLOW_TIMEOUT_S)
        if got is not None and got.rows is not None:
            if (got.size, got.sha256) == file_sha256(history):
                shutil.move(got.out, dest)
                return got.rows, True
            log("history.jsonl is not what was parsed while the run wrote it; parsing it again")
    return to_parquet(history, dest), False


def _flat_rows(spark: SparkSession, history: Path) -> DataFrame:
    return flatten(read_json(spark, history.as_uri()))


def parsed_rows(spark: SparkSession, history: Path, prepared: Prepared | None = None) -> ParsedRows:
    """The flat rows (FLAT_SCHEMA) of a local history, from its cache when that
    still matches it, else parsed from the JSON (and cached when worth it).
    `prepared`: what `prepare` already did (it is run here if not given)."""
    prep = prepared if prepared is not None else prepare(history)
    cache = history.with_name(CACHE)
    if prep.current and prep.native == "written":
        rows = spark.read.schema(FLAT_SCHEMA).parquet(cache.as_uri())
        return ParsedRows(rows, "written", prep.found, "native", lanes=lanes(cache))
    if prep.current:
        rows = spark.read.schema(FLAT_SCHEMA).parquet(cache.as_uri())
        return ParsedRows(rows, "hit", "current", lanes=lanes(cache))
    if prep.native == "temp" and prep.temp is not None:
        rows = spark.read.schema(FLAT_SCHEMA).parquet(prep.temp.as_uri())
        return ParsedRows(rows, "small", "none", "native", prep.temp, lanes(prep.temp))
    if history.stat().st_size < _min_bytes():
        return ParsedRows(_flat_rows(spark, history), "small", "none", "spark")
    if prep.native == "unwritable":
        return ParsedRows(_flat_rows(spark, history), "unwritable", prep.found, "spark")
    want = fingerprint(history)
    found = prep.found
    tmp = _tmp_beside(cache)
    try:
        # No sidecar while the Parquet is replaced: never a half-made cache in use.
        _sidecar(cache).unlink(missing_ok=True)
        _flat_rows(spark, history).write.parquet(tmp.as_uri())
        if not _install(tmp, cache, history, want):
            return ParsedRows(_flat_rows(spark, history), "unwritable", found, "spark")
    except Exception as e:  # the cache is an optimisation; the JSON still answers
        log(f"history cache not written ({type(e).__name__}: {str(e)[:200]}); parsing the JSON")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.with_name(tmp.name + ".json").unlink(missing_ok=True)
        return ParsedRows(_flat_rows(spark, history), "unwritable", found, "spark")
    rows = spark.read.schema(FLAT_SCHEMA).parquet(cache.as_uri())
    return ParsedRows(rows, "written", found, "spark")
