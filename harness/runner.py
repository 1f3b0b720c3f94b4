"""The only module that knows the whole order of a run.

set up -> cluster ready -> workload + nemesis -> final heal -> drain -> teardown.
The history is persisted as it happens; analysis is a separate step that reads it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from harness.cluster import Cluster
from harness.engine import ensure_engine
from harness.errors import TrialError
from harness.history import HistoryWriter
from harness.images import ensure_images
from harness.log import log
from harness.spec import RunSpec
from harness.state_timeline import StateTimeline
from nemesis.packages import build_packages
from nemesis.recorder import NemesisRecorder
from nemesis.runner import NemesisRunner
from nemesis.schedule import schedule
from workloads.drain import drain
from workloads.fleet import build_fleet
from workloads.group_consumer import record_group_offsets
from workloads.processes import ProcessIds, UniqueValues
from workloads.producer import AckTracker


class Interrupted(KeyboardInterrupt):
    pass


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C, so the same finally-blocks heal and clean up."""
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """While cleaning up, a second Ctrl-C or SIGTERM must not abandon the cleanup."""

    def note(signum: int, _frame: FrameType | None) -> None:
        log(f"{signal.Signals(signum).name} received; finishing cleanup first")

    old_int = signal.signal(signal.SIGINT, note)
    old_term = signal.signal(signal.SIGTERM, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def new_run_dir(spec: RunSpec) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    d = (
        Path(spec.runs_dir)
        / f"{stamp}-{spec.name}-{socket.gethostname()[:8]}-{time.time_ns() % 10**6:06d}"
    )
    d.mkdir(parents=True, exist_ok=False)
    return d


def _client_logger(run_dir: Path) -> logging.Logger:
    lg = logging.getLogger(f"kafka-trial.clients.{run_dir.name}")
    lg.setLevel(logging.INFO)
    lg.propagate = False
    if not lg.handlers:
        h = logging.FileHandler(run_dir / "clients.log")
        h.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        lg.addHandler(h)
    return lg


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    ops: int
    ops_per_s: float
    phase_s: dict[str, float]
    drain_complete: bool
    healthy_after_heal: bool


def run(spec: RunSpec, run_dir: Path) -> RunOutcome:
    (run_dir / "spec.json").write_text(spec.to_json())
    phases: dict[str, float] = {}
    t = time.monotonic()

    def phase(name: str) -> None:
        nonlocal t
        now = time.monotonic()
        phases[name] = round(now - t, 3)
        t = now

    client = ensure_engine()
    images = ensure_images(client, spec.cluster)
    phase("setup")
    steps = schedule(spec.nemesis, spec.seed, spec.duration_s)
    (run_dir / "schedule.json").write_text(json.dumps([s.to_dict() for s in steps], indent=1))

    history = HistoryWriter(run_dir / "history.jsonl")
    cluster = Cluster(client, spec.cluster, images)
    logger = _client_logger(run_dir)
    stop = threading.Event()  # clients
    nemesis_stop = threading.Event()  # no new fault steps
    sampling = threading.Event()  # the timeline outlives the fault phase, up to the drain's end
    threads: list[threading.Thread] = []
    observers: list[threading.Thread] = []
    rec = NemesisRecorder(history)
    nemesis: NemesisRunner | None = None
    nemesis_thread: threading.Thread | None = None
    info: dict[str, Any] = {
        "kafka_version": images.kafka_version,
        "kafka_image": images.kafka,
        "toxiproxy_image": images.toxiproxy,
        "cluster_run_id": cluster.run_id,
    }
    ops_per_s = 0.0
    drain_complete = False
    healthy = False
    try:
        with signals_interrupt():
            cluster.start()
            cluster.await_registered(spec.cluster.startup_timeout_s)
            sink = spec.topic.model_copy(update={"name": f"{spec.topic.name}-out"})
            topics = [spec.topic, sink] if spec.copier.workers else [spec.topic]
            for topic in topics:
                cluster.create_topic(topic)
                if not cluster.await_in_sync(topic.name, spec.cluster.startup_timeout_s):
                    raise TrialError(
                        f"topic {topic.name} never became fully in sync",
                        "read logs/kafka-N.log in the run directory",
                    )
            phase("cluster_ready")
            log(f"cluster ready: {cluster.bootstrap}")
            timeline = StateTimeline(
                cluster, spec.topic.name, history, run_dir / "cluster-state.jsonl", sampling
            )
            observers.append(
                threading.Thread(target=_guard(timeline.run), name="state-timeline", daemon=True)
            )
            observers[-1].start()
            pids, values, acks = ProcessIds(), UniqueValues(), AckTracker()
            sink_acks = AckTracker()
            group_id = f"kafka-trial-group-{cluster.run_id}"
            copier_group = f"kafka-trial-copier-{cluster.run_id}"
            fleet = build_fleet(
                spec,
                cluster.bootstrap_for,
                sink,
                history,
                (pids, values, acks, sink_acks),
                stop,
                {"run_id": cluster.run_id, "group": group_id, "copier_group": copier_group},
                _guard,
                logger,
            )
            threads.extend(fleet.threads)
            packages = {p.name: p for p in build_packages(spec, cluster, rec)}
            nemesis = NemesisRunner(cluster, rec, packages, steps, nemesis_stop)
            nemesis_thread = threading.Thread(
                target=_guard(nemesis.run), name="nemesis", daemon=True
            )
            t_load = time.monotonic()
            for th in threads:
                th.start()
            nemesis_thread.start()
            n_faults = sum(s.action == "fault" for s in steps)
            log(f"fault phase: {spec.duration_s:.0f}s, {n_faults} faults scheduled")
            nemesis_stop.wait(spec.duration_s)
            nemesis_stop.set()
            # A fault in progress finishes first (it may block, e.g. waiting for an ISR
            # shrink, but never forever), and the clients keep writing through it and
            # for a quiet spell after: what a fault did shows in what comes after it.
            nemesis_thread.join(spec.nemesis.fault_s + 180)
            stop.wait(spec.nemesis.quiet_s)
            stop.set()
            wait_s = (spec.producer.delivery_timeout_ms + spec.producer.request_timeout_ms) / 1e3
            for th in threads:
                th.join(wait_s + 10)
            load_s = time.monotonic() - t_load
            phase("fault_phase")
            health = nemesis.final_heal(spec.topic.name, spec.cluster.startup_timeout_s)
            healthy = bool(health.get("healthy"))
            phase("final_heal")
            if spec.consumer.mode == "subscribe" and spec.consumer.workers:
                record_group_offsets(
                    cluster.bootstrap, spec.topic, group_id, spec.consumer, history, pids
                )
            if spec.copier.workers:
                record_group_offsets(
                    cluster.bootstrap,
                    spec.topic,
                    copier_group,
                    spec.consumer,
                    history,
                    pids,
                    role="copier",
                )
            log("final drain")
            result = drain(
                cluster.bootstrap, spec.topic, spec.drain, acks.snapshot(), history, pids, logger
            )
            drain_complete = result.complete
            info["drain"] = asdict(result)
            if spec.copier.workers:
                out = drain(
                    cluster.bootstrap, sink, spec.drain, sink_acks.snapshot(), history, pids, logger
                )
                drain_complete = drain_complete and out.complete
                info["drain_output"] = asdict(out)
            phase("drain")
            ops = fleet.send_ops
            ops_per_s = ops / load_s if load_s > 0 else 0.0
            info["send_ops"] = ops
            info["values_acked"] = acks.acked
            info["client_events"] = fleet.events()
            info["faults"] = nemesis.faults_done
            info["history_ops"] = history.lines_written
            info["history_ops_per_s"] = round(history.lines_written / load_s, 1)
    finally:
        with signals_deferred():
            nemesis_stop.set()
            stop.set()
            sampling.set()
            _finish(cluster, history, rec, run_dir, threads + observers)
            info["phases"] = phases
            info["ops_per_s"] = round(ops_per_s, 1)
            (run_dir / "run.json").write_text(json.dumps(info, indent=2, default=str))
    return RunOutcome(run_dir, info.get("send_ops", 0), ops_per_s, phases, drain_complete, healthy)


def _guard(fn: Any) -> Any:
    """Worker threads never print a traceback over the verdict; the history has the truth."""

    def inner() -> None:
        try:
            fn()
        except Exception as e:
            log(f"{threading.current_thread().name} stopped: {type(e).__name__}: {e}")

    return inner


def _finish(
    cluster: Cluster,
    history: HistoryWriter,
    rec: NemesisRecorder,
    run_dir: Path,
    threads: list[threading.Thread],
) -> None:
    """Heal, close the history without losing a line, collect logs, remove everything.

    Each step is guarded on its own: whatever fails, the cluster is still removed.
    """
    try:
        for th in threads:
            th.join(2)
        history.abandon_open("harness stopped before this op completed")
        if cluster.brokers:

            def heal() -> dict[str, Any]:
                cluster.heal_all()
                return {"brokers": cluster.node_ids}

            # Recorded like any heal, so the history shows the cluster was left whole.
            if not rec.do("heal-all", {"phase": "teardown"}, heal):
                log("heal before teardown incomplete; removing the cluster anyway")
    except Exception as e:
        log(f"teardown heal failed: {type(e).__name__}: {e}")
    finally:
        try:
            history.close()
            cluster.collect_logs(run_dir / "logs")
        except Exception as e:
            log(f"log collection incomplete: {e}")
        finally:
            cluster.teardown()
            log(f"cluster removed; run directory {run_dir}")
