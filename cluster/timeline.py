"""A cluster-state timeline sampled during the run: RUN_DIR/cluster-state.jsonl
(contracts/cluster_state.py). It shows the ISR shrink and expand that faults cause.
Sampling errors are recorded, never raised: the timeline is an observer."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_trial.cluster.observe import Observer, partition_states
from kafka_trial.contracts.cluster_state import PartitionState, StateSample
from kafka_trial.contracts.history import HistoryWriter

if TYPE_CHECKING:
    from kafka_trial.cluster.facade import Cluster


@dataclass
class StateTimeline:
    cluster: Cluster
    topic: str
    history: HistoryWriter  # only for its clock, so both files share one timeline
    path: Path
    stop: threading.Event
    every_s: float = 1.0
    samples: int = 0

    def sample(self) -> StateSample:
        t = self.history.elapsed_ns()
        try:
            return state_sample(self.cluster.observe, self.topic, t)
        except Exception as e:
            return StateSample(time=t, error=f"{type(e).__name__}: {e}"[:300])

    def run(self) -> None:
        with self.path.open("a", buffering=1) as fh:
            while not self.stop.is_set():
                fh.write(self.sample().line() + "\n")
                self.samples += 1
                self.stop.wait(self.every_s)


def state_sample(obs: Observer, topic: str, time_ns: int) -> StateSample:
    """One cluster-state line: brokers up and registered, controller, every partition."""
    up = tuple(j for j in obs.nodes.ids() if obs.nodes.running(j))
    md = obs.metadata(topic, 2)
    parts = {
        str(p): PartitionState(s.leader, tuple(sorted(s.isr)), tuple(s.replicas))
        for p, s in partition_states(md, topic).items()
    }
    return StateSample(
        time=time_ns,
        up=up,
        registered=tuple(sorted(md.brokers)),
        controller=obs.active_controller(),
        partitions=parts,
    )
