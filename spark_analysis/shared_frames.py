"""What the checks share: one analysis's frames with its cached intermediate frames
(`Plan`), the registration of one check per anomaly of the registry, and the
frames several checks build on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.spark_analysis.history_frames import Frames
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

TP = ["topic", "partition"]


class Plan:
    """One analysis: the shared frames, plus intermediate frames several checks use,
    built and cached once, and released when the analysis ends."""

    def __init__(self, frames: Frames) -> None:
        self.frames = frames
        self._cache: dict[str, DataFrame] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.frames, name)

    def shared(self, name: str, build: Callable[[], DataFrame]) -> DataFrame:
        if name not in self._cache:
            self._cache[name] = build().cache()
        return self._cache[name]

    def release(self) -> None:
        for df in self._cache.values():
            df.unpersist()
        self._cache.clear()


REGISTERED: dict[str, Callable[[Plan], DataFrame]] = {}


def check(name: str) -> Callable[[Callable[[Plan], DataFrame]], Callable[[Plan], DataFrame]]:
    """Register the one check that computes anomaly `name` of the registry."""

    def register(fn: Callable[[Plan], DataFrame]) -> Callable[[Plan], DataFrame]:
        if name not in ANOMALIES:
            raise ImportError(f"check for {name}, which checkers/anomalies.py does not define")
        if name in REGISTERED:
            raise ImportError(f"two checks for {name}")
        REGISTERED[name] = fn
        return fn

    return register


def never_written_values(fr: Plan) -> DataFrame:
    """Values none of whose sends could have committed (every send failed): a value
    sent again (a copier's re-copy, an application's resend) is maybe written if any
    of its sends was ok or info."""

    def build() -> DataFrame:
        by_value = fr.sends.groupBy("value").agg(
            F.max(F.when(F.col("outcome") != "fail", 1).otherwise(0)).alias("maybe_written")
        )
        return by_value.filter(F.col("maybe_written") == 0).select("value")

    return fr.shared("never_written", build)


def acked_sends(fr: Plan) -> DataFrame:
    return fr.shared("acked", lambda: fr.sends.filter(F.col("outcome") == "ok"))


def never_read_sends(fr: Plan) -> DataFrame:
    def build() -> DataFrame:
        read_values = fr.reads.select("value").distinct()
        return acked_sends(fr).join(read_values, "value", "left_anti")

    return fr.shared("never_read", build)


def max_read_offsets(fr: Plan) -> DataFrame:
    return fr.shared(
        "max_read", lambda: fr.reads.groupBy(*TP).agg(F.max("offset").alias("max_read_offset"))
    )


# What a rebalance line is read again for, when it is read from the history's text.
_REBALANCE_LINE = StructType(
    [
        StructField("index", LongType()),
        StructField("process", StringType()),
        StructField(
            "value",
            ArrayType(
                StructType(
                    [
                        StructField("op", StringType()),
                        StructField("partitions", ArrayType(LongType())),
                    ]
                )
            ),
        ),
    ]
)
_REBALANCE_KINDS = ("assign", "revoke", "lost")


def _rebalance_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """index, process, value (micro-ops with op and partitions) of the lines in
    `files` that may be rebalance ops: the parsed rows if the loader read them from
    Parquet (its columnar cache of the history), else the history's JSON lines."""
    if all(f.endswith(".parquet") for f in files):
        return (
            spark.read.parquet(*files)
            .filter(F.col("f").isin(*_REBALANCE_KINDS))
            .select("index", "process", "value")
        )
    # Only lines that can be rebalance ops are parsed: the rest is a text scan.
    may_be = F.lit(False)
    for kind in _REBALANCE_KINDS:
        may_be = may_be | F.col("value").contains(f'"{kind}"')
    return (
        spark.read.text(files)
        .filter(may_be)
        .select(F.from_json("value", _REBALANCE_LINE).alias("line"))
        .select("line.index", "line.process", "line.value")
    )


def rebalance_partitions(fr: Plan) -> DataFrame:
    """process, index, partition: one row per partition each ok assign / revoke / lost
    op (`index`, its completion) names.

    `Frames.rebalances` does not carry the partitions (yet: a `partitions` column is
    used when it does), so they are read again, from the lines the loader read, and
    kept only for the ops the loader accepted as rebalances."""

    def build() -> DataFrame:
        events = fr.rebalances
        if "partitions" not in events.columns:
            files = events.inputFiles()
            if not files:
                # Without its partitions a rebalance cannot be placed: the checks that
                # need it report unknown rather than judge positions without it.
                raise RuntimeError("rebalance partitions: the history's files are unknown")
            lines = _rebalance_lines(events.sparkSession, files).select(
                "index",
                "process",
                F.flatten(
                    F.transform(
                        F.filter("value", lambda m: m.op.isin(*_REBALANCE_KINDS)),
                        lambda m: F.coalesce(m.partitions, F.array().cast("array<bigint>")),
                    )
                ).alias("partitions"),
            )
            events = events.join(lines, ["process", "index"])
        return events.select(
            "process", "index", F.explode("partitions").alias("partition")
        ).distinct()

    return fr.shared("rebalance_partitions", build)
