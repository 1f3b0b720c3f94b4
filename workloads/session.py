"""Running workloads: start their workers, stop them, then the final phase (each
workload's finish, then the drain of every topic written), and close them on every
path. The runner and users' own scripts use the same session; the caller decides
when the load phase ends, and calls close() last, whatever happened."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.log import guarded, log
from kafka_trial.workloads.base import ClientContext, Counters, Lane, Worker, Workload
from kafka_trial.workloads.drain import DrainResult, drain
from kafka_trial.workloads.settings import DrainSpec

# Counters summed into run.json's client_events: what the workload did to itself.
EVENTS = ("crashes", "resent", "leaves", "stalls")


@dataclass(frozen=True)
class SessionSummary:
    """What a session did, in run.json's terms. `drains` is keyed by topic, in drain
    order: the first is the run's topic (`drain`), the next the topic written from it
    (the copier's output: `drain_output`)."""

    drains: dict[str, DrainResult]
    send_ops: int  # ops of the producers: send batches, or transactions
    values_acked: int  # in the run's topic
    client_events: dict[str, int]

    @property
    def complete(self) -> bool:
        return all(r.complete for r in self.drains.values())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, (topic, result) in enumerate(self.drains.items()):
            # No workload writes a third topic today; one that did would get its own key.
            key = ("drain", "drain_output")[i] if i < 2 else f"drain:{topic}"
            out[key] = asdict(result)
        out["send_ops"] = self.send_ops
        out["values_acked"] = self.values_acked
        out["client_events"] = self.client_events
        return out


@dataclass
class WorkloadSession:
    workloads: Sequence[Workload]
    ctx: ClientContext
    workers: dict[str, list[Worker]] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)

    def topics(self) -> list[TopicSpec]:
        """Every topic written, each once, in workload order (the run's topic first):
        the caller creates them before start(); finish() drains them."""
        seen: dict[str, TopicSpec] = {}
        for w in self.workloads:
            for t in w.topics():
                seen.setdefault(t.name, t)
        return list(seen.values())

    def start(self) -> None:
        """Every worker in a thread of its own. Lanes are numbered across workloads in
        their order, so a fault on one client lane cuts exactly one worker off."""
        lane_numbers = itertools.count()

        def lanes() -> Lane:
            return Lane.of(self.ctx, next(lane_numbers))

        for w in self.workloads:
            self.workers[w.name] = w.workers(self.ctx, lanes)
            for i, worker in enumerate(self.workers[w.name]):
                name = f"{w.name}-{i}"
                th = threading.Thread(target=guarded(worker.run), name=name, daemon=True)
                self.threads.append(th)
        # Before any worker: the app on trial must be reading when the first value is
        # written. A hook that raises (an app that exits at once) starts no worker.
        for w in self.workloads:
            hook = getattr(w, "start", None)
            if hook is not None:
                hook(self.ctx)
        for th in self.threads:
            th.start()

    def join_s(self) -> float:
        """How long a stopped worker may take to finish (or give up on) its op."""
        return max((w.join_s() for w in self.workloads), default=0.0)

    def stop(self, join_s: float | None = None) -> None:
        """Stop every worker: each completes its op or ends it `info` within join_s
        (by default the longest any workload needs, e.g. librdkafka's delivery timeout)."""
        self.ctx.stop.set()
        bound = self.join_s() if join_s is None else join_s
        for th in self.threads:
            th.join(bound)

    def counts(self, workload: str | None = None) -> Counters:
        total = Counters()
        for name, workers in self.workers.items():
            if workload is None or name == workload:
                for w in workers:
                    for k, v in asdict(w.counts).items():
                        setattr(total, k, getattr(total, k) + v)
        return total

    def events(self) -> dict[str, int]:
        c = self.counts()
        return {e: getattr(c, e) for e in EVENTS}

    def finish(self, settings: DrainSpec | None = None) -> SessionSummary:
        """After stop() and the heal: each workload's final phase (group offsets), then
        the drain of every topic written, the run's topic first."""
        for w in self.workloads:
            w.finish(self.ctx)
        topics = self.topics()
        spec = settings or DrainSpec()
        drains = {t.name: self._drain(t, spec) for t in topics}
        return SessionSummary(
            drains,
            send_ops=self.counts("producer").ops,
            values_acked=self.ctx.acks_for(topics[0].name).acked if topics else 0,
            client_events=self.events(),
        )

    def _drain(self, topic: TopicSpec, spec: DrainSpec) -> DrainResult:
        """The workload that drains `topic` its own way does (the app's output: role
        app-output), else the generic drain (role drain)."""
        for w in self.workloads:
            own = getattr(w, "drain_own", None)
            result = own(self.ctx, topic, spec) if own is not None else None
            if result is not None:
                return result
        return drain(self.ctx, topic, spec)

    def close(self) -> None:
        """Every path's end, whatever happened before (an error, SIGTERM, the cluster
        gone): each workload's close hook, each guarded on its own. Never raises."""
        for w in self.workloads:
            hook = getattr(w, "close", None)
            if hook is None:
                continue
            try:
                hook()
            except Exception as e:  # the other workloads are still to be closed
                log(f"closing workload {w.name}: {type(e).__name__}: {e}")

    def summaries(self) -> dict[str, dict[str, Any]]:
        """What workloads with a summary hook did, by name (run.json)."""
        out: dict[str, dict[str, Any]] = {}
        for w in self.workloads:
            hook = getattr(w, "summary", None)
            if hook is not None:
                out[w.name] = hook()
        return out
