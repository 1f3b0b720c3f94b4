"""Reading a history exactly right, once (issue 9): every non-blank line is an op or a
counted, named damaged line; only the real cut-off last line is forgiven; the parsed
rows are cached as Parquet and used only while history.jsonl still matches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.checkers.results import DamagedLine, Results
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read import last_line_state
from kafka_trial.spark_analysis.read.history_parse import read_json
from kafka_trial.spark_analysis.read.sources import LocalFile

from tests.histories import Builder
from tests.history_lines import LINES, NEMESIS, op_line, poll_line
from tests.results import ran


def test_every_line_is_an_op_or_counted_as_damaged(spark, tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    # Blank lines hold no op and are no line at all, as for the JSON reader.
    path.write_text("\n".join(line for line, _ in LINES) + "\n\n   \n")
    rows = read_json(spark, path.as_uri()).collect()
    assert len(rows) == len(LINES)
    ok = sorted(r["index"] for r in rows if not r["damaged"])
    assert ok == sorted(json.loads(line.replace("'", '"'))["index"] for line, d in LINES if not d)
    named = sorted(r["bad_line"] for r in rows if r["damaged"])
    assert named == sorted(line[:200] for line, d in LINES if d)
    by_index = {r["index"]: r for r in rows if not r["damaged"]}
    # The bounds of int64 are read exactly, and a null record value is a record.
    assert by_index[6]["value"][0]["records"][0]["value"] == 2**63 - 1
    assert by_index[7]["value"][0]["records"][0]["value"] == -(2**63)
    assert by_index[8]["value"][0]["records"][0]["offset"] == 3


def _state(tmp_path: Path, data: bytes) -> str:
    p = tmp_path / "h.jsonl"
    p.write_bytes(data)
    return last_line_state(LocalFile(p))


def test_trailing_blank_lines_are_not_the_last_line(tmp_path: Path) -> None:
    line = op_line(1).encode()
    assert _state(tmp_path, line + b"\n\n  \n") == "ok"
    assert _state(tmp_path, line + b"\n" + line[:20] + b"\n\n") == "damaged"
    assert _state(tmp_path, line + b"\n" + line[:20] + b"   ") == "cut"
    assert _state(tmp_path, line + b"\r\n" + line + b"\r\n") == "ok"
    assert _state(tmp_path, b"\n \n") == "empty"
    # A very long last line with a short one before it is found whole.
    long_line = op_line(2, error="e" * 200_000).encode()
    assert _state(tmp_path, line + b"\n" + long_line) == "ok"
    assert _state(tmp_path, line + b"\n" + long_line[:150_000]) == "cut"


# --- through analyze: the verdict ----------------------------------------------------


def _valid(run_dir: Path) -> Path:
    b = Builder(run_dir)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.nemesis("kill", {"nodes": ["b1"]})
    b.drain(1, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})
    return b.done()


def _insert_after_first_line(path: Path, junk: str) -> None:
    first, rest = path.read_text().split("\n", 1)
    path.write_text(first + "\n" + junk + "\n" + rest)


def test_a_nemesis_line_cut_inside_its_value_is_reported(spark, tmp_path: Path) -> None:
    """Spark keeps the index and type it read before the cut: the line passed as an
    op, and beside a cut-off last line it would have been the one forgiven."""
    run_dir = _valid(tmp_path)
    path = run_dir / "history.jsonl"
    _insert_after_first_line(path, NEMESIS.format(i=90, v='[{"op":"x","a"'))
    with path.open("a") as fh:
        fh.write('{"index": 91, "time": 1, "ty')
    res = analyze(run_dir)
    assert res.history.last_line == "cut"
    assert res.history.damaged_lines == 2
    assert res.valid == "unknown", res.problems
    assert any("1 damaged line" in p and "index 90" in p for p in res.problems)


def test_a_cut_last_line_alone_is_forgiven(spark, tmp_path: Path) -> None:
    """The clean twin: the same history with a whole nemesis line."""
    run_dir = _valid(tmp_path)
    path = run_dir / "history.jsonl"
    _insert_after_first_line(path, NEMESIS.format(i=90, v='[{"op":"x","a":1}]'))
    with path.open("a") as fh:
        fh.write('{"index": 91, "time": 1, "ty')
    res = analyze(run_dir)
    assert res.history.last_line == "cut"
    assert res.history.damaged_lines == 1
    assert res.valid is True, res.problems


def test_a_last_line_only_python_rejects_forgives_nothing(spark, tmp_path: Path) -> None:
    """A single-quoted last op without its newline is no JSON to Python ("cut") but an
    op to Spark: forgiving one damaged line for it let the interior one through."""
    run_dir = _valid(tmp_path)
    path = run_dir / "history.jsonl"
    _insert_after_first_line(path, "garbage")
    with path.open("a") as fh:
        fh.write("{'index':90,'time':1,'type':'info','process':'nemesis','f':'note','value':1}")
    res = analyze(run_dir)
    assert res.history.last_line == "ok"
    assert res.history.damaged_lines == 1
    assert res.valid == "unknown", res.problems


def test_a_send_beyond_int64_is_damaged_and_named(spark, tmp_path: Path) -> None:
    """Another tool's history: a send of 2**64. Spark nulled the value; the send
    would have been a send of null, or vanished."""
    run_dir = _valid(tmp_path)
    big = op_line(
        90, process=9, f="send", type="invoke", value=[{"op": "send", "topic": "t", "value": 2**64}]
    )
    _insert_after_first_line(run_dir / "history.jsonl", big)
    res = analyze(run_dir)
    assert res.history.damaged_lines == 1
    assert res.history.damaged_examples == (DamagedLine(index=90, line=big[:200]),)
    assert res.valid == "unknown"
    assert any("index 90" in p for p in res.problems), res.problems


def test_a_send_at_the_int64_bound_is_an_attempt(spark, tmp_path: Path) -> None:
    """The clean twin: 2**63 - 1 is a value like any other (never acked, so not lost)."""
    run_dir = _valid(tmp_path)
    top = op_line(
        90,
        process=9,
        f="send",
        type="invoke",
        value=[{"op": "send", "topic": "t", "partition": 0, "value": 2**63 - 1}],
    )
    _insert_after_first_line(run_dir / "history.jsonl", top)
    res = analyze(run_dir)
    assert res.history.damaged_lines == 0
    assert res.stats.sends_attempted == 3
    assert res.valid is True, res.problems


# --- the columnar cache ----------------------------------------------------------------


@pytest.fixture
def _cache_every_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TRIAL_CACHE_MIN_BYTES", "0")


def _judged(res: Results) -> dict[str, Any]:
    return {
        "valid": res.valid,
        "counts": ran(res),
        "examples": {k: a.examples for k, a in res.anomalies.items()},
        "history": res.history,
        "problems": res.problems,
        "stats": res.stats,
    }


@pytest.mark.usefixtures("_cache_every_history")
def test_the_cache_answers_exactly_as_the_json(spark, tmp_path: Path) -> None:
    """Damaged lines (an out-of-range value among them), a cut last line and a lost
    write: the same results from the JSON, from the cache, and after a change."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.drain(1, [(1, 0, 0), (3, 0, 2)], at_end={0: 3})
    run_dir = b.done()
    path = run_dir / "history.jsonl"
    _insert_after_first_line(path, poll_line(90, 2**64))
    with path.open("a") as fh:
        fh.write('{"index": 91, "time": 1, "ty')
    cache, side = run_dir / "history.parquet", run_dir / "history.parquet.json"

    first = analyze(run_dir)
    assert (first.analysis.cache, first.analysis.cache_found) == ("written", "none")
    assert cache.is_dir() and json.loads(side.read_text())["size"] == path.stat().st_size
    assert first.anomalies["lost-write"].count == 1
    assert first.history.damaged_lines == 2 and first.history.last_line == "cut"
    second = analyze(run_dir)
    assert (second.analysis.cache, second.analysis.cache_found) == ("hit", "current")
    assert _judged(second) == _judged(first)

    # A data file of the cache cut short: not used, rebuilt.
    part = next(p for p in cache.iterdir() if p.name.startswith("part-"))
    part.write_bytes(part.read_bytes()[:10])
    third = analyze(run_dir)
    assert (third.analysis.cache, third.analysis.cache_found) == ("written", "stale")
    assert _judged(third) == _judged(first)

    # The history grew: the old cut line is now inside it, and counts.
    with path.open("a") as fh:
        fh.write("\n" + op_line(92, process=5, type="invoke", value=[{"op": "poll"}]) + "\n")
    fourth = analyze(run_dir)
    assert (fourth.analysis.cache, fourth.analysis.cache_found) == ("written", "stale")
    assert fourth.history.last_line == "ok"
    assert fourth.history.damaged_lines == 2
    assert any("2 damaged line" in p for p in fourth.problems), fourth.problems


@pytest.mark.usefixtures("_cache_every_history")
def test_a_cache_with_a_wrong_record_is_not_used(spark, tmp_path: Path) -> None:
    run_dir = _valid(tmp_path)
    analyze(run_dir)
    side = run_dir / "history.parquet.json"
    record = json.loads(side.read_text())
    # Same bytes, a record of an older format: its rows may mean something else.
    side.write_text(json.dumps({**record, "format": 1}))
    res = analyze(run_dir)
    assert (res.analysis.cache, res.analysis.cache_found) == ("written", "stale")
    # A record whose Parquet is gone.
    shutil.rmtree(run_dir / "history.parquet")
    res = analyze(run_dir)
    assert (res.analysis.cache, res.analysis.cache_found) == ("written", "stale")
    assert res.valid is True
