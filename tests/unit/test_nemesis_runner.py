"""The nemesis runner and the records it writes, against the in-memory cluster: a
failed fault does not stop the run, a fault that hits nothing leaves no heal, and
the fake speaks every verb of the ClusterControl protocol."""

from __future__ import annotations

import threading
from pathlib import Path

from kafka_trial.cluster.control import ClusterControl, LinkId
from kafka_trial.cluster.toxiproxy import Toxic
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.nemesis.catalog import NOT_RUN_OP
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.packages import Degrade, ProcessFault
from kafka_trial.nemesis.runner import NemesisRunner
from kafka_trial.nemesis.schedule import Step
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.spark_analysis.facts.stats import faults_injected

from tests.fakes import FakeCluster


def nemesis(tmp_path: Path, settings: NemesisSpec | None = None, **fake) -> tuple:
    cluster = FakeCluster(**fake)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)  # read while open
    return cluster, Nemesis(cluster, history, settings), history


def done(history: HistoryWriter) -> list[tuple[str, str]]:
    return [(o.type, o.f) for o in read_history(history.path).ops if o.type != "invoke"]


def test_the_fake_speaks_every_cluster_control_verb() -> None:
    verbs = {n for n in vars(ClusterControl) if not n.startswith("_")}
    assert {"kill_node", "cut", "elect_leader", "node_ids", "client_lanes"} <= verbs
    fake = FakeCluster()
    missing = [v for v in sorted(verbs) if not hasattr(fake, v)]
    assert missing == []


def test_a_failing_verb_completes_info_and_the_schedule_goes_on(tmp_path: Path) -> None:
    cluster, nem, history = nemesis(tmp_path, fail_verbs={"kill_node"})
    steps = [
        Step(0.0, "fault", "kill-leader", 1),
        Step(0.0, "heal", "kill-leader"),
        Step(0.0, "fault", "pause", 2),
        Step(0.0, "heal", "pause"),
    ]
    runner = NemesisRunner(nem, steps, threading.Event())
    runner.run()
    assert runner.faults_done == 1  # the kill that failed took no effect: not counted
    # The failed kill leaves nothing to heal, so no start op; the pause goes ahead.
    assert done(history) == [("info", "kill"), ("ok", "pause"), ("ok", "resume")]
    assert all(s == "running" for s in cluster.state.values())
    assert runner.final_heal("trial", 1)["healthy"] is True


def test_a_failing_heal_completes_info_and_heal_all_still_makes_the_cluster_whole(
    tmp_path: Path,
) -> None:
    cluster, nem, history = nemesis(tmp_path, fail_verbs={"start_node"})
    applied = nem.apply("kill-leader")
    assert nem.heal("kill-leader") == 0
    assert done(history)[-1] == ("info", "start")
    # Not healed as far as anyone knows: still outstanding, marked, and tried again.
    assert nem.outstanding == (applied,) and nem.heal_failed(applied)
    cluster.fail_verbs.clear()
    runner = NemesisRunner(nem, [], threading.Event())
    assert runner.final_heal("trial", 1)["healthy"] is True
    assert nem.outstanding == () and not nem.heal_failed(applied)
    assert [f for t, f in done(history) if t == "ok"][-3:] == ["start", "heal-all", "await-healthy"]
    assert cluster.whole


class WedgedCluster(FakeCluster):
    """A broker whose process hit a fatal error and sits in its shutdown: its container
    runs (so heal-all's start leaves it be), the controller has fenced it, and only a
    restart ends it."""

    wedged: set[int]

    def await_registered(self, timeout_s: float) -> None:
        super().await_registered(timeout_s)
        if self.wedged:
            raise RuntimeError(f"2 of 3 brokers registered ({sorted(self.wedged)} fenced)")

    def registered_brokers(self) -> dict[int, bool | None]:
        return {n: fenced or n in self.wedged for n, fenced in super().registered_brokers().items()}

    def kill_node(self, node: int) -> None:
        super().kill_node(node)
        self.wedged.discard(node)


