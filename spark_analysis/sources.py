"""Where a history is: `HistorySource` and `resolve`, now in read/sources.py.

This path is the one docs/api.md names for `HistorySource`, so it stays importable.
"""

from kafka_trial.spark_analysis.read.sources import (
    ByteRanges,
    HadoopFile,
    HistorySource,
    LocalFile,
    resolve,
)

__all__ = ["ByteRanges", "HadoopFile", "HistorySource", "LocalFile", "resolve"]
