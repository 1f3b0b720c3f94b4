"""`kafka-trial finish RUN_DIR`: the final phase of a run that was cut off before it.

A run killed during its fault phase (kill -9, a lost terminal, a CI timeout) leaves a
history with no final drain: absence of reads proves nothing, so its verdict is
`unknown`. While its cluster is still up, this heals it, runs the missing final phase
(each workload's group offsets, then the drain of every topic written) and appends
it to the same history, which turns the crashed run into a real verdict.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from kafka_trial.cluster.control import PartitionState
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.leftovers import heal_leftovers, remove_leftovers
from kafka_trial.cluster.naming import LABEL_RUN
from kafka_trial.cluster.observe import DockerNodes, Observer
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.log import log
from kafka_trial.contracts.run_record import RUN_FILE, FinishedBy, RunRecord
from kafka_trial.harness.spec import RunSpec, read_saved_spec
from kafka_trial.nemesis.recorder import NemesisRecorder
from kafka_trial.spark_analysis.read import acked_sends
from kafka_trial.workloads.app_groups import kill_leftover_apps
from kafka_trial.workloads.base import ClientContext
from kafka_trial.workloads.plan import plan_workloads
from kafka_trial.workloads.processes import ProcessIds
from kafka_trial.workloads.session import SessionSummary, WorkloadSession

import docker

REASON = "the run was cut off before this op completed (completed by kafka-trial finish)"


def _read_json(path: Path, what: str, fix: str) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise TrialError(f"{path} not found: {what}", fix) from None
    except ValueError as e:
        raise TrialError(f"{path} is not valid JSON ({e})", fix) from None


def _acked_offsets(ctx: ClientContext, path: Path) -> None:
    """What the drain aims for: the acknowledged offsets the history already holds."""
    for topic, partition, offset in acked_sends(path):
        ctx.acks_for(topic).record(partition, offset)  # type: ignore[arg-type]


def finish_run(run_dir: Path, keep_cluster: bool = False) -> dict[str, Any]:
    """Heal the run's cluster, append the final phase to its history, write run.json's
    drain keys, and (unless keep_cluster) remove the cluster. Returns the summary."""
    spec = read_saved_spec(run_dir)
    history_path = run_dir / "history.jsonl"
    record = _unfinished_run_record(run_dir)
    described = _read_json(
        run_dir / "cluster.json",
        "the run stopped before its cluster started, so nothing was written",
        "rerun it",
    )
    run_id = described["run_id"]
    client = _engine_with_cluster_of(run_dir, run_id)
    history = HistoryWriter(history_path, resume=True)
    point = history.resumed
    assert point is not None
    abandoned = history.abandon_open(REASON)
    lanes: list[str] = described["bootstrap"]
    ctx = ClientContext(
        history,
        lambda lane: lanes[lane % len(lanes)],
        seed=spec.seed,
        # A run on a warm cluster has its own client ids (group, transactional).
        run_id=described.get("client_run_id", run_id),
        pids=ProcessIds(itertools.count(point.max_process + 1)),
    )
    _acked_offsets(ctx, history_path)
    finished = False
    try:
        summary = _final_phase(spec, ctx, client, run_id, lanes)
        finished = True
    finally:
        history.close()
        # Cut off again: the cluster stays, so finish can be retried on it.
        if finished and not keep_cluster:
            remove_leftovers(client, run=run_id)
    record.drain_summary = summary.to_dict()
    record.finished_by = FinishedBy(
        command="kafka-trial finish",
        resumed_at_index=point.next_index,
        ops_completed_info=abandoned,
        cut_line=point.cut_line,
    )
    record.write(run_dir)
    return record.to_dict()


def _unfinished_run_record(run_dir: Path) -> RunRecord:
    """run.json so far (empty if the run wrote none), of a run without its drain."""
    record = RunRecord.read(run_dir) if (run_dir / RUN_FILE).is_file() else RunRecord()
    if record.drained:
        raise TrialError(
            f"{run_dir} already has its final drain",
            f"nothing to finish: kafka-trial analyze {run_dir}",
        )
    return record


def _engine_with_cluster_of(run_dir: Path, run_id: str) -> docker.DockerClient:
    client = ensure_engine()
    if not client.containers.list(all=True, filters={"label": [f"{LABEL_RUN}={run_id}"]}):
        raise TrialError(
            f"the cluster of {run_dir.name} (run {run_id}) is gone (`cleanup`, or the start of "
            "a later run, removes the clusters of dead runs)",
            "finish needs the run's own brokers; rerun the campaign instead",
        )
    return client


def _final_phase(
    spec: RunSpec, ctx: ClientContext, client: docker.DockerClient, run_id: str, lanes: list[str]
) -> SessionSummary:
    """The heal, then each workload's final phase and the drain, into the history."""
    rec = NemesisRecorder(ctx.history)
    rec.do("heal-all", {"phase": "finish"}, lambda: {"healed": heal_leftovers(run_id)})
    observe = Observer(DockerNodes({}), spec.cluster.brokers, lambda: lanes[0])
    if spec.app.present:
        _end_leftover_apps(client, run_id, spec.app.image is not None)
    session = WorkloadSession(
        plan_workloads(spec.topic, spec.producer, spec.consumer, spec.copier, spec.app), ctx
    )
    for topic in session.topics():
        _await_in_sync(observe, topic.name, spec.cluster.startup_timeout_s)
    log("final drain")
    return session.finish(spec.drain)


def _end_leftover_apps(client: docker.DockerClient, run_id: str, image: bool) -> None:
    # The instances a SIGKILLed harness left would go on consuming and
    # committing while the output is drained: they end here, unsupervised.
    killed = kill_leftover_apps()
    if image:
        from kafka_trial.cluster.app_containers import remove_app_containers

        killed += remove_app_containers(client, run_id)
    if killed:
        log(f"ended {killed} app instances (and sidecars) the cut-off run left")


def _await_in_sync(observe: Observer, topic: str, timeout_s: float) -> None:
    """Wait for the topic's replicas; one still out of sync is logged, and drained anyway."""
    if observe.await_in_sync(topic, timeout_s):
        return
    states: dict[int, PartitionState] = {}
    try:
        states = observe.partitions(topic)
    except Exception as e:  # the message below is what matters
        log(f"metadata of {topic}: {e}")
    log(f"{topic} is not fully in sync after the heal ({states}); draining anyway")
