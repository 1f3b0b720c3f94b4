"""The only module that knows the whole order of a run.

set up -> cluster ready -> workload + nemesis -> final heal -> drain -> teardown.
The history is persisted as it happens; analysis is a separate step that reads it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import ensure_images
from kafka_trial.cluster.kinds import ElsewhereCluster
from kafka_trial.cluster.ssh_cluster import SshCluster
from kafka_trial.cluster.timeline import StateTimeline
from kafka_trial.contracts.errors import RunAborted, TrialError
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.log import activity, guarded, log, status
from kafka_trial.contracts.run_record import RUN_FILE, RunRecord
from kafka_trial.contracts.schedule import Step, write_schedule
from kafka_trial.harness.engine_watch import EngineWatch
from kafka_trial.harness.marks import MarkWatcher
from kafka_trial.harness.spec import RunSpec
from kafka_trial.harness.warm_cluster import WarmCluster
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.recorder import NemesisRecorder
from kafka_trial.nemesis.runner import NemesisRunner
from kafka_trial.nemesis.schedule import schedule
from kafka_trial.workloads.app import AppPlacement
from kafka_trial.workloads.base import ClientContext
from kafka_trial.workloads.plan import plan_workloads
from kafka_trial.workloads.session import WorkloadSession

# The Docker kind's cluster, or one kafka-trial did not build (ssh, bootstrap).
AnyCluster = Cluster | ElsewhereCluster


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
    # `latest` moves once the run has a history (run() does it): a run that failed to
    # set up has nothing to analyze or finish, and must not hide the last one that did.
    return d


def point_latest(run_dir: Path) -> None:
    """RUNS_DIR/latest -> the newest run directory (relative, so the tree can move).
    Replaced atomically; a file system without symlinks just has no `latest`."""
    link = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(run_dir.name, target_is_directory=True)
        os.replace(tmp, link)
    except OSError as e:
        log(f"could not point {link} at {run_dir.name}: {e}")


def _client_logger(run_dir: Path) -> logging.Logger:
    lg = logging.getLogger(f"kafka-trial.clients.{run_dir.name}")
    # Clients log at librdkafka's log_level 3 unless a spec asks for their debug log.
    lg.setLevel(logging.DEBUG)
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
    values_acked_per_s: float = 0.0  # during the load phase (fault phase and quiet spell)


def run(
    spec: RunSpec,
    run_dir: Path,
    warm: WarmCluster | None = None,
    on_final_heal: Callable[[], object] | None = None,
) -> RunOutcome:
    """One run. With `warm`, the run takes the warm cluster if its broker side fits
    (with fresh topic names, recorded in spec.json) and gives it back healed if the
    run ends healthy; without, it starts its own cluster and removes it.
    `on_final_heal` is called as the final heal begins: the load has ended, and what
    comes next is mostly waiting (`kafka-trial run` starts Spark there)."""
    try:
        r = _Run(spec, run_dir, warm)
    except BaseException as e:
        _mark_failed(run_dir, "setup", e)
        raise
    try:
        with signals_interrupt():
            r.cluster_ready()
            point_latest(run_dir)
            r.load()
            if on_final_heal is not None:
                on_final_heal()
            r.final_heal()
            r.drain()
            r.completed = True
    except Exception as e:
        r.record.error = f"{type(e).__name__}: {e}"[:500]
        raise
    finally:
        with signals_deferred():
            r.teardown()
    return r.outcome()


def fault_schedule(spec: RunSpec) -> list[Step]:
    """The run's fault steps: everything they depend on is in spec.json, so a run
    replayed from it (`kafka-trial run --config RUN_DIR/spec.json`) has the same ones."""
    return schedule(spec.nemesis, spec.seed, spec.duration_s)


def _mark_failed(run_dir: Path, phase: str, e: BaseException) -> None:
    """A run that failed before it had a cluster: run.json says where and why."""
    with contextlib.suppress(OSError):
        (run_dir / RUN_FILE).write_text(RunRecord.failed_early(phase, e))


class _Run:
    """One run's phases, and what each hands on to the next. A phase writes its own
    files and fills its own fields of the record; run.json, written last whatever
    happened, names the phase an exception or an interrupt ended the run in.

    The constructor (set up, schedule, and the clients and nemesis built but not
    started) runs before the run's try: what fails there leaves no run.json."""

    spec: RunSpec  # on a warm cluster, with the fresh topic name
    cluster: AnyCluster
    client_run_id: str
    record: RunRecord
    steps: list[Step]

    def __init__(self, spec: RunSpec, run_dir: Path, warm: WarmCluster | None) -> None:
        self.run_dir = run_dir
        self.warm = warm
        self.current_phase = "setup"
        self._t = time.monotonic()
        self.t_wall = time.time()
        with self._phase("setup"):
            self._set_up(spec)
        try:
            self._write_schedule()
            self._build()
        except BaseException:
            # The cluster is this run's (or the warm holder's) until the run's try
            # begins: give it back or remove it, or it outlives the failed run.
            _release_quietly(_releaser(self.cluster, self.warm, [], False))
            raise
        self.load_s = 0.0
        self.healthy = False
        self.drain_complete = False
        self.completed = False

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """A phase's time counts from the end of the one before."""
        self.current_phase = name
        yield
        now = time.monotonic()
        self.record.phases[name] = round(now - self._t, 3)
        self._t = now

    def _set_up(self, spec: RunSpec) -> None:
        spec.write(self.run_dir)
        if spec.cluster.kind != "docker":
            self._set_up_elsewhere(spec)
            return
        client = ensure_engine()
        if spec.app.image is not None:
            # Before any build or cluster: a missing image is a one-line refusal.
            from kafka_trial.cluster.app_containers import require_local_image

            require_local_image(client, spec.app.image)
        images = ensure_images(client, spec.cluster)
        warm = self.warm
        cluster = warm.take(spec.cluster) if warm is not None else None
        reused = cluster is not None
        if cluster is not None and warm is not None:
            name = warm.topic_name(spec.topic.name)
            if name != spec.topic.name:
                spec = spec.model_copy(
                    update={"topic": spec.topic.model_copy(update={"name": name})}
                )
                spec.write(self.run_dir)
            # Group and transactional ids derive from this: none may be an earlier run's.
            client_run_id = f"{cluster.run_id}-r{warm.runs + 1}"
        else:
            cluster = Cluster(client, spec.cluster, images)
            client_run_id = cluster.run_id
        self.spec, self.cluster, self.client_run_id = spec, cluster, client_run_id
        self.record = RunRecord(
            kafka_version=images.kafka_version,
            kafka_image=images.kafka,
            toxiproxy_image=images.toxiproxy,
            cluster_run_id=cluster.run_id,
            warm_cluster=reused,
        )

    def _set_up_elsewhere(self, spec: RunSpec) -> None:
        """A cluster kafka-trial did not build: the run's topics get names of its own
        (a user's cluster holds other topics, and earlier runs' ones)."""
        from kafka_trial.cluster.kinds import open_elsewhere

        cluster = open_elsewhere(spec.cluster, spec.client.librdkafka())
        self.warm = None  # a campaign's warm cluster is a Docker kind's; this is not one
        name = f"{spec.topic.name}-{cluster.run_id}"
        spec = spec.model_copy(update={"topic": spec.topic.model_copy(update={"name": name})})
        spec.write(self.run_dir)
        self.spec, self.cluster, self.client_run_id = spec, cluster, cluster.run_id
        self.record = RunRecord(
            kafka_version="unknown",
            kafka_image="",
            toxiproxy_image="",
            cluster_run_id=cluster.run_id,
            warm_cluster=False,
            cluster_kind=spec.cluster.kind,
        )

    def _write_schedule(self) -> None:
        self.steps = fault_schedule(self.spec)
        write_schedule(self.run_dir, self.steps)

    def _build(self) -> None:
        spec = self.spec
        self.history = HistoryWriter(self.run_dir / "history.jsonl")
        self.ctx = ClientContext(
            self.history,
            self.cluster.bootstrap_for,
            seed=spec.seed,
            run_id=self.client_run_id,
            logger=_client_logger(self.run_dir),
            run_dir=self.run_dir,
            extra_config=spec.client.librdkafka(),
        )
        planned = plan_workloads(
            spec.topic,
            spec.producer,
            spec.consumer,
            spec.copier,
            spec.app,
            _app_placement(self.cluster, spec),
        )
        self.session = WorkloadSession(planned, self.ctx)
        self.nemesis_stop = threading.Event()  # no new fault steps
        # The timeline outlives the fault phase, up to the drain's end.
        self.sampling = threading.Event()
        self.observers: list[threading.Thread] = []
        self.faults = Nemesis(self.cluster, self.history, spec.nemesis, spec.topic.name)
        self.nemesis = NemesisRunner(self.faults, self.steps, self.nemesis_stop)
        self.watch = EngineWatch(self.cluster, (self.nemesis_stop, self.ctx.abort))

    def cluster_ready(self) -> None:
        spec, cluster = self.spec, self.cluster
        with self._phase("cluster_ready"):
            if not self.record.warm_cluster:
                with activity(_starting(spec)):
                    cluster.start()
                if self.warm is not None:
                    self.warm.note_started()
            self._check_elsewhere()
            # What `kafka-trial finish` needs to find this cluster if the run is killed.
            described = {**cluster.describe(), "client_run_id": self.client_run_id}
            (self.run_dir / "cluster.json").write_text(json.dumps(described, indent=1))
            with activity("waiting for every broker to register"):
                cluster.await_registered(spec.cluster.startup_timeout_s)
            # The producers write the run's topic, so it comes first.
            for topic in self.session.topics():
                cluster.create_topic(topic)
                with activity(f"waiting for {topic.name} to be fully in sync"):
                    in_sync = cluster.await_in_sync(topic.name, spec.cluster.startup_timeout_s)
                if not in_sync:
                    raise TrialError(
                        f"topic {topic.name} never became fully in sync",
                        "read logs/kafka-N.log in the run directory",
                    )
            if spec.cluster.storage == "writeback":
                # A host's kernel writes dirty pages back within seconds: what was on
                # the brokers' disks before the run (formatted storage, created topics)
                # is written back, so a power loss takes only what the run wrote.
                settled = cluster.settle_storage()
                log(f"storage settled: {settled['files']} files, {settled['bytes']} bytes")
            if spec.cluster.clock == "faketime":
                # Clock faults measure through it; a broker a fault has just
                # restarted could not be given its partition.
                cluster.clock_probe.ensure()
        log(f"cluster ready: {cluster.bootstrap}")
        self.watch.start()

    def _check_elsewhere(self) -> None:
        """On the user's nodes, before any fault: what they cannot make, refused; and
        the version their brokers run, recorded."""
        cluster = self.cluster
        if isinstance(cluster, SshCluster):
            faults = set(self.spec.nemesis.faults)
            toxic = self.spec.nemesis.degrade.type
            cluster.refuse_unmakeable(
                toxic if {"degrade", "slow-follower"} & faults else None, "clock" in faults
            )
            self.record.kafka_version = cluster.kafka_version() or "unknown"

    def load(self) -> None:
        """The clients' load through the fault phase and the quiet spell after it."""
        spec = self.spec
        with self._phase("fault_phase"):
            self._observe()
            nemesis_thread = threading.Thread(
                target=guarded(self.nemesis.run), name="nemesis", daemon=True
            )
            t_load = time.monotonic()
            self.session.start()
            self.record.fault_phase_start_ns = self.history.elapsed_ns()  # schedule's t=0
            nemesis_thread.start()
            n_faults = sum(s.action == "fault" for s in self.steps)
            log(f"fault phase: {spec.duration_s:.0f}s, {n_faults} faults scheduled")
            _fault_phase(self.nemesis_stop, spec.duration_s, self.history, self.faults)
            self.nemesis_stop.set()
            if self.watch.lost:
                # Nothing answers any more: every client op would wait out its delivery
                # timeout, and the heal and drain have no cluster to act on.
                self.session.stop(join_s=2)
                self._engine_lost()
            # A fault in progress finishes first (it may block, e.g. waiting for an ISR
            # shrink, but never forever), and the clients keep writing through it and
            # for a quiet spell after: what a fault did shows in what comes after it.
            nemesis_thread.join(spec.nemesis.fault_s + 180)
            # The quiet spell counts from the last fault or heal: the fault phase often
            # ends with one already, and a run without faults has nothing to follow up.
            calm_s = self.nemesis.calm_s()
            if calm_s is not None:
                self.ctx.stop.wait(max(0.0, spec.nemesis.quiet_s - calm_s))
            self.session.stop()
            self.load_s = time.monotonic() - t_load

    def _observe(self) -> None:
        timeline = StateTimeline(
            self.cluster,
            self.spec.topic.name,
            self.history,
            self.run_dir / "cluster-state.jsonl",
            self.sampling,
        )
        # Outside events the user marks (`kafka-trial mark`), through the nemesis's own
        # recorder: a mark waits for the fault op in progress, never interleaves with it.
        marks = MarkWatcher(self.run_dir, self.faults.rec, self.sampling)
        for target, name in ((timeline.run, "state-timeline"), (marks.run, "marks")):
            self.observers.append(threading.Thread(target=guarded(target), name=name, daemon=True))
            self.observers[-1].start()

    def final_heal(self) -> None:
        with self._phase("final_heal"):
            with activity("final heal: waiting for the cluster to be healthy"):
                health = self.nemesis.final_heal(
                    self.spec.topic.name, self.spec.cluster.startup_timeout_s
                )
            self.healthy = bool(health.get("healthy"))

    def drain(self) -> None:
        with self._phase("drain"):
            log("final drain")
            with activity("final drain: reading every partition to its end"):
                summary = self.session.finish(self.spec.drain)
            if self.watch.lost:
                self._engine_lost()
            self.drain_complete = summary.complete
            self.record.drain_summary = summary.to_dict()
        rec, load_s = self.record, self.load_s
        rec.ops_per_s = summary.send_ops / load_s if load_s > 0 else 0.0
        rec.faults = self.nemesis.faults_done
        rec.history_ops = self.history.lines_written
        rec.history_ops_per_s = self.history.lines_written / load_s
        # Acknowledged during the load phase: the drain adds none.
        rec.values_acked_per_s = summary.values_acked / load_s if load_s > 0 else 0.0

    def _engine_lost(self) -> None:
        at = self.watch.lost_after_s or 0.0
        phase = self.current_phase.replace("_", " ")
        raise RunAborted(
            f"the Docker engine stopped answering during the {phase} "
            f"({at:.0f} s after the cluster was ready); the run stopped there and kept its "
            f"history in {self.run_dir}",
            "start the engine again, then `kafka-trial cleanup` removes what is left; "
            f"`kafka-trial analyze {self.run_dir}` judges what was recorded (unknown)",
        )

    def teardown(self) -> None:
        """Stop everything, clean up (see _finish), and write run.json last."""
        self.watch.stop()
        if not self.completed:
            self.record.failed_phase = self.current_phase
        self.nemesis_stop.set()
        self.ctx.stop.set()
        self.sampling.set()
        # The app on trial first: on an error or an interrupt it is still running, and
        # must not outlive the run (or consume while the cluster is healed and removed).
        self.session.close()
        self.record.app = self.session.summaries().get("app")
        if self.spec.app.image is not None:
            _remove_app_containers(self.cluster)
        keep = self.warm is not None and self.completed and self.healthy
        topics = [t.name for t in self.session.topics()]
        _finish(
            self.cluster,
            self.history,
            self.faults.rec,
            self.run_dir,
            self.session.threads + self.observers,
            since=self.t_wall if self.record.warm_cluster else None,
            release=_releaser(self.cluster, self.warm, topics, keep),
        )
        self.record.write(self.run_dir)

    def outcome(self) -> RunOutcome:
        rec = self.record
        return RunOutcome(
            self.run_dir,
            rec.send_ops,
            rec.ops_per_s,
            rec.phases,
            self.drain_complete,
            self.healthy,
            rec.values_acked_per_s or 0.0,
        )


