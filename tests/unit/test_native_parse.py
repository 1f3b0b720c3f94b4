"""The native parse (spark_analysis/read/native_parse.py) against Spark's own: on every
history it accepts, the same flat rows as history_parse.flatten(read_json(...));
every line Spark counts as damaged, and any line it is unsure of, makes it decline."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kafka_trial.spark_analysis import job
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read import columnar
from kafka_trial.spark_analysis.read.history_parse import FLAT_SCHEMA, flatten, read_json
from kafka_trial.spark_analysis.read.native_parse import to_parquet
from kafka_trial.spark_analysis.read.sources import resolve

from tests import random_histories
from tests.histories import Builder
from tests.history_lines import LINES, op_line
from tests.results import ran

pytestmark = pytest.mark.filterwarnings("ignore")


def spark_rows(spark: Any, path: Path) -> Counter[tuple[Any, ...]]:
    rows = flatten(read_json(spark, path.as_uri())).collect()
    return Counter(tuple(r) for r in rows)


def native_rows(path: Path, tmp: Path) -> Counter[tuple[Any, ...]] | None:
    out = tmp / (path.stem + ".parquet")
    n = to_parquet(path, out)
    if n is None:
        assert not out.exists(), "a declined parse leaves no file"
        return None
    table = pq.read_table(out)
    assert table.schema.names == FLAT_SCHEMA.names
    assert table.num_rows == n
    return Counter(tuple(r[c] for c in FLAT_SCHEMA.names) for r in table.to_pylist())


def test_random_histories_give_spark_s_rows(spark: Any, tmp_path: Path) -> None:
    # The differential generator's histories: sends, transactions (info ones
    # re-sent), polls split into micro-ops, process ops, drains with at_end, group
    # offsets, and the nemesis; two batches of 60 histories.
    for seed in (1, 2):
        path = tmp_path / f"h{seed}.jsonl"
        random_histories.write([random_histories.history(seed, i) for i in range(60)], path)
        random_histories.write_txn_batch(
            random_histories.txn_batch(seed), tmp_path / f"t{seed}.jsonl"
        )
        for p in (path, tmp_path / f"t{seed}.jsonl"):
            native = native_rows(p, tmp_path)
            assert native is not None, f"{p.name}: declined a history the writer wrote"
            spark_side = spark_rows(spark, p)
            assert native == spark_side, (
                f"{p.name}: {sum((native - spark_side).values())} rows only native, "
                f"{sum((spark_side - native).values())} only Spark's, e.g. "
                f"{list(native - spark_side)[:2]} / {list(spark_side - native)[:2]}"
            )


def test_every_kind_of_row_is_spark_s(spark: Any, tmp_path: Path) -> None:
    """A line of each kind of micro-op item, the int64 bounds, null fields, a
    nemesis value that comes before the op's index, a string process, blank lines."""
    lines = [
        op_line(1),
        op_line(
            2,
            f="send",
            type="invoke",
            value=[
                {
                    "op": "send",
                    "topic": "t",
                    "partition": 1,
                    "value": 2**63 - 1,
                    "client": 5,
                    "seq": 9,
                }
            ],
        ),
        op_line(
            3,
            f="send",
            value=[
                {
                    "op": "send",
                    "topic": "t",
                    "partition": 1,
                    "value": -(2**63),
                    "offset": 4,
                    "outcome": "ok",
                    "resend": True,
                }
            ],
        ),
        op_line(
            4,
            f="group-offsets",
            value=[
                {
                    "op": "group-offsets",
                    "group": "g",
                    "offsets": [{"topic": "t", "partition": 0, "offset": 7}],
                }
            ],
        ),
        op_line(
            5,
            process="drain",
            value=[
                {
                    "op": "poll",
                    "role": "drain",
                    "records": [],
                    "at_end": [{"topic": "t", "partition": 0, "offset": 3}],
                }
            ],
        ),
        op_line(6, f="assign", value=[{"op": "assign", "partitions": [0, 2]}]),
        op_line(7, f="stall", value=[{"op": "stall", "ms": 10}]),
        op_line(
            8,
            value=[
                {
                    "op": "poll",
                    "records": [{"topic": "t", "partition": 0, "offset": None, "value": None}],
                }
            ],
        ),
        op_line(9, value=[]),
        '{"value":{"nodes":["b1"]},"index":10,"time":1,"type":"ok","process":"nemesis","f":"kill"}',
        op_line(11, process="nemesis", f="poll", value="not micro-ops"),
        op_line(
            12,
            f="txn",
            type="info",
            error="timed out",
            value=[
                {"op": "send", "topic": "t", "partition": 0, "value": 3, "outcome": "info"},
                {
                    "op": "poll",
                    "records": [{"topic": "t", "partition": 0, "offset": 1, "value": 4}],
                },
            ],
        ),
        op_line(13, f="commit", value=[{"op": "commit", "offsets": []}]),
        "   ",
        "",
        op_line(14, time=None),
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    native = native_rows(path, tmp_path)
    assert native is not None
    assert native == spark_rows(spark, path)
    kinds = Counter(r[FLAT_SCHEMA.names.index("kind")] for r in native.elements())
    assert {"op", "send", "record", "offset", "end", "partition", "micro"} <= set(kinds)


@pytest.mark.parametrize(("n", "line", "damaged"), [(n, *x) for n, x in enumerate(LINES)])
def test_a_line_spark_counts_as_damaged_is_declined(
    spark: Any, tmp_path: Path, n: int, line: str, damaged: bool
) -> None:
    """The parsing tests' catalogue of lines: a damaged one makes the native parse
    decline; one it accepts gives Spark's rows (the clean twins: the same history
    without that line is accepted)."""
    path = tmp_path / "history.jsonl"
    path.write_text(op_line(100) + "\n" + line + "\n" + op_line(101) + "\n")
    native = native_rows(path, tmp_path)
    if damaged:
        assert native is None, f"accepted a line Spark counts as damaged: {line[:120]}"
    elif native is not None:
        assert native == spark_rows(spark, path)
    twin = tmp_path / "twin.jsonl"
    twin.write_text(op_line(100) + "\n" + op_line(101) + "\n")
    assert native_rows(twin, tmp_path) is not None


@pytest.mark.parametrize(
    "text",
    [
        op_line(1) + "\r\n",  # Spark splits at \r too
        op_line(1, error=7) + "\n",  # a number where a string goes
        op_line(1, extra=1) + "\n",  # a key the format does not have
        op_line(1, value=[{"op": "poll", "records": [], "bogus": 1}]) + "\n",
        op_line(1, value=[{"op": "poll", "at_end": [None]}]) + "\n",
        op_line(1, f="assign", value=[{"op": "assign", "partitions": [None]}]) + "\n",
        op_line(1).replace('"index":1', '"index":true') + "\n",
        op_line(1).replace('"time":1', '"time":NaN') + "\n",
        op_line(1) + "\t\n",
        "\t\n",
        op_line(1).replace('"topic":"t"', '"topic":"\\ud800"') + "\n",  # not UTF-8 encodable
    ],
)
def test_what_it_is_unsure_of_it_declines(tmp_path: Path, text: str) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    assert native_rows(path, tmp_path) is None
    # The twin: the plain line is accepted.
    path.write_text(op_line(1) + "\n")
    assert native_rows(path, tmp_path) is not None


# --- through analyze ------------------------------------------------------------------


def _lossy(run_dir: Path) -> Path:
    b = Builder(run_dir)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "info")])
    b.poll(2, [(1, 0, 0), (1, 0, 0)])  # a nonmonotonic poll
    b.nemesis("kill", {"nodes": ["b1"], "took_s": 0.25})  # a float the parse ignores
    b.drain(1, [(1, 0, 0)], at_end={0: 1})  # 2 is lost: truncated
    return b.done()