def test_the_final_heal_restarts_a_broker_wedged_in_its_shutdown(tmp_path: Path) -> None:
    cluster = WedgedCluster()
    cluster.wedged = {2}
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    runner = NemesisRunner(Nemesis(cluster, history), [], threading.Event())
    health = runner.final_heal("trial", 1)
    assert health["healthy"] is True and health["restarted"] == [2]
    killed = cluster.calls.index(("kill_node", 2))
    assert ("start_node", 2) in cluster.calls[killed:]
    (healthy,) = [
        o for o in read_history(history.path).ops if o.f == "await-healthy" and o.type == "ok"
    ]
    assert healthy.value["restarted"] == [2] and "fenced" in healthy.value["why"]


class QuorumlessCluster(FakeCluster):
    """Two of three voters began to exit just after the final heal-all (a corrupted
    KRaft response, CI 2026-11-30): no controller answers, so nobody is listed as
    fenced; only the brokers themselves say they are exiting, and heal-all ends them."""

    late: set[int]
    exiting: set[int]

    def heal_all(self) -> dict:
        super().heal_all()
        ended = {str(n): {"ended": "killed"} for n in sorted(self.exiting)}
        self.exiting, self.late = self.late, set()
        return {"exiting": ended} if ended else {}

    def await_registered(self, timeout_s: float) -> None:
        super().await_registered(timeout_s)
        if self.exiting:
            raise RuntimeError("no controller appears to be active")

    def registered_brokers(self) -> dict[int, bool | None]:
        if self.exiting:
            raise RuntimeError("no controller appears to be active")
        return super().registered_brokers()


def test_the_final_heal_ends_brokers_exiting_with_no_controller_to_ask(tmp_path: Path) -> None:
    cluster = QuorumlessCluster()
    cluster.late, cluster.exiting = {1, 3}, set()
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    runner = NemesisRunner(Nemesis(cluster, history), [], threading.Event())
    health = runner.final_heal("trial", 1)
    assert health["healthy"] is True
    assert health["restarted"] == []  # the controller could not say
    assert health["exiting"] == {"1": {"ended": "killed"}, "3": {"ended": "killed"}}
    (healthy,) = [
        o for o in read_history(history.path).ops if o.f == "await-healthy" and o.type == "ok"
    ]
    assert healthy.value["exiting"] == health["exiting"]
    assert "no controller" in healthy.value["why"]


def test_heal_all_records_what_the_cluster_ended(tmp_path: Path) -> None:
    cluster = QuorumlessCluster()
    cluster.late, cluster.exiting = set(), {2}
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    assert Nemesis(cluster, history).heal_all()
    (done,) = [o for o in read_history(history.path).ops if o.f == "heal-all" and o.type == "ok"]
    assert done.value["exiting"] == {"2": {"ended": "killed"}}
    # The clean twin: nothing exiting, nothing said.
    assert Nemesis(cluster, history).heal_all()
    last = [o for o in read_history(history.path).ops if o.f == "heal-all" and o.type == "ok"]
    assert "exiting" not in last[-1].value


def test_a_healthy_final_heal_restarts_nothing(tmp_path: Path) -> None:
    # The clean twin: nothing wedged, nothing killed.
    cluster = WedgedCluster()
    cluster.wedged = set()
    runner = NemesisRunner(
        Nemesis(cluster, HistoryWriter(tmp_path / "h.jsonl")), [], threading.Event()
    )
    health = runner.final_heal("trial", 1)
    assert health["healthy"] is True and "restarted" not in health
    assert not [c for c in cluster.calls if c[0] == "kill_node"]


def test_a_fault_that_hits_no_broker_records_no_heal(tmp_path: Path) -> None:
    # With two brokers a minority is nobody: the fault is on record, its heal is not.
    cluster, nem, history = nemesis(tmp_path, brokers=2)
    toxic = Toxic("kt-latency", "latency", "upstream", {"latency": 100})
    for pkg in (
        ProcessFault("kill", "trial", 0, ("minority",), "kill"),
        Degrade("trial", 0, toxic, "client", ("minority",)),
    ):
        applied = nem.apply(pkg, pick=3)
        assert applied.ok and applied.heal is None
        assert applied.results[0]["brokers"] == []
    assert nem.heal() == 0
    assert done(history) == [("ok", "kill"), ("ok", "degrade")]
    assert cluster.calls == []


