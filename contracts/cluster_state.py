"""RUN_DIR/cluster-state.jsonl: the cluster's state, sampled about once a second while
the run goes (docs/run-directory.md).

Each line is one sample, on the history's clock: the brokers up and registered, the
active controller, and each partition's leader, ISR and replicas. A sample that
could not be taken holds the error instead: the timeline is an observer, and never
stops a run. It grows only by addition: a key added later is optional.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

STATES_FILE = "cluster-state.jsonl"


@dataclass(frozen=True)
class PartitionState:
    leader: int | None = None  # None (or -1, as Kafka says it): no leader
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()

    @property
    def leading(self) -> int | None:
        return self.leader if self.leader is not None and self.leader >= 0 else None


@dataclass(frozen=True)
class StateSample:
    time: int  # ns on the history's clock
    up: tuple[int, ...] = ()  # brokers whose process runs
    registered: tuple[int, ...] = ()  # brokers the metadata lists
    controller: int | None = None  # the active KRaft controller
    partitions: dict[str, PartitionState] = field(default_factory=dict)  # by partition number
    error: str | None = None  # why no sample could be taken; then nothing else is set

    def partition(self, p: int | str) -> PartitionState:
        """Partition p's state; an empty one where the sample does not name it."""
        return self.partitions.get(str(p), _NO_PARTITION)

    def line(self) -> str:
        if self.error is not None:
            out: dict[str, object] = {"time": self.time, "error": self.error}
        else:
            out = dataclasses.asdict(self)
            del out["error"]
        return json.dumps(out, separators=(",", ":"))

    def shifted(self, by_ns: int) -> StateSample:
        return dataclasses.replace(self, time=self.time - by_ns)


_NO_PARTITION = PartitionState()
_SAMPLE = TypeAdapter(StateSample)


@dataclass(frozen=True)
class StateTimeline:
    samples: list[StateSample]
    damaged: int  # lines cut off (the run was killed while writing) or unreadable


def read_states(path: Path) -> StateTimeline:
    """Every readable sample, in file order; a damaged line is counted, never raised."""
    samples: list[StateSample] = []
    damaged = 0
    for raw in path.read_text(errors="replace").splitlines():
        try:
            samples.append(_SAMPLE.validate_json(raw))
        except ValidationError:
            damaged += 1
    return StateTimeline(samples, damaged)
