"""The lanes the native parse keeps (native_parse.lanes): the nemesis's and the
application's ops whole, in the Parquet's metadata, so neither the report nor the
fences read the history's text again. Each use is held to the text it replaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka_trial.spark_analysis.read import native_parse
from kafka_trial.spark_analysis.read.history_frames import _fences
from kafka_trial.spark_analysis.read.native_parse import lanes, to_parquet

from tests.histories import Builder

pytestmark = pytest.mark.filterwarnings("ignore")


def _run(run_dir: Path) -> Path:
    """Takeovers that named a session, named none, and failed; nemesis values with
    floats (the takeover's `init_s`) and nesting; an app instance's lifecycle."""
    b = Builder(run_dir)
    b.h.invoke("app-0", "app-start", {"instance": 0})
    b.h.complete("ok", "app-0", "app-start", {"instance": 0, "pid": 4242})
    b.sends(0, [(10, 0, 0, "ok")])
    b.hijack(3)
    b.nemesis("kill", {"target": "leader", "brokers": [1], "nested": {"ratio": 0.25}})
    b.hijack(None)
    b.hijack(4, op_type="info", tid="kt-r-1")
    b.sends(0, [(11, 0, 1, "ok")])
    b.hijack(5, tid="kt-r-2")
    b.h.invoke("app-0", "app-exit", {"instance": 0})
    b.h.complete("ok", "app-0", "app-exit", {"instance": 0, "code": 0})
    return b.done()


def _lines(run: Path) -> list[dict[str, Any]]:
    ops = [json.loads(x) for x in (run / "history.jsonl").read_text().splitlines()]
    return [o for o in ops if o["process"] == "nemesis" or str(o["process"]).startswith("app-")]


def test_the_native_parse_keeps_the_lanes_whole(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    out = tmp_path / "rows.parquet"
    assert to_parquet(run / "history.jsonl", out)
    kept = lanes(out)
    assert kept is not None and list(kept) == _lines(run)
    assert {o["process"] for o in kept} == {"nemesis", "app-0"}
    # A float is kept as json reads it, inside a nested value too.
    assert any(o["value"].get("init_s") == 0.1 for o in kept if o["f"] == "hijack-txn")
    # A directory of the one file (the cache, a temporary copy) reads the same.
    d = tmp_path / "dir"
    d.mkdir()
    out.rename(d / "part-00000.snappy.parquet")
    assert lanes(d) == kept


def test_more_lanes_than_the_bound_keep_none(tmp_path: Path, monkeypatch) -> None:
    """Beyond LANES_MAX nothing is kept, and the analysis reads the text as before."""
    run = _run(tmp_path / "run")
    monkeypatch.setattr(native_parse, "LANES_MAX", len(_lines(run)) - 1)
    out = tmp_path / "rows.parquet"
    assert to_parquet(run / "history.jsonl", out)
    assert lanes(out) is None
    monkeypatch.setattr(native_parse, "LANES_MAX", len(_lines(run)))
    assert to_parquet(run / "history.jsonl", out) and lanes(out) is not None


def test_a_parquet_without_lanes_gives_none(tmp_path: Path) -> None:
    """Written by Spark, or by a version before the lanes: nothing kept, not nothing
    there."""
    out = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"x": [1]}), out)
    assert lanes(out) is None
    assert lanes(tmp_path / "missing.parquet") is None
    two = tmp_path / "two"
    two.mkdir()
    for i in range(2):
        pq.write_table(pa.table({"x": [i]}), two / f"part-{i}.parquet")
    assert lanes(two) is None


def test_fences_from_the_lanes_are_those_read_from_the_text(spark, tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    out = tmp_path / "rows.parquet"
    assert to_parquet(run / "history.jsonl", out)
    uri = (run / "history.jsonl").as_uri()
    from_text = _fences(spark, uri, None)
    from_lanes = _fences(spark, uri, lanes(out))
    assert from_lanes == from_text
    # The named, ok takeovers only: 3 (kt-r-0) and 5 (kt-r-2), by time.
    assert [(f.client, f.transactional_id) for f in from_lanes] == [(3, "kt-r-0"), (5, "kt-r-2")]
