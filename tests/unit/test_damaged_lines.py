"""A damaged line is tolerated only as the real last line, cut off mid-write (issue 9,
defect 3); every other damaged line is counted and makes the verdict unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read import last_line_state
from kafka_trial.spark_analysis.read.sources import LocalFile

from tests.histories import Builder

OP = {"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "poll", "value": []}


def _state(tmp_path: Path, data: bytes) -> str:
    p = tmp_path / "h.jsonl"
    p.write_bytes(data)
    return last_line_state(LocalFile(p))


def test_last_line_states(tmp_path: Path) -> None:
    line = json.dumps(OP).encode()
    assert _state(tmp_path, b"") == "empty"
    assert _state(tmp_path, line + b"\n") == "ok"
    assert _state(tmp_path, line + b"\n" + line[:20]) == "cut"
    # Whole, only its newline missing: not a damaged line at all.
    assert _state(tmp_path, line + b"\n" + line) == "ok"
    # Whole lines that are not ops were not cut off: they are damaged.
    assert _state(tmp_path, line + b"\nnot json\n") == "damaged"


@pytest.mark.parametrize("size", [70_000, 300_000])
def test_the_real_last_line_is_found_however_long(tmp_path: Path, size: int) -> None:
    """The old check read a 64 KiB tail: a longer last line looked cut off."""
    long_op = json.dumps({**OP, "error": "x" * size}).encode()
    assert _state(tmp_path, b"garbage\n" + long_op + b"\n") == "ok"
    assert _state(tmp_path, b"garbage\n" + long_op[:-5]) == "cut"


def _valid_history(run_dir: Path) -> Builder:
    b = Builder(run_dir)
    b.sends(0, [(1, 0, 0, "ok")])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    return b


def _insert_after_first_line(path: Path, junk: bytes) -> None:
    lines = path.read_bytes().split(b"\n", 1)
    path.write_bytes(lines[0] + b"\n" + junk + b"\n" + lines[1])


def test_a_damaged_interior_line_is_reported(spark, tmp_path: Path) -> None:
    run_dir = _valid_history(tmp_path).done()
    _insert_after_first_line(run_dir / "history.jsonl", b'{"index": 1, "ti')
    res = analyze(run_dir)
    assert res.valid == "unknown"
    assert any("1 damaged line" in p for p in res.problems), res.problems


def test_a_damaged_interior_line_is_reported_when_the_last_line_lacks_its_newline(
    spark, tmp_path: Path
) -> None:
    """The old check granted the cut-off tolerance to a whole last line without its
    newline, and the damaged interior line passed as VALID."""
    run_dir = _valid_history(tmp_path).done()
    path = run_dir / "history.jsonl"
    _insert_after_first_line(path, b"garbage")
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    res = analyze(run_dir)
    assert res.history.last_line == "ok"
    assert res.valid == "unknown", res.problems


def test_a_damaged_interior_line_is_reported_after_a_long_last_line(spark, tmp_path: Path) -> None:
    b = _valid_history(tmp_path)
    b.h.invoke(2, "poll", [{"op": "poll"}])
    b.h.complete("ok", 2, "poll", [{"op": "poll", "records": []}], "x" * 100_000)
    run_dir = b.done()
    _insert_after_first_line(run_dir / "history.jsonl", b"garbage")
    res = analyze(run_dir)
    assert res.history.last_line == "ok"
    assert res.valid == "unknown", res.problems


def test_a_last_line_cut_mid_write_is_tolerated(spark, tmp_path: Path) -> None:
    """The clean twin: a crash cuts the line being written, and nothing else."""
    run_dir = _valid_history(tmp_path).done()
    with (run_dir / "history.jsonl").open("ab") as fh:
        fh.write(b'{"index": 9, "time": 1, "ty')
    res = analyze(run_dir)
    assert res.history.last_line == "cut"
    assert res.valid is True, res.problems


# --- defect 4: a field that does not convert must not drop its line silently -------


def _with_consumer_poll(run_dir: Path, value: str, offset: str) -> Path:
    """The valid history plus a consumer's poll of two records, the second written
    by hand (another tool's history) with the given value and offset."""
    run_dir = _valid_history(run_dir).done()
    path = run_dir / "history.jsonl"
    first = '{"topic": "t", "partition": 0, "offset": 0, "value": 1}'
    second = f'{{"topic": "t", "partition": 0, "offset": {offset}, "value": {value}}}'
    lines = [
        '{"index": 90, "time": 900, "type": "invoke", "process": 5, "f": "poll", '
        '"value": [{"op": "poll"}]}',
        '{"index": 91, "time": 901, "type": "ok", "process": 5, "f": "poll", "value": '
        f'[{{"op": "poll", "records": [{first}, {second}]}}]}}',
    ]
    with path.open("a") as fh:
        fh.write("\n".join(lines) + "\n")
    return run_dir


@pytest.mark.parametrize(
    ("value", "offset"),
    [(str(2**64), "1"), (str(-(2**63) - 1), "1"), ("2.5", "1"), ("2", '"abc"')],
    ids=["beyond-int64", "below-int64", "fraction", "text-offset"],
)
def test_a_field_that_does_not_convert_counts_its_line_as_damaged(
    spark, tmp_path: Path, value: str, offset: str
) -> None:
    res = analyze(_with_consumer_poll(tmp_path, value, offset))
    assert res.history.damaged_lines == 1
    assert res.valid == "unknown", res.problems


def test_values_at_the_int64_bounds_parse(spark, tmp_path: Path) -> None:
    """The clean twin: the extreme values fit, the poll's records all count (and the
    value nobody sent is `unexpected`, which proves the record was read)."""
    res = analyze(_with_consumer_poll(tmp_path, str(2**63 - 1), "1"))
    assert res.history.damaged_lines == 0
    assert res.stats.records_read == 3  # the drain's one and the poll's two
    assert res.anomalies["unexpected"].count == 1
    res = analyze(_with_consumer_poll(tmp_path / "min", str(-(2**63)), "1"))
    assert res.history.damaged_lines == 0 and res.stats.records_read == 3
