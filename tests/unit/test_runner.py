"""The runner's order of phases, what each writes, and what run.json says, against
the in-memory cluster and a stand-in workload session (the real run is in
tests/integration)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.contracts.history import read_history
from kafka_trial.contracts.run_record import RunRecord
from kafka_trial.harness import runner
from kafka_trial.harness.spec import RunSpec
from kafka_trial.harness.warm_cluster import WarmCluster, broker_side
from kafka_trial.workloads.drain import DrainResult
from kafka_trial.workloads.session import SessionSummary

from tests.fakes import FakeCluster

IDENTITY = ["kafka_version", "kafka_image", "toxiproxy_image", "cluster_run_id", "warm_cluster"]
DRAIN_KEYS = ["drain", "drain_output", "send_ops", "values_acked", "client_events"]
RATES = ["faults", "history_ops", "history_ops_per_s", "values_acked_per_s"]
PHASES = ["setup", "cluster_ready", "fault_phase", "final_heal", "drain"]


@dataclass
class RunCluster(FakeCluster):
    """The in-memory cluster with the facade's life-cycle verbs."""

    run_id: str = "c0ffee00"
    spec: ClusterSpec = field(default_factory=ClusterSpec)
    fail_start: BaseException | None = None
    topics_made: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    torn_down: bool = False

    @property
    def bootstrap(self) -> str:
        return "fake:9092"

    def bootstrap_for(self, lane: int) -> str:
        return self.bootstrap

    def start(self) -> None:
        if self.fail_start is not None:
            raise self.fail_start

    def describe(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "bootstrap": [self.bootstrap]}

    def create_topic(self, topic: TopicSpec) -> None:
        self.topics_made.append(topic.name)

    def delete_topics(self, names: list[str]) -> None:
        self.deleted += names

    def collect_logs(self, dest: Path, since: float | None = None) -> None:
        dest.mkdir()

    def teardown(self) -> None:
        if not self.engine_up:
            raise ConnectionError("[Errno 111] Connection refused")
        self.torn_down = True


def _summary(topic: str) -> SessionSummary:
    drains = {
        topic: DrainResult(True, {0: {"end": 7}}, 7, 0.5),
        f"{topic}-out": DrainResult(True, {0: {"end": 7}}, 7, 0.25),
    }
    return SessionSummary(drains, send_ops=12, values_acked=7, client_events={"crashes": 0})


class Session:
    """Stands in for WorkloadSession: no clients, a fixed drain."""

    fail_in: str | None = None  # the method that raises, as Ctrl-C

    def __init__(self, workloads: Any, ctx: Any) -> None:
        self.ctx = ctx
        self.threads: list[Any] = []
        self.calls: list[str] = []
        self.written = {t.name: t for w in workloads for t in w.topics()}
        self.topic = next(iter(self.written))

    def topics(self) -> list[TopicSpec]:
        return list(self.written.values())

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_in:
            raise runner.Interrupted("signal SIGTERM")

    def start(self) -> None:
        self._call("start")

    def stop(self, join_s: float | None = None) -> None:
        self._call("stop")

    def finish(self, drain: Any) -> SessionSummary:
        self._call("finish")
        return _summary(self.topic)

    def close(self) -> None:
        self.calls.append("close")  # every path's end: it never raises

    def summaries(self) -> dict[str, Any]:
        return {}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    made = SimpleNamespace(cluster=RunCluster(), sessions=[])
    monkeypatch.setattr(runner, "ensure_engine", lambda: None)
    monkeypatch.setattr(
        runner, "ensure_images", lambda client, spec: Images("kafka:x", "toxiproxy:y", "4.1.1")
    )
    monkeypatch.setattr(runner, "Cluster", lambda client, spec, images: made.cluster)
    monkeypatch.setattr(runner, "StateTimeline", lambda *a: SimpleNamespace(run=lambda: None))

    def session(workloads: Any, ctx: Any) -> Session:
        made.sessions.append(Session(workloads, ctx))
        return made.sessions[-1]

    monkeypatch.setattr(runner, "WorkloadSession", session)
    return made


def _spec(tmp_path: Path) -> RunSpec:
    return RunSpec(
        duration_s=0.2,
        runs_dir=str(tmp_path),
        nemesis={"faults": ()},
        copier={"workers": 1},
    )