def _same(run_dir: Path, other: Path) -> Path:
    """A copy of a run directory's history (and spec) in a directory of its own."""
    shutil.copytree(run_dir, other)
    for leftover in ("results.json", "report-data.json"):
        (other / leftover).unlink(missing_ok=True)
    return other


def test_an_analysis_parses_natively_and_judges_as_spark_s_parse_does(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A temporary directory of its own: other workers' analyses use the machine's.
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    first = _lossy(tmp_path / "native")
    native = analyze(first)
    a = native.analysis
    assert (a.parser, a.cache) == ("native", "small")
    assert not list(own_tmp.glob("kt-native-*")), "its Parquet is removed"
    monkeypatch.setenv("KAFKA_TRIAL_NATIVE_MAX_BYTES", "100")  # above it, Spark parses
    assert analyze(_same(first, tmp_path / "large")).analysis.parser == "spark"
    monkeypatch.delenv("KAFKA_TRIAL_NATIVE_MAX_BYTES")
    monkeypatch.setenv("KAFKA_TRIAL_NATIVE_PARSE", "0")
    # The same history, byte for byte: a second one written under load took 3 ms
    # longer, and its span_s differed (a CI run of 2026-11-28).
    by_spark = analyze(_same(first, tmp_path / "spark"))
    assert by_spark.analysis.parser == "spark"
    assert ran(native) == ran(by_spark)
    assert ran(native)["lost-write"] == 1
    assert native.valid is False and native.stats == by_spark.stats


def test_a_damaged_line_leaves_the_parse_to_spark_which_counts_it(
    spark: Any, tmp_path: Path
) -> None:
    run_dir = _lossy(tmp_path)
    with (run_dir / "history.jsonl").open("a") as fh:
        fh.write('{"index":99,"time":1,"type":"ok","process":7,"f":"poll","value":[null]}\n')
    res = analyze(run_dir)
    assert res.analysis.parser == "spark"
    assert res.history.damaged_lines == 1 and res.valid == "unknown"


def test_a_large_history_s_native_parse_is_its_cache(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_TRIAL_CACHE_MIN_BYTES", "0")
    run_dir = _lossy(tmp_path)
    first = analyze(run_dir).analysis
    assert (first.parser, first.cache, first.cache_found) == ("native", "written", "none")
    assert (run_dir / "history.parquet" / "part-00000.snappy.parquet").is_file()
    second = analyze(run_dir).analysis
    assert (second.parser, second.cache) == ("", "hit")


def test_a_native_parse_that_raises_leaves_the_parse_to_spark(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(history: Path) -> None:
        raise RuntimeError("a bug in the optimisation")

    monkeypatch.setattr(job, "prepare", broken)
    res = analyze(_lossy(tmp_path))
    assert res.analysis.parser == "spark"
    assert ran(res)["lost-write"] == 1


def test_for_a_cluster_a_small_history_gets_no_temporary_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spark:// master's executors read the history where it is; a temporary
    directory of the driver's machine is not there, the cache beside the history is."""
    run_dir = _lossy(tmp_path)
    src = resolve(run_dir, None)
    prepared = job._start_prepare(src, "spark://elsewhere:7077")
    assert prepared is not None and prepared.result().native == ""
    here = job._start_prepare(src, None).result()  # the spec's master: local[*]
    assert here.native == "temp" and here.temp is not None
    shutil.rmtree(here.temp)
    # One large enough to cache is parsed natively for a cluster too: into the cache.
    monkeypatch.setenv("KAFKA_TRIAL_CACHE_MIN_BYTES", "0")
    assert src.local is not None
    cached = columnar.prepare(src.local, temp_ok=False)
    assert (cached.native, cached.current) == ("written", True)
    assert (run_dir / "history.parquet").is_dir()