def _starting(spec: RunSpec) -> str:
    kind = spec.cluster.kind
    if kind == "ssh":
        return f"checking the {spec.cluster.brokers} nodes over SSH"
    if kind == "bootstrap":
        return f"asking {spec.cluster.bootstrap} for its brokers"
    return f"starting {spec.cluster.brokers} brokers and their proxies"


def _app_placement(cluster: AnyCluster, spec: RunSpec) -> AppPlacement:
    """What the app's instances need of the cluster: its lanes (app-partition), and
    for an image, the call that starts a container on it."""
    containers = None
    if spec.app.image is not None:
        from kafka_trial.cluster.app_containers import start_app_container

        containers = functools.partial(start_app_container, cluster.client, cluster)
    return AppPlacement(lanes=cluster, containers=containers)


def _remove_app_containers(cluster: Cluster) -> None:
    """The app's containers and their sidecars: a warm cluster outlives the run's app
    (a cluster that is removed takes them with it anyway)."""
    from kafka_trial.cluster.app_containers import remove_app_containers

    try:
        remove_app_containers(cluster.client, cluster.run_id)
    except Exception as e:  # the cluster's own removal takes them too
        log(f"could not remove the app's containers: {type(e).__name__}: {e}")


def _fault_phase(
    stop: threading.Event, duration_s: float, history: HistoryWriter, faults: Nemesis
) -> None:
    """Wait out the fault phase, with its progress on the status line once a second."""
    t0 = last_t = time.monotonic()
    last_n = history.lines_written
    while True:
        left = duration_s - (time.monotonic() - t0)
        if left <= 0 or stop.wait(min(1.0, left)):
            return
        now, n = time.monotonic(), history.lines_written
        if now - t0 >= duration_s:
            return
        rate = (n - last_n) / max(now - last_t, 1e-6)
        last_t, last_n = now, n
        status(
            f"fault phase: {now - t0:.0f}/{duration_s:g}s, {rate:,.0f} ops/s, "
            f"{n:,} ops recorded, faults now: {faults_now(faults)}"
        )


