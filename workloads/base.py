"""What every workload shares: one client context, a lane per worker, counters, and
the Workload protocol the runner loops over (Jepsen's client + generator).

A workload says which topics it writes, builds its workers for the lanes it is
given, and has a final phase after the heal (group offsets). The drain of every
written topic is generic (drain.py) and runs after every workload's final phase,
unless the workload drains that topic itself (the optional hooks below the protocol).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.ops import Send
from kafka_trial.workloads.processes import ProcessIds, UniqueValues


@dataclass
class AckTracker:
    """Highest acknowledged offset per partition: the final drain reads up to it."""

    _max: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    acked: int = 0

    def record(self, partition: int, offset: int | None) -> None:
        with self._lock:
            self.acked += 1
            if offset is not None and offset > self._max.get(partition, -1):
                self._max[partition] = offset

    def record_sends(self, done: Iterable[Send]) -> None:
        """Every completed send that was acknowledged (outcome ok)."""
        for s in done:
            if s.outcome == "ok" and s.partition is not None:
                self.record(s.partition, s.offset)

    def snapshot(self) -> dict[int, int]:
        with self._lock:
            return dict(self._max)


@dataclass
class AckBook:
    """One AckTracker per topic written."""

    _by_topic: dict[str, AckTracker] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def topic(self, name: str) -> AckTracker:
        with self._lock:
            return self._by_topic.setdefault(name, AckTracker())


@dataclass(frozen=True)
class ClientContext:
    """What every worker of a run shares. `bootstrap_for(lane)` gives the bootstrap
    servers of a client lane; `extra_config` is merged into every librdkafka config
    (e.g. librdkafka's mock cluster in plumbing tests)."""

    history: HistoryWriter
    bootstrap_for: Callable[[int], str]
    stop: threading.Event = field(default_factory=threading.Event)
    seed: int = 0
    run_id: str = "local"
    logger: Any = None
    pids: ProcessIds = field(default_factory=ProcessIds)
    # Producer client ids: each librdkafka producer instance (session) gets its own.
    client_ids: ProcessIds = field(default_factory=ProcessIds)
    values: UniqueValues = field(default_factory=UniqueValues)
    acks: AckBook = field(default_factory=AckBook)
    extra_config: dict[str, Any] = field(default_factory=dict)
    # Set when the cluster is gone for good (its engine died): the final phase stops
    # at once instead of polling nothing until its time limit.
    abort: threading.Event = field(default_factory=threading.Event)
    # The run's directory, for what a workload writes beside the history (the app
    # on trial's output); None outside a run (a user's own session).
    run_dir: Path | None = None

    def acks_for(self, topic: str) -> AckTracker:
        """The acknowledged offsets of one topic: its writers record, its drain reads."""
        return self.acks.topic(topic)

    def client_config(self, lane: Lane, **conf: Any) -> dict[str, Any]:
        """A librdkafka config for one lane: quiet logs into the run's client log."""
        out: dict[str, Any] = {"bootstrap.servers": lane.bootstrap, "log_level": 3, **conf}
        if self.logger is not None:
            out["logger"] = self.logger
        return {**out, **self.extra_config}


@dataclass(frozen=True)
class Lane:
    """Worker k of a run uses client lane k (mod the cluster's lanes), so a fault on
    one lane cuts exactly one worker off; its seed derives from the run's seed."""

    index: int
    bootstrap: str
    seed: int

    @staticmethod
    def of(ctx: ClientContext, index: int) -> Lane:
        return Lane(index, ctx.bootstrap_for(index), ctx.seed * 1000 + index)


@dataclass
class Counters:
    """What a worker did to itself, summed into run.json."""

    ops: int = 0
    crashes: int = 0
    resent: int = 0
    leaves: int = 0
    stalls: int = 0


class Worker(Protocol):
    counts: Counters

    def run(self) -> None: ...


class Workload(Protocol):
    @property
    def name(self) -> str:
        """Names its workers' threads and its counters in the summary."""
        ...

    def join_s(self) -> float:
        """How long a stopped worker may take to finish (or give up on) its op."""
        ...

    def topics(self) -> tuple[TopicSpec, ...]:
        """The topics it writes: created before the run, drained after it."""
        ...

    def workers(self, ctx: ClientContext, lanes: Callable[[], Lane]) -> list[Worker]:
        """Its workers; each takes the next lane from `lanes`."""
        ...

    def finish(self, ctx: ClientContext) -> None:
        """Its final phase after the heal (e.g. record group offsets)."""
        ...


# Optional hooks a workload may have besides the protocol (the session looks them up,
# so the workloads without them, a user's included, need nothing new):
#   start(ctx) -> None      before any worker starts (the app on trial starts here)
#   close() -> None         on every teardown path, whatever happened; never raises
#   drain_own(ctx, topic, settings) -> DrainResult | None
#                           drains a topic it wrote in its own way (None: not its own)
#   summary() -> dict       what it did, for run.json
