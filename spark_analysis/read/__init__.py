"""Reading a history: everything that turns history.jsonl (or a URI Spark reads) into
the analysis's rows and frames. The rest of the analysis reads a history only
through this interface, in the order an analysis uses it:

Where it is
    `resolve(target, out_dir) -> HistorySource`: a run directory, a history.jsonl or
    a URI; `HistorySource.ranges(spark)` gives its bytes (`ByteRanges`).

Before Spark's session is up (no JVM needed)
    `follow(history)`: parse history.jsonl while the run still writes it, in a child
    process (follow_parse.py).
    `prepare(history, temp_ok) -> Prepared`: the native parse (native_parse.py) into
    Parquet, the followed rows taken if they are of exactly the file's bytes, or the
    columnar cache found current (columnar.py). Runs while the JVM starts.
    `last_line_state(ranges)`: whether the last line was cut off mid-write (tail.py).

With the session
    `read_frames(spark, src, prepared, one_task) -> (Frames, ParsedRows)`: the one
    reader. Its flat rows (`flat_rows`) come from the cache, the native parse's
    Parquet, or Spark's parse of the JSON (history_parse.py), whichever applies;
    `Frames` (history_frames.py) are the filters of those rows every check reads.
    `parse_facts(rows, prepared)` says who parsed it, for results.json.
    `cut_line(spark, ranges, state)`: the cut-off last line as the analysis
    counted it.

Without Spark, for the harness
    `acked_sends(history)`: the acknowledged sends' (topic, partition, offset), from
    the native parse's rows line by line (`kafka-trial finish`'s drain aims at them).

Every parse yields the same flat rows (history_parse.FLAT_SCHEMA): the native parse
is a strict subset of Spark's, and declines (Spark parses) whatever it does not
vouch for.
"""

from __future__ import annotations

from kafka_trial.spark_analysis.read.columnar import ParsedRows, Prepared, follow, prepare
from kafka_trial.spark_analysis.read.history_frames import Frames, load
from kafka_trial.spark_analysis.read.reader import acked_sends, flat_rows, parse_facts, read_frames
from kafka_trial.spark_analysis.read.sources import (
    ByteRanges,
    HadoopFile,
    HistorySource,
    LocalFile,
    resolve,
)
from kafka_trial.spark_analysis.read.tail import cut_line, last_line_state

__all__ = [
    "ByteRanges",
    "Frames",
    "HadoopFile",
    "HistorySource",
    "LocalFile",
    "ParsedRows",
    "Prepared",
    "acked_sends",
    "cut_line",
    "flat_rows",
    "follow",
    "last_line_state",
    "load",
    "parse_facts",
    "prepare",
    "read_frames",
    "resolve",
]