def faults_now(faults: Nemesis) -> str:
    """The status line's faults: each outstanding one with the brokers it hit; one whose
    heal failed says so (it is not gone because its heal was tried)."""
    active = ", ".join(
        _fault_label(a.package, a.results) + (" (heal failed)" if faults.heal_failed(a) else "")
        for a in faults.outstanding
    )
    return active or "none"


def _fault_label(package: str, results: tuple[dict[str, Any] | None, ...]) -> str:
    brokers = sorted(
        {b for r in results if r and isinstance(r.get("brokers"), list) for b in r["brokers"]}
    )
    return f"{package} {','.join(map(str, brokers))}" if brokers else package


def _releaser(
    cluster: AnyCluster, warm: WarmCluster | None, topics: list[str], keep: bool
) -> Callable[[bool], str]:
    """What the end of a run does with its cluster: remove it, or hand it back warm
    (only if the teardown heal worked too) without the run's topics. Returns what it
    did, for the log."""

    def release(healed: bool) -> str:
        if cluster.spec.kind != "docker":
            # The user's cluster stays; what the run added to it goes, unless kept.
            if topics and not cluster.spec.keep_topics:
                cluster.delete_topics(topics)
            cluster.teardown()
            kept = "kept" if cluster.spec.keep_topics else "deleted"
            return f"the run's topics {', '.join(topics) or '(none)'} {kept}"
        if warm is None:
            cluster.teardown()
            return "cluster removed"
        if keep and healed:
            try:
                cluster.delete_topics(topics)
            except Exception as e:  # a warm cluster with an extra topic is still fine
                log(f"could not delete the run's topics: {e}")
        warm.give_back(cluster, topics, keep and healed)
        return "cluster kept warm for the next run" if keep and healed else "cluster removed"

    return release


