"""Where a history is: a run directory, a history file, or any URI Spark reads
(file://, hdfs://, s3a://, ...), so a history on shared storage can be checked by
an existing Spark cluster without copying it.

A local history is read by this process too (its last line, the columnar cache);
a remote one only through Spark's Hadoop file system, from the same JVM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from kafka_trial.contracts.errors import TrialError
from pyspark.sql import SparkSession

HISTORY = "history.jsonl"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class ByteRanges(Protocol):
    """Random access to a history's bytes, wherever it is."""

    def exists(self) -> bool: ...

    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...


@dataclass(frozen=True)
class LocalFile:
    path: Path

    def exists(self) -> bool:
        return self.path.is_file()

    def size(self) -> int:
        return self.path.stat().st_size

    def read(self, offset: int, length: int) -> bytes:
        with self.path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(length)


@dataclass(frozen=True)
class HadoopFile:
    """A file read through the JVM's Hadoop FileSystem: whatever Spark can read."""

    spark: SparkSession
    uri: str

    def _fs_path(self):  # type: ignore[no-untyped-def]
        jvm = self.spark.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(self.uri)
        return path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()), path

    def exists(self) -> bool:
        fs, path = self._fs_path()
        return bool(fs.exists(path))

    def size(self) -> int:
        fs, path = self._fs_path()
        return int(fs.getFileStatus(path).getLen())

    def read(self, offset: int, length: int) -> bytes:
        fs, path = self._fs_path()
        length = max(0, min(length, int(fs.getFileStatus(path).getLen()) - offset))
        stream = fs.open(path)
        try:
            stream.seek(offset)
            # A Java byte[] comes back to Python as a copy: read it in one call.
            io = self.spark.sparkContext._jvm.org.apache.commons.io.IOUtils
            return bytes(io.toByteArray(stream, length))
        finally:
            stream.close()


@dataclass(frozen=True)
class HistorySource:
    uri: str  # what Spark reads
    local: Path | None  # the file itself, when it is on this machine
    out_dir: Path  # where results.json (and a cache) go
    spec: Path | None  # spec.json beside a local history, if there is one

    def ranges(self, spark: SparkSession) -> ByteRanges:
        return LocalFile(self.local) if self.local is not None else HadoopFile(spark, self.uri)

    @property
    def remote(self) -> bool:
        return self.local is None


def resolve(target: str | Path, out_dir: Path | None = None) -> HistorySource:
    """A run directory, a history file, or a URI; out_dir overrides where results go
    (for a remote history, the current directory unless given)."""
    text = str(target)
    if _SCHEME.match(text):
        parsed = urlparse(text)
        if parsed.scheme != "file":
            return HistorySource(text, None, out_dir or Path.cwd(), None)
        text = unquote(parsed.path)
    path = Path(text).expanduser()
    if path.is_dir():
        path = path / HISTORY
    if not path.is_file():
        raise TrialError(
            f"{path} not found",
            "pass a run directory, a history.jsonl, or a URI Spark can read (hdfs://, s3a://)",
        )
    path = path.resolve()
    spec = path.parent / "spec.json"
    return HistorySource(
        path.as_uri(), path, out_dir or path.parent, spec if spec.is_file() else None
    )