def test_partition_and_degrade_write_their_values_and_heal_values(tmp_path: Path) -> None:
    settings = NemesisSpec(faults=("partition", "degrade"), topologies=("one-way",))
    cluster, nem, history = nemesis(tmp_path, settings)
    nem.apply("partition", pick=7)
    nem.apply("degrade", pick=0)
    nem.heal()
    ops = [(o.type, o.f, o.value) for o in read_history(history.path).ops]
    assert ops[0] == ("invoke", "partition", {"topology": "one-way", "mode": "drop"})
    assert ops[1] == (
        "ok",
        "partition",
        {"topology": "one-way", "mode": "drop", "brokers": [1], "grudge": {"1": [2]}},
    )
    toxic = {"toxic": "latency", "attributes": {"latency": 15000, "jitter": 0}}
    assert ops[2] == ("invoke", "degrade", {**toxic, "stream": "upstream", "links": "client"})
    t, f, value = ops[3]
    assert (t, f) == ("ok", "degrade") and value["links"] == [f"None->{value['brokers'][0]}:client"]
    # Heals latest first: the toxic comes off before the links are restored.
    assert ops[4:] == [
        ("invoke", "restore", {"toxic": "latency"}),
        ("ok", "restore", {"toxic": "latency", "brokers": value["brokers"]}),
        ("invoke", "heal", {"links": 2}),
        ("ok", "heal", {"links": 2, "brokers": [1, 2]}),
    ]
    assert cluster.whole
    assert ("uncut", LinkId(2, 1, "controller")) in cluster.calls


def test_the_calm_since_the_last_fault_or_heal_is_known_and_none_without_faults(
    tmp_path: Path,
) -> None:
    # The runner's quiet spell after the fault phase counts from it.
    _, nem, _ = nemesis(tmp_path)
    idle = NemesisRunner(nem, [], threading.Event())
    idle.run()
    assert idle.calm_s() is None
    runner = NemesisRunner(
        nem, [Step(0.0, "fault", "pause", 1), Step(0.05, "heal", "pause")], threading.Event()
    )
    runner.run()
    first = runner.calm_s()
    assert first is not None and 0 <= first < 1
    threading.Event().wait(0.05)
    assert runner.calm_s() > first


def test_a_runner_stopped_with_a_fault_on_heals_it_before_it_returns(tmp_path: Path) -> None:
    # Otherwise the clients' last ops wait out their timeouts against the fault.
    _, nem, history = nemesis(tmp_path)
    stop = threading.Event()
    steps = [Step(0.0, "fault", "pause", 1), Step(30.0, "heal", "pause")]
    runner = NemesisRunner(nem, steps, stop)
    threading.Timer(0.2, stop.set).start()
    runner.run()
    assert done(history) == [("ok", "pause"), ("ok", "resume")]
    assert nem.outstanding == ()
    assert runner.calm_s() is not None and runner.calm_s() < 1


def test_a_fault_the_phase_ended_before_is_recorded_as_not_run(tmp_path: Path) -> None:
    # A heal that overran the phase left the next fault unstarted: the history must
    # say so, and the count of injected faults must not include it.
    _, nem, history = nemesis(tmp_path)
    heal = nem.heal
    stop = threading.Event()

    def slow_heal(target=None):  # as a fresh broker's return takes 30 s
        stop.set()  # the phase ends while it runs
        threading.Event().wait(0.2)
        return heal(target)

    nem.heal = slow_heal
    steps = [
        Step(0.0, "fault", "pause", 1),
        Step(0.05, "heal", "pause"),
        Step(0.1, "fault", "kill", 7),
        Step(0.3, "heal", "kill"),
    ]
    runner = NemesisRunner(nem, steps, stop)
    runner.run()
    ops = read_history(history.path).ops
    assert done(history) == [("ok", "pause"), ("ok", "resume"), ("info", NOT_RUN_OP)]
    (said,) = [o for o in ops if o.f == NOT_RUN_OP and o.type == "info"]
    assert said.value == {"package": "kill", "pick": 7, "at_s": 0.1}
    assert "before this fault, due at 0.1 s, was started: what ran before it" in said.error
    assert runner.faults_done == 1
    assert faults_injected({"pause": 1, "resume": 1}) == faults_injected(
        {"pause": 1, "resume": 1, NOT_RUN_OP: 1}
    )
    assert effect(NOT_RUN_OP, "info", said.value, said.error).startswith("kill not run: ")


