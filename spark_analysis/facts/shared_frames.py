"""What the checks share: one analysis's frames with its cached intermediate frames
(`AnalysisFrames`), and the registration of one check per anomaly of the registry."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.spark_analysis.read.history_frames import Frames
from pyspark.sql import DataFrame

TP = ["topic", "partition"]
# Histories up to this many lines have their shared frames checkpointed
# (`AnalysisFrames`).
CUT_MAX_LINES = int(os.environ.get("KAFKA_TRIAL_CUT_MAX_LINES", 500_000))


@dataclass(frozen=True, init=False, eq=False)
class AnalysisFrames(Frames):
    """One analysis: every frame of its history (the fields of `Frames`), plus the
    intermediate frames several checks use (`shared`), built and kept once, and
    released when the analysis ends (`release`)."""

    # Whether a shared frame is kept as a local checkpoint, not cached (`_cuts`).
    checkpointed: bool = False
    _kept: dict[str, DataFrame] = field(default_factory=dict, repr=False)

    def __init__(self, frames: Frames) -> None:
        # Frozen like the frames it holds: only `shared` adds to it, in `_kept`.
        for f in fields(Frames):
            object.__setattr__(self, f.name, getattr(frames, f.name))
        object.__setattr__(self, "checkpointed", _cuts(frames))
        object.__setattr__(self, "_kept", {})

    def shared(self, name: str, build: Callable[[], DataFrame]) -> DataFrame:
        """The intermediate frame `name`, built by `build` the first time it is asked."""
        if name not in self._kept:
            df = build()
            self._kept[name] = df.localCheckpoint(eager=False) if self.checkpointed else df.cache()
        return self._kept[name]

    def release(self) -> None:
        """Give back every frame `shared` kept."""
        for df in self._kept.values():
            if self.checkpointed:
                # A checkpointed frame is no cached query: its blocks are its RDD's.
                df._jdf.logicalPlan().rdd().unpersist(False)
            else:
                df.unpersist()
        self._kept.clear()


@contextmanager
def analysis(frames: Frames) -> Iterator[AnalysisFrames]:
    """`frames` as one analysis: itself where it is one already (what it keeps stays
    kept until its owner releases it, so a later step asks the same frames again for
    nothing), else a new one, released at the end."""
    if isinstance(frames, AnalysisFrames):
        yield frames
        return
    plan = AnalysisFrames(frames)
    try:
        yield plan
    finally:
        plan.release()


def _cuts(frames: Frames) -> bool:
    # Left whole, each shared frame's plan holds every frame under it, so for a small
    # history analysing and planning the checks on top, not the data, is most of the
    # time. A local checkpoint ends the plan there, but also hides the frame's size
    # from the planner, which slows large histories: hence the line bound
    # (docs/findings.md, "Shared frames are checkpointed only for local histories up to
    # 500k lines"). Its blocks live on the executors and are not recomputed if one is
    # lost, so on a cluster the frames stay cached.
    return (
        frames.ops.sparkSession.sparkContext.master.startswith("local")
        and frames.lines <= CUT_MAX_LINES
    )


# A check: the rows of its anomaly (checks/runner.py counts them).
Check = Callable[[AnalysisFrames], DataFrame]
REGISTERED: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    """Register the one check that computes anomaly `name` of the registry."""

    def register(fn: Check) -> Check:
        if name not in ANOMALIES:
            raise ImportError(f"check for {name}, which checkers/anomalies.py does not define")
        if name in REGISTERED:
            raise ImportError(f"two checks for {name}")
        REGISTERED[name] = fn
        return fn

    return register
