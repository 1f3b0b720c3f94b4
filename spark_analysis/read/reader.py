"""The one reader of a history: its flat rows, whoever parsed them, and its frames;
and, without Spark, the acknowledged sends it holds (what `kafka-trial finish`'s
drain aims for)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_trial.spark_analysis.read.columnar import ParsedRows, Prepared, parsed_rows
from kafka_trial.spark_analysis.read.history_frames import Frames, load
from kafka_trial.spark_analysis.read.history_parse import FLAT_SCHEMA, SEND_FS, flatten, read_json
from kafka_trial.spark_analysis.read.native_parse import rows_by_line
from kafka_trial.spark_analysis.read.sources import HistorySource
from pyspark.sql import SparkSession

_COLUMN = {name: i for i, name in enumerate(FLAT_SCHEMA.names)}


def flat_rows(
    spark: SparkSession, src: HistorySource, prepared: Prepared | None = None
) -> ParsedRows:
    """The history's flat rows (history_parse.FLAT_SCHEMA). A local history's come
    from its columnar cache, or from the native parse's Parquet (`prepared`: parsed
    as the session started, or while the run wrote it), or from Spark's parse of the
    JSON; a remote history's from Spark's parse, through Hadoop."""
    if src.local is None:
        return ParsedRows(flatten(read_json(spark, src.uri)), "remote", "none", "spark")
    return parsed_rows(spark, src.local, prepared)


def read_frames(
    spark: SparkSession,
    src: HistorySource,
    prepared: Prepared | None = None,
    one_task: bool = False,
) -> tuple[Frames, ParsedRows]:
    """The history's frames (history_frames.load), and its rows as `flat_rows` found
    them. `one_task`: the whole history in one partition (see `load`)."""
    rows = flat_rows(spark, src, prepared)
    frames = load(
        spark, src.uri, rows.rows, one_task=one_task, columnar=rows.from_parquet, lanes=rows.lanes
    )
    return frames, rows


def parse_facts(rows: ParsedRows, prepared: Prepared | None) -> dict[str, Any]:
    """AnalysisFacts' account of who parsed the history and from where."""
    return {
        "cache": rows.status,
        "cache_found": rows.found,
        "parser": rows.parser,
        "native_parse_s": round(prepared.seconds, 3) if prepared else 0.0,
        "parsed_during_run": bool(
            prepared is not None and prepared.followed and rows.parser == "native"
        ),
    }


def acked_sends(history: Path) -> Iterator[tuple[str, int | None, int | None]]:
    """(topic, partition, offset) of each acknowledged send the history holds: a send
    micro-op of outcome ok in an ok op that sends (a send or a transaction).

    From the native parse's rows, line by line, without Spark: a line it declines
    (cut off, damaged) holds none, as the analysis counts no send of a damaged line;
    nor does a row whose topic, partition or offset is not of its column's type."""
    kind, type_, f, outcome = (_COLUMN[c] for c in ("kind", "type", "f", "outcome"))
    topic, partition, offset = (_COLUMN[c] for c in ("topic", "partition", "offset"))
    for rows in rows_by_line(history):
        for r in rows:
            if r[kind] != "send" or r[type_] != "ok" or r[outcome] != "ok" or r[f] not in SEND_FS:
                continue
            if type(r[topic]) is str and _long(r[partition]) and _long(r[offset]):
                yield r[topic], r[partition], r[offset]


def _long(v: Any) -> bool:
    # As the rows' Arrow columns take them: a bool or a float is no long.
    return v is None or type(v) is int