def test_a_fault_not_yet_due_when_the_run_stopped_says_so(tmp_path: Path) -> None:
    _, nem, history = nemesis(tmp_path)
    stop = threading.Event()
    runner = NemesisRunner(nem, [Step(30.0, "fault", "kill", 3)], stop)
    threading.Timer(0.1, stop.set).start()
    runner.run()
    (said,) = [o for o in read_history(history.path).ops if o.type == "info"]
    assert said.f == NOT_RUN_OP and "the run was stopped before it was due" in said.error


def test_a_runner_that_ran_every_step_says_nothing_is_not_run(tmp_path: Path) -> None:
    _, nem, history = nemesis(tmp_path)
    steps = [Step(0.0, "fault", "pause", 1), Step(0.05, "heal", "pause")]
    NemesisRunner(nem, steps, threading.Event()).run()
    assert NOT_RUN_OP not in {f for _, f in done(history)}


def test_a_fault_is_on_disk_before_it_acts_and_once_it_acted(tmp_path: Path) -> None:
    # The client ops' writer may be a minute behind; a crash just after a fault must
    # still find the fault in the history (tests/integration/test_interrupt.py).
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=60)
    nem = Nemesis(FakeCluster(), history)
    lines_before_acting: list[int] = []
    nem.rec.do("probe", {}, lambda: lines_before_acting.append(_lines(history.path)) or {})
    assert lines_before_acting == [1]
    assert [(o.type, o.f) for o in read_history(history.path).ops] == [
        ("invoke", "probe"),
        ("ok", "probe"),
    ]
    history.close()


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_status_line_shows_a_heal_that_failed_as_failed(tmp_path: Path) -> None:
    """Issue 25: the engine died, the heal failed, and the status said "faults now:
    none"."""
    from kafka_trial.harness.runner import faults_now

    cluster, nem, _ = nemesis(tmp_path, fail_verbs={"start_node"})
    applied = nem.apply("kill-leader")
    (broker,) = applied.results[0]["brokers"]
    assert faults_now(nem) == f"kill-leader {broker}"
    nem.heal("kill-leader")
    assert faults_now(nem) == f"kill-leader {broker} (heal failed)"
    cluster.fail_verbs.clear()
    nem.heal("kill-leader")
    assert faults_now(nem) == "none"


def test_a_pause_the_engine_could_not_undo_heals_and_says_it_thawed_the_freezer(
    tmp_path: Path,
) -> None:
    cluster, nem, history = nemesis(
        tmp_path, NemesisSpec(faults=("pause",)), stuck_paused={1, 2, 3}
    )
    applied = nem.apply("pause", pick=0)
    assert applied.ok
    nem.heal()
    ops = read_history(history.path).ops
    (resume,) = [o for o in ops if o.f == "resume" and o.type != "invoke"]
    assert resume.type == "ok"
    paused = [str(n) for verb, n in cluster.calls if verb == "pause_node"]
    assert sorted(resume.value["thawed"]) == sorted(paused) != []
    assert cluster.whole


def test_a_resume_by_the_engine_records_no_thaw(tmp_path: Path) -> None:
    _, nem, history = nemesis(tmp_path, NemesisSpec(faults=("pause",)))
    assert nem.apply("pause", pick=0).ok
    nem.heal()
    (resume,) = [
        o for o in read_history(history.path).ops if o.f == "resume" and o.type != "invoke"
    ]
    assert resume.type == "ok" and "thawed" not in resume.value