def _finish(
    cluster: AnyCluster,
    history: HistoryWriter,
    rec: NemesisRecorder,
    run_dir: Path,
    threads: list[threading.Thread],
    since: float | None = None,
    release: Callable[[bool], str] | None = None,
) -> None:
    """Heal, close the history without losing a line, collect logs, then remove the
    cluster (or give it back warm).

    Each step is guarded on its own: whatever fails, the cluster is still released.
    """
    healed = False
    try:
        for th in threads:
            th.join(2)
        history.abandon_open("harness stopped before this op completed")
        if cluster.brokers:

            def heal() -> dict[str, Any]:
                cluster.heal_all()
                return {"brokers": cluster.node_ids}

            # Recorded like any heal, so the history shows the cluster was left whole.
            healed = rec.do("heal-all", {"phase": "teardown"}, heal)
            if not healed:
                log("heal before teardown incomplete; removing the cluster anyway")
    except Exception as e:
        log(f"teardown heal failed: {type(e).__name__}: {e}")
    finally:
        try:
            history.close()
            cluster.collect_logs(run_dir / "logs", since=since)
        except Exception as e:
            log(f"log collection incomplete: {e}")
        finally:
            done = _release_quietly(release or _releaser(cluster, None, [], False), healed)
            log(f"{done}; run directory {run_dir}")


def _release_quietly(release: Callable[[bool], str], healed: bool = False) -> str:
    """Release the cluster; if the engine is gone that cannot work, and saying what to
    do once it is back beats a traceback over the one line that matters."""
    try:
        return release(healed)
    except Exception as e:
        return (
            f"the cluster could not be removed ({type(e).__name__}: {str(e)[:200]}); once the "
            "engine answers again, `kafka-trial cleanup` removes it"
        )