def _run_json(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run.json").read_text())


def test_a_run_writes_its_files_phase_by_phase(tmp_path: Path, fakes: SimpleNamespace) -> None:
    spec = _spec(tmp_path)
    run_dir = runner.new_run_dir(spec)
    outcome = runner.run(spec, run_dir)
    assert json.loads((run_dir / "spec.json").read_text()) == json.loads(spec.to_json())
    assert json.loads((run_dir / "schedule.json").read_text()) == []
    described = json.loads((run_dir / "cluster.json").read_text())
    assert described["client_run_id"] == "c0ffee00"
    info = _run_json(run_dir)
    assert list(info) == [
        *IDENTITY, *DRAIN_KEYS, *RATES, "phases", "ops_per_s", "fault_phase_start_ns"
    ]  # fmt: skip
    # schedule.json's t=0 on the history's clock: after setup, before the last op.
    ops = read_history(run_dir / "history.jsonl").ops
    assert 0 < info["fault_phase_start_ns"] < ops[-1].time
    assert info["kafka_version"] == "4.1.1" and info["warm_cluster"] is False
    assert list(info["phases"]) == PHASES
    assert info["send_ops"] == 12 and info["faults"] == 0
    drained = {"complete": True, "partitions": {"0": {"end": 7}}, "records": 7, "seconds": 0.5}
    assert info["drain"] == drained
    assert outcome.ops == 12 and outcome.drain_complete and outcome.healthy_after_heal
    assert outcome.phase_s == info["phases"]
    assert round(outcome.ops_per_s, 1) == info["ops_per_s"] > 0
    assert round(outcome.values_acked_per_s, 1) == info["values_acked_per_s"] > 0
    assert fakes.sessions[0].calls == ["start", "stop", "finish", "close"]
    assert fakes.cluster.topics_made == ["trial", "trial-out"] and fakes.cluster.torn_down
    # Teardown recorded its heal, and the history was closed.
    ops = read_history(run_dir / "history.jsonl").ops
    assert [o.f for o in ops if o.type == "ok"][-1] == "heal-all"


@pytest.mark.parametrize(
    ("fail_start", "fail_in", "failed_phase", "phases"),
    [
        (RuntimeError("no brokers"), None, "cluster_ready", PHASES[:1]),
        (None, "start", "fault_phase", PHASES[:2]),
        (None, "finish", "drain", PHASES[:4]),
    ],
)
def test_a_run_that_fails_names_its_phase_and_still_cleans_up(
    tmp_path: Path,
    fakes: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    fail_start: BaseException | None,
    fail_in: str | None,
    failed_phase: str,
    phases: list[str],
) -> None:
    fakes.cluster.fail_start = fail_start
    monkeypatch.setattr(Session, "fail_in", fail_in)
    spec = _spec(tmp_path)
    run_dir = runner.new_run_dir(spec)
    with pytest.raises((RuntimeError, runner.Interrupted)):
        runner.run(spec, run_dir)
    info = _run_json(run_dir)
    assert info["failed_phase"] == failed_phase
    assert list(info["phases"]) == phases
    assert list(info)[: len(IDENTITY) + 3] == [*IDENTITY, "phases", "ops_per_s", "failed_phase"]
    assert info.get("error", "").startswith(("RuntimeError", "Interrupted")) or "error" not in info
    assert info["ops_per_s"] == 0.0
    assert fakes.cluster.torn_down and (run_dir / "logs").is_dir()
    # The workloads are closed on every path (the app on trial's instances killed).
    assert fakes.sessions[0].calls[-1] == "close"


def test_a_warm_run_gets_fresh_topic_and_client_ids_and_gives_the_cluster_back(
    tmp_path: Path, fakes: SimpleNamespace
) -> None:
    spec = _spec(tmp_path)
    warm = WarmCluster(fakes.cluster, broker_side(spec.cluster), runs=1, used_topics={"trial"})
    run_dir = runner.new_run_dir(spec)
    runner.run(spec, run_dir, warm)
    assert json.loads((run_dir / "spec.json").read_text())["topic"]["name"] == "trial-r2"
    assert json.loads((run_dir / "cluster.json").read_text())["client_run_id"] == "c0ffee00-r2"
    info = _run_json(run_dir)
    assert info["warm_cluster"] is True and info["cluster_run_id"] == "c0ffee00"
    assert "failed_phase" not in info
    assert warm.cluster is fakes.cluster and not fakes.cluster.torn_down
    assert fakes.cluster.deleted == ["trial-r2", "trial-r2-out"]
    assert fakes.cluster.topics_made == ["trial-r2", "trial-r2-out"]


def test_the_record_writes_run_json_as_the_runner_always_did() -> None:
    """Key for key and value for value what the runner wrote from its dict."""
    summary = _summary("trial").to_dict()
    rec = RunRecord("4.1.1", "kafka:x", "toxiproxy:y", "c0ffee00", False)
    rec.phases.update(setup=1.5, cluster_ready=20.25)
    rec.drain_summary = summary
    rec.ops_per_s, rec.faults, rec.history_ops = 123.456, 3, 9876
    rec.history_ops_per_s, rec.values_acked_per_s = 9876 / 61.3, 1234.56
    old: dict[str, Any] = {
        "kafka_version": "4.1.1",
        "kafka_image": "kafka:x",
        "toxiproxy_image": "toxiproxy:y",
        "cluster_run_id": "c0ffee00",
        "warm_cluster": False,
    }
    old.update(summary)
    old["faults"] = 3
    old["history_ops"] = 9876
    old["history_ops_per_s"] = round(9876 / 61.3, 1)
    old["values_acked_per_s"] = round(1234.56, 1)
    old["phases"] = {"setup": 1.5, "cluster_ready": 20.25}
    old["ops_per_s"] = round(123.456, 1)
    assert rec.to_json() == json.dumps(old, indent=2, default=str)
    assert rec.send_ops == 12
    rec.failed_phase = "drain"
    assert json.loads(rec.to_json())["failed_phase"] == "drain"


def test_a_run_whose_engine_dies_stops_within_seconds_and_says_so(
    tmp_path: Path, fakes: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25: the engine went away mid-run; the run waited minutes, then ended in
    tracebacks with exit 1 and no run.json. Now the fault phase stops as soon as two
    pings fail, and the run ends with one error that exits 2 (unknown)."""
    import time

    from kafka_trial.contracts.errors import RunAborted

    spec = _spec(tmp_path).model_copy(update={"duration_s": 60.0})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    fakes.cluster.engine_up = False  # dies as the fault phase starts
    t0 = time.monotonic()
    with pytest.raises(RunAborted) as e:
        runner.run(spec, run_dir)
    assert time.monotonic() - t0 < 15  # not the 60 s phase, nor the drain's timeout
    assert e.value.exit_code == 2
    assert "the Docker engine stopped answering during the fault phase" in e.value.problem
    assert f"kafka-trial analyze {run_dir}" in e.value.fix and "cleanup" in e.value.fix
    info = _run_json(run_dir)
    assert info["failed_phase"] == "fault_phase"
    assert info["error"].startswith("RunAborted: the Docker engine stopped answering")
    session = fakes.sessions[-1]
    assert "finish" not in session.calls  # no heal and no drain on a cluster that is gone
    # The cluster could not be removed; what to do is said, not raised.
    assert "`kafka-trial cleanup` removes it" in capsys.readouterr().err
    assert (run_dir / "history.jsonl").is_file()
    assert (tmp_path / "latest").resolve() == run_dir.resolve()  # it had a history


def test_a_run_that_fails_to_set_up_is_marked_and_latest_stays(
    tmp_path: Path, fakes: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --kafka-version 9.9`: the directory says it failed, and runs/latest keeps
    pointing at the last run that had a history."""
    from kafka_trial.contracts.errors import TrialError

    def no_images(client: Any, spec: Any) -> Images:
        raise TrialError("no Kafka 9.9 on Maven Central", "pick a released version")

    earlier = tmp_path / "earlier"
    earlier.mkdir()
    runner.point_latest(earlier)
    monkeypatch.setattr(runner, "ensure_images", no_images)
    run_dir = runner.new_run_dir(_spec(tmp_path))
    with pytest.raises(TrialError):
        runner.run(_spec(tmp_path), run_dir)
    info = _run_json(run_dir)
    assert info == {
        "failed_phase": "setup",
        "error": "TrialError: no Kafka 9.9 on Maven Central -- fix: pick a released version",
    }
    assert (tmp_path / "latest").resolve() == earlier.resolve()
