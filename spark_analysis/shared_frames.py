"""What the checks share: one analysis's frames with its cached intermediate frames
(`Plan`), the registration of one check per anomaly of the registry, and the
frames several checks build on."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.spark_analysis.history_frames import Frames
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TP = ["topic", "partition"]
# Histories up to this many lines have their shared frames checkpointed (`Plan`).
CUT_MAX_LINES = int(os.environ.get("KAFKA_TRIAL_CUT_MAX_LINES", 500_000))


class Plan:
    """One analysis: the shared frames, plus intermediate frames several checks use,
    built and kept once, and released when the analysis ends."""

    def __init__(self, frames: Frames) -> None:
        self.frames = frames
        self._cache: dict[str, DataFrame] = {}
        # Left whole, each shared frame's plan holds every frame under it, so for a
        # small history analysing and planning the checks on top, not the data, is
        # most of the time. A local checkpoint ends the plan there, but also hides
        # the frame's size from the planner, which slows large histories: hence the
        # line bound (docs/findings.md, "Shared frames are checkpointed only for local
        # histories up to 500k lines"). Its blocks live on the executors and are not
        # recomputed if one is lost, so on a cluster the frames stay cached.
        self._cut = (
            frames.ops.sparkSession.sparkContext.master.startswith("local")
            and frames.lines <= CUT_MAX_LINES
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.frames, name)

    def shared(self, name: str, build: Callable[[], DataFrame]) -> DataFrame:
        if name not in self._cache:
            df = build()
            self._cache[name] = df.localCheckpoint(eager=False) if self._cut else df.cache()
        return self._cache[name]

    def release(self) -> None:
        for df in self._cache.values():
            if self._cut:
                # A checkpointed frame is no cached query: its blocks are its RDD's.
                df._jdf.logicalPlan().rdd().unpersist(False)
            else:
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
