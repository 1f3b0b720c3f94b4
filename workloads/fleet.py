"""Every client worker of a run, built from the spec in one place.

Client lanes are numbered across producers, then consumers, then copiers, so a
`client-partition` of one lane cuts exactly one worker off.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.history import HistoryWriter
from harness.spec import RunSpec, TopicSpec
from workloads.consumer import PollWorker
from workloads.copier import CopierWorker
from workloads.group_consumer import GroupWorker
from workloads.processes import ProcessIds, UniqueValues
from workloads.producer import AckTracker, ProducerWorker
from workloads.transactions import TxnWorker

Worker = ProducerWorker | TxnWorker | PollWorker | GroupWorker | CopierWorker

# Per-worker counters summed into run.json: what the workload itself did to the run.
_EVENTS = ("crashes", "resent", "leaves", "stalls")


@dataclass
class Fleet:
    producers: list[ProducerWorker | TxnWorker] = field(default_factory=list)
    others: list[Worker] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def add(self, name: str, worker: Worker, guard: Callable[[Any], Any]) -> None:
        if isinstance(worker, ProducerWorker | TxnWorker):
            self.producers.append(worker)
        else:
            self.others.append(worker)
        self.threads.append(threading.Thread(target=guard(worker.run), name=name, daemon=True))

    @property
    def send_ops(self) -> int:
        return sum(w.ops for w in self.producers)

    def events(self) -> dict[str, int]:
        workers = [*self.producers, *self.others]
        return {e: sum(getattr(w, e, 0) for w in workers) for e in _EVENTS}


def build_fleet(
    spec: RunSpec,
    bootstrap_for: Callable[[int], str],
    sink: TopicSpec,
    history: HistoryWriter,
    shared: tuple[ProcessIds, UniqueValues, AckTracker, AckTracker],
    stop: threading.Event,
    names: dict[str, str],
    guard: Callable[[Any], Any],
    logger: Any = None,
) -> Fleet:
    """names: `run_id`, `group` (the consumer group) and `copier_group`."""
    pids, values, acks, sink_acks = shared
    fleet = Fleet()
    lane = 0
    for i in range(spec.producer.workers):
        seed = spec.seed * 1000 + lane
        w: ProducerWorker | TxnWorker
        if spec.producer.transactional:
            w = TxnWorker(
                spec.producer,
                spec.topic,
                bootstrap_for(lane),
                history,
                pids,
                values,
                acks,
                stop,
                f"kt-{names['run_id']}-{i}",
                seed,
                logger,
                isolation_level=spec.consumer.isolation_level,
            )
        else:
            w = ProducerWorker(
                spec.producer,
                spec.topic,
                bootstrap_for(lane),
                history,
                pids,
                values,
                acks,
                stop,
                logger,
                seed=seed,
            )
        fleet.add(f"producer-{i}", w, guard)
        lane += 1
    for i in range(spec.consumer.workers):
        c: PollWorker | GroupWorker
        if spec.consumer.mode == "subscribe":
            c = GroupWorker(
                spec.consumer,
                spec.topic,
                bootstrap_for(lane),
                history,
                pids,
                stop,
                names["group"],
                spec.seed * 1000 + lane,
                logger,
            )
        else:
            c = PollWorker(
                spec.consumer, spec.topic, bootstrap_for(lane), history, pids, stop, logger
            )
        fleet.add(f"consumer-{i}", c, guard)
        lane += 1
    for i in range(spec.copier.workers):
        cw = CopierWorker(
            spec.copier,
            spec.topic,
            sink,
            bootstrap_for(lane),
            history,
            pids,
            sink_acks,
            stop,
            names["copier_group"],
            f"kt-{names['run_id']}-copier-{i}",
            spec.seed * 1000 + lane,
            logger,
        )
        fleet.add(f"copier-{i}", cw, guard)
        lane += 1
    return fleet
