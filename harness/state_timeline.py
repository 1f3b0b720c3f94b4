"""A cluster-state timeline sampled during the run: RUN_DIR/cluster-state.jsonl.

Each line: {"time": ns on the history's clock, "up": [running brokers],
"registered": [brokers in metadata], "controller": active KRaft controller,
"partitions": {"P": {"leader", "isr", "replicas"}}}.
It shows the ISR shrink and expand that faults cause. Sampling errors are recorded
as {"time", "error"}, never raised: the timeline is an observer.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster import Cluster
from harness.history import HistoryWriter


@dataclass
class StateTimeline:
    cluster: Cluster
    topic: str
    history: HistoryWriter  # only for its clock, so both files share one timeline
    path: Path
    stop: threading.Event
    every_s: float = 1.0
    samples: int = 0

    def sample(self) -> dict[str, Any]:
        t = self.history.elapsed_ns()
        try:
            up = [j for j, b in self.cluster.brokers.items() if b.status() == "running"]
            md = self.cluster.admin().list_topics(self.topic, timeout=2)
            t_md = md.topics.get(self.topic)
            parts = {}
            if t_md is not None and t_md.error is None:
                parts = {
                    str(p.id): {
                        "leader": p.leader if p.leader >= 0 else None,
                        "isr": sorted(p.isrs),
                        "replicas": list(p.replicas),
                    }
                    for p in t_md.partitions.values()
                }
            return {
                "time": t,
                "up": up,
                "registered": sorted(md.brokers),
                "controller": self.cluster.active_controller(),
                "partitions": parts,
            }
        except Exception as e:
            return {"time": t, "error": f"{type(e).__name__}: {e}"[:300]}

    def run(self) -> None:
        with self.path.open("a", buffering=1) as fh:
            while not self.stop.is_set():
                fh.write(json.dumps(self.sample(), separators=(",", ":")) + "\n")
                self.samples += 1
                self.stop.wait(self.every_s)
