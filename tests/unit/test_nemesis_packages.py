"""Every fault package against an in-memory cluster: what it does, what it records,
and that its heal undoes exactly that. Milliseconds, no Docker."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from kafka_trial.contracts.client_processes import CLIENTS, process_state
from kafka_trial.contracts.group_ids import GROUP_IDS
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.transactional_ids import TXN_IDS
from kafka_trial.nemesis.catalog import APP_PACKAGES, PACKAGES
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.packages import BUILDERS, ProcessFault, build_package
from kafka_trial.nemesis.runner import NemesisRunner
from kafka_trial.nemesis.schedule import Step
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.nemesis.targets import resolve

from tests.fakes import FakeCluster

FAST = NemesisSpec(fault_s=0.01, quiet_s=0.01)
ALL = NemesisSpec(fault_s=0.01, quiet_s=0.01, targets=("all",))


def make(
    tmp_path: Path, spec: NemesisSpec = FAST, **fake
) -> tuple[FakeCluster, Nemesis, HistoryWriter]:
    cluster = FakeCluster(**fake)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)  # read while open
    return cluster, Nemesis(cluster, history, spec, "trial"), history


def ops(history: HistoryWriter) -> list[tuple[str, str]]:
    return [(o.type, o.f) for o in read_history(history.path).ops]


def fault_then_heal(history: HistoryWriter, fault: str, heal: str) -> list:
    """The history's ops, which must be exactly the fault's and then its heal's."""
    got = read_history(history.path).ops
    assert [(o.type, o.f) for o in got] == [
        ("invoke", fault),
        ("ok", fault),
        ("invoke", heal),
        ("ok", heal),
    ]
    return got


def test_builders_cover_exactly_the_catalog() -> None:
    assert set(BUILDERS) == set(PACKAGES)
    with pytest.raises(ValueError, match="unknown nemesis package"):
        build_package("earthquake", FAST, "trial")


# client-pause acts on a client process, not the cluster: its tests are at the end;
# the app-* packages act on the application on trial (test_nemesis_app.py), and
# hijack-txn and fence-txn-id on a transactional client's id (test_hijack.py).
@pytest.mark.parametrize(
    "name", sorted(set(PACKAGES) - {"client-pause", "hijack-txn", "fence-txn-id"} - APP_PACKAGES)
)
def test_every_package_applies_and_its_heal_makes_the_cluster_whole(
    tmp_path: Path, name: str
) -> None:
    cluster, nem, history = make(tmp_path, client_lanes=2)
    applied = nem.apply(name, pick=5)
    assert applied.ok, read_history(history.path).ops
    assert cluster.calls, "a fault must act on the cluster"
    nem.heal()
    assert nem.outstanding == ()
    if name == "unclean-failover":
        # Its links are restored within the fault; the heal restarts the old leader.
        assert cluster.cuts == {}
    assert cluster.whole, (cluster.state, cluster.cuts, cluster.toxics)
    assert all(t in ("invoke", "ok") for t, _ in ops(history))


def test_kill_leader_records_the_leader_and_its_start(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path)
    leader = cluster.leaders[0]
    nem.apply("kill-leader")
    assert cluster.state[leader] == "exited"
    nem.heal("kill-leader")
    assert cluster.state[leader] == "running"
    got = fault_then_heal(history, "kill", "start")
    assert got[0].value == {"target": "leader", "topic": "trial", "partition": 0}
    assert got[1].value["brokers"] == [leader]
    assert got[3].value == {"brokers": [leader]}


def test_partition_records_its_grudge_and_the_heal_restores_every_link(tmp_path: Path) -> None:
    settings = NemesisSpec(faults=("partition",), topologies=("halves",))
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / "h.jsonl", flush_s=0)  # read while open
    nem = Nemesis(cluster, history, settings, "trial")
    nem.apply("partition", pick=3)
    done = read_history(history.path).ops[1]
    grudge = {int(k): set(v) for k, v in done.value["grudge"].items()}
    assert done.value["mode"] == "drop" and grudge
    cut_before = dict(cluster.cuts)
    cut_pairs = {(lk.src, lk.dst) for lk in cut_before}
    for deaf, sources in grudge.items():
        for src in sources:
            assert (src, deaf) in cut_pairs and (deaf, src) in cut_pairs
    nem.heal()
    assert cluster.cuts == {}
    heal = read_history(history.path).ops[3]
    directed = sum(len(st) for lk, (_, st) in cut_before.items() if lk.kind == "internal")
    assert heal.f == "heal" and heal.value["links"] == directed


def test_two_outstanding_faults_of_one_package_both_heal_latest_first(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path)
    kill = ProcessFault("kill", "trial", 0, ("random",), "kill")
    first = nem.apply(kill, pick=1)
    second = nem.apply(kill, pick=2)
    hit = [first.results[0]["brokers"][0], second.results[0]["brokers"][0]]
    assert len(nem.outstanding) == 2
    assert nem.heal("kill") == 2
    starts = [o.value["brokers"] for o in read_history(history.path).ops if o.f == "start"]
    assert starts[::2] == [[hit[1]], [hit[0]]]  # invoke values, latest first
    assert all(s == "running" for s in cluster.state.values())


def test_power_loss_of_all_records_what_each_broker_dropped_and_starts_them(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, ALL, dirty_bytes=777)
    assert nem.apply("power-loss").ok
    assert cluster.calls == [("lose_unfsynced", [1, 2, 3])]  # one call: all at once
    assert set(cluster.state.values()) == {"exited"}
    nem.heal("power-loss")
    assert cluster.whole
    got = fault_then_heal(history, "power-loss", "start")
    done = got[1].value
    assert done["brokers"] == [1, 2, 3] and done["lost_bytes"] == 3 * 777
    assert done["lost"]["2"] == {"files": 1, "bytes": 777, "paths": ["trial-0/00.log"]}
    assert "not_crashed" not in done


def test_power_loss_that_crashed_nothing_completes_info_with_the_reason(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path, storage="plain")
    applied = nem.apply("power-loss")
    assert not applied.ok and applied.heal is None
    last = read_history(history.path).ops[-1]
    assert (last.type, last.f) == ("info", "power-loss")
    assert "no write-back filesystem" in (last.error or "")
    assert nem.outstanding == () and cluster.whole


def test_power_loss_names_a_broker_it_could_not_crash_and_heals_the_others(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, ALL)
    cluster.state[2] = "paused"
    assert nem.apply("power-loss").ok
    done = read_history(history.path).ops[1].value
    assert done["brokers"] == [1, 3] and "paused" in done["not_crashed"]["2"]
    nem.heal("power-loss")
    starts = [o.value for o in read_history(history.path).ops if o.f == "start"]
    assert starts[0] == {"brokers": [1, 3]}


def test_disk_full_until_the_heal_which_says_what_was_refused_and_restarts_a_halted_broker(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, ALL)
    assert nem.apply("disk-full").ok
    assert cluster.full == {1, 2, 3} and not cluster.whole
    cluster.state[2] = "exited"  # its only log directory failed: the broker halted
    nem.heal("disk-full")
    assert cluster.whole
    got = fault_then_heal(history, "disk-full", "disk-free")
    freed = got[3].value["freed"]
    assert freed["2"] == {"refused_writes": 3, "refused_bytes": 0, "halted": True}
    assert freed["1"]["halted"] is False


def test_disk_full_on_plain_storage_completes_info_and_leaves_no_disk_full(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path, ALL, storage="plain")
    applied = nem.apply("disk-full")
    assert not applied.ok and nem.outstanding == () and cluster.whole
    assert read_history(history.path).ops[-1].type == "info"


def test_corrupt_kills_corrupts_and_starts_each_target_and_records_what_it_hit(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, ALL)
    cluster.empty_segments = {3}
    assert nem.apply("corrupt").ok and nem.outstanding == () and cluster.whole
    # Every target was down when its file was damaged, and runs again after.
    verbs = [c[0] for c in cluster.calls]
    assert verbs == ["kill_node"] * 3 + ["corrupt_segment"] * 3 + ["start_node"] * 3
    got = read_history(history.path).ops
    assert [(o.type, o.f) for o in got] == [("invoke", "corrupt"), ("ok", "corrupt")]
    assert got[0].value["mode"] in ("bitflip", "truncate")
    done = got[1].value
    assert done["brokers"] == [1, 2] and cluster.corrupted == [1, 2]
    assert done["corrupted"]["1"]["offsets"] == [90, 99]
    assert "no segment" in done["not_corrupted"]["3"]


def test_corrupt_with_nothing_to_corrupt_completes_info_and_leaves_every_broker_up(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, ALL)
    cluster.empty_segments = {1, 2, 3}
    assert not nem.apply("corrupt").ok and cluster.whole
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "nothing corrupted" in (last.error or "")


def test_corrupt_alternates_its_modes_by_the_pick() -> None:
    pkg = build_package("corrupt", ALL, "trial")
    modes = {next(iter(pkg.fault(FakeCluster(), pick))).value["mode"] for pick in range(4)}
    assert modes == {"bitflip", "truncate"}
    one = build_package("corrupt", ALL.model_copy(update={"corrupt_modes": ("truncate",)}), "t")
    assert next(iter(one.fault(FakeCluster(), 1))).value["mode"] == "truncate"


def test_clock_bump_records_the_offset_measured_and_its_heal_sets_the_clock_true(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, ALL)
    cluster.clock_ignored = {3}
    assert nem.apply("clock", pick=1).ok and cluster.clocks == {1: -120, 2: -120, 3: -120}
    nem.heal("clock")
    assert cluster.whole
    got = fault_then_heal(history, "clock", "clock-reset")
    assert got[0].value["offset_s"] == -120  # the offsets in turn, by the pick
    done = got[1].value
    assert done["brokers"] == [1, 2] and done["clock"]["1"]["offset_s"] == -119.996
    assert done["missed"]["3"]["offset_s"] == 0.004  # measured, not what was asked
    assert set(got[3].value["clock"]) == {"1", "2", "3"}  # every target set true


def test_a_clock_no_broker_took_completes_info_and_is_set_true(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path, ALL)
    cluster.clock_ignored = {1, 2, 3}
    applied = nem.apply("clock")
    assert not applied.ok and applied.heal is None and cluster.whole
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "no broker's clock took" in (last.error or "")


def test_a_clock_fault_on_real_clocks_completes_info(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path, ALL, clock="real")
    assert not nem.apply("clock").ok and cluster.whole
    assert read_history(history.path).ops[-1].type == "info"


def test_clock_strobe_is_judged_by_the_extreme_it_reached(tmp_path: Path) -> None:
    spec = ALL.model_copy(update={"clock": ALL.clock.model_copy(update={"strobe_ms": 4000})})
    cluster, nem, history = make(tmp_path, spec)
    assert nem.apply("clock", pick=1).ok
    got = read_history(history.path).ops
    assert got[0].value["strobe_ms"] == 4000 and got[1].value["clock"]["1"]["min_s"] == -120
    nem.heal("clock")
    assert cluster.whole


@pytest.mark.parametrize(
    "role,internal",
    [("txn-coordinator", "__transaction_state"), ("group-coordinator", "__consumer_offsets")],
)
def test_a_coordinator_role_is_the_leader_of_its_internal_topic(
    role: str, internal: str, monkeypatch
) -> None:
    """With one partition (the presets aiming at coordinators set it), every id is on
    it; the placement among many is in test_coordinator_targets.py."""
    from kafka_trial.nemesis import targets

    monkeypatch.setattr(targets, "LAG_WAIT_S", 0)
    cluster = FakeCluster(topic=internal, n_partitions=1)
    TXN_IDS.register("kt-run-0", "producer", {})
    GROUP_IDS.register("kafka-trial-group-run", "consumer")
    try:
        assert resolve(role, cluster, "trial", 0, 0) == [cluster.leaders[0]]
        with pytest.raises(RuntimeError, match=f"{internal} does not exist yet"):
            resolve(role, FakeCluster(), "trial", 0, 0)
    finally:
        TXN_IDS.unregister("kt-run-0")
        GROUP_IDS.unregister("kafka-trial-group-run")


def test_a_failing_verb_completes_info_and_nothing_is_left_outstanding(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path, fail_verbs={"kill_node"})
    applied = nem.apply("kill-leader")
    assert not applied.ok and applied.heal is None
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "planted" in (last.error or "")
    assert nem.outstanding == ()
    cluster.fail_verbs.clear()
    assert nem.apply("pause").ok  # the nemesis goes on


def test_a_failed_first_step_stops_a_sequence(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path, fail_verbs={"cut"})
    nem.apply("unclean-failover")
    assert ops(history) == [("invoke", "partition"), ("info", "partition")]
    assert all(s == "running" for s in cluster.state.values())


def test_unclean_failover_writes_its_steps_in_order(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path)
    leader = cluster.leaders[0]
    applied = nem.apply("unclean-failover")
    assert [f for t, f in ops(history) if t == "ok"] == [
        "partition",
        "await-isr-shrink",
        "kill",
        "heal",
        "elect-unclean",
    ]
    assert applied.results[1] == {"isr": [leader]}
    assert applied.results[4]["leader"] != leader
    nem.heal()
    assert cluster.state[leader] == "running"


def test_last_replica_power_loss_writes_its_steps_in_order_and_heals_the_leader(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path)
    leader = cluster.leaders[0]
    applied = nem.apply("last-replica-power-loss")
    assert [f for t, f in ops(history) if t == "ok"] == [
        "partition",
        "await-isr-shrink",
        "power-loss",
        "heal",
        "await-leader",
    ]
    assert applied.results[1] == {"isr": [leader]}
    lost = {"files": 1, "bytes": 4096, "paths": ["trial-0/00.log"]}
    assert applied.results[2]["lost"] == {str(leader): lost}
    assert not cluster.cuts and cluster.state[leader] == "exited"
    # The fake elects any live broker: who leads is what the partition said.
    assert applied.results[4]["old_leader"] == leader
    assert applied.results[4]["elected"] is (applied.results[4]["leader"] != leader)
    nem.heal()
    assert cluster.whole


def test_last_replica_power_loss_on_plain_storage_is_info_and_still_restores_the_links(
    tmp_path: Path,
) -> None:
    cluster, nem, history = make(tmp_path, storage="plain")
    applied = nem.apply("last-replica-power-loss")
    assert ("info", "power-loss") in ops(history) and ("ok", "heal") in ops(history)
    assert applied.heal is None and cluster.whole


def test_during_heals_when_the_block_raises(tmp_path: Path) -> None:
    cluster, nem, _ = make(tmp_path)
    with pytest.raises(ZeroDivisionError), nem.during("pause", pick=4):
        assert "paused" in cluster.state.values()
        _ = 1 / 0
    assert "paused" not in cluster.state.values()
    assert nem.outstanding == ()


def test_targets_resolve_the_same_for_the_same_pick() -> None:
    cluster = FakeCluster(brokers=5)
    for role in ("random", "minority", "majority"):
        picks = [resolve(role, cluster, "trial", 0, p) for p in range(20)]
        assert picks == [resolve(role, cluster, "trial", 0, p) for p in range(20)]
        assert len({tuple(x) for x in picks}) > 1, "the pick must matter"


def test_the_runner_follows_the_schedule_and_final_heal_leaves_nothing(tmp_path: Path) -> None:
    cluster, nem, history = make(tmp_path)
    steps = [
        Step(0.0, "fault", "pause", 1),
        Step(0.0, "fault", "kill", 2),
        Step(0.01, "heal", "pause"),
        Step(0.01, "fault", "kill", 3),  # kill is never healed by the schedule
    ]
    runner = NemesisRunner(nem, steps, threading.Event())
    runner.run()
    assert runner.faults_done == 3
    assert [a.package for a in nem.outstanding] == ["kill", "kill"]
    health = runner.final_heal("trial", 1)
    assert health["healthy"] is True
    assert nem.outstanding == () and cluster.whole
    fs = [f for t, f in ops(history) if t == "ok"]
    assert fs[-2:] == ["heal-all", "await-healthy"]


def test_schedules_are_the_same_as_before_the_refactor() -> None:
    """The same seed and config give the same schedule.json as the code before the
    layering refactor (baseline written by that code), but for one deliberate change:
    a package no period drew fires in the last period (safe, seed 0, never killed the
    leader). Every other step, and every pick, is what the baseline has."""
    from kafka_trial.harness.presets import preset
    from kafka_trial.harness.spec import load_spec
    from kafka_trial.nemesis.schedule import schedule

    baseline = json.loads((Path(__file__).parent / "data" / "schedule_baseline.json").read_text())
    for key, want in baseline.items():
        name, seed = key.split(":")
        spec = load_spec(None, None, None if name == "default" else preset(name))
        got = [s.to_dict() for s in schedule(spec.nemesis, int(seed), spec.duration_s)]
        fired = {s["package"] for s in want}
        assert [s for s in got if s["package"] in fired] == want, key
        added = [s for s in got if s["package"] not in fired]
        assert {s["package"] for s in got} == set(spec.nemesis.faults), key
        assert all(s["at_s"] >= max(w["at_s"] for w in want) - spec.nemesis.fault_s for s in added)


def test_schedule_times_count_from_the_start_of_the_fault_phase(tmp_path: Path) -> None:
    """The runner is built before the cluster starts; a fault due 0.3 s into the fault
    phase must not fire at once because the start took longer than that."""
    import time

    _, nem, _ = make(tmp_path)
    runner = NemesisRunner(nem, [Step(0.3, "fault", "pause", 1)], threading.Event())
    time.sleep(0.4)  # a slow cluster start
    t0 = time.monotonic()
    runner.run()
    assert time.monotonic() - t0 >= 0.29
    assert runner.faults_done == 1


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_the_catalog_knows_every_op_a_package_records_and_pairs_its_heal(
    tmp_path: Path, name: str
) -> None:
    """The report pairs fault and heal bands from the catalog alone: every f a package
    records must be in it, and every fault the catalog says has a heal gets one."""
    from kafka_trial.nemesis.catalog import FAULT_OPS, HEAL_OPS, WAIT_OPS, heals, is_fault

    _, nem, history = make(tmp_path, client_lanes=2)
    nem.apply(name, pick=5)
    nem.heal()
    nem.heal_all()
    done = [o for o in read_history(history.path).ops if o.type == "ok"]
    assert {o.f for o in done} <= {*FAULT_OPS, *HEAL_OPS, *WAIT_OPS}
    for i, o in enumerate(done):
        if is_fault(o.f) and FAULT_OPS[o.f] is not None:
            own = [later.f for later in done[i + 1 :] if heals(o.f, later.f)]
            assert own and own[0] == FAULT_OPS[o.f], (o.f, [d.f for d in done])


def test_client_pause_freezes_a_client_process_and_its_heal_wakes_it(tmp_path: Path) -> None:
    """A real process stands in for the client (the producer's own process is
    test_producer_process.py's): the kernel's state is what the ops record."""
    child = subprocess.Popen(["sleep", "60"])
    CLIENTS.register("producer t-1", child.pid, lambda: "commit")
    try:
        _, nem, history = make(tmp_path)
        assert nem.apply("client-pause").ok
        assert process_state(child.pid) == "T"
        nem.heal("client-pause")
        assert process_state(child.pid) in ("S", "R")
        fault, done, heal, healed = read_history(history.path).ops
        assert (fault.f, done.type, heal.f, healed.type) == (
            "client-pause",
            "ok",
            "client-resume",
            "ok",
        )
        assert done.value["clients"] == {
            str(child.pid): {"name": "producer t-1", "state": "T", "in_call": "commit"}
        }
        assert healed.value["resumed"][str(child.pid)] in ("S", "R")
        assert "frozen, state T" in effect(done.f, done.type, done.value)
    finally:
        CLIENTS.unregister(child.pid)
        child.kill()
        child.wait()


def test_client_pause_without_client_processes_completes_info(tmp_path: Path) -> None:
    _, nem, history = make(tmp_path)
    assert not nem.apply("client-pause").ok
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "producer.own_process" in (last.error or "")


def test_heal_all_wakes_a_client_whose_own_heal_never_ran(tmp_path: Path) -> None:
    child = subprocess.Popen(["sleep", "60"])
    CLIENTS.register("producer t-2", child.pid)
    try:
        _, nem, history = make(tmp_path)
        assert CLIENTS.pause(child.pid) == "T"
        nem.heal_all()
        assert process_state(child.pid) in ("S", "R")
        assert read_history(history.path).ops[-1].value["clients"] == [child.pid]
    finally:
        CLIENTS.unregister(child.pid)
        child.kill()
        child.wait()


class _Lagging(FakeCluster):
    """A cluster whose first answers come from a broker that has not yet applied the
    topic's records: no topic at all."""

    lag: int = 2
    asked: int = 0

    def partitions(self, topic: str, timeout_s: float = 5) -> dict:
        self.asked += 1
        return {} if self.asked <= self.lag else super().partitions(topic, timeout_s)


def test_a_view_without_the_run_s_topic_is_looked_up_again(monkeypatch) -> None:
    from kafka_trial.nemesis import targets

    monkeypatch.setattr(targets, "LAG_WAIT_S", 0)
    cluster = _Lagging()
    assert resolve("leader", cluster, "trial", 0, 0) == [cluster.leaders[0]]
    assert cluster.asked == 3
    # A view that never has the topic ends as before: no target.
    never = _Lagging()
    never.lag = 99
    with pytest.raises(RuntimeError, match="no leader known for trial/0"):
        resolve("leader", never, "trial", 0, 0)
    assert never.asked == 1 + targets.LAG_LOOKS


def test_a_partition_without_a_leader_is_an_answer_not_a_lag(monkeypatch) -> None:
    from kafka_trial.nemesis import targets

    monkeypatch.setattr(targets, "LAG_WAIT_S", 0)
    cluster = _Lagging()
    cluster.lag = 0
    cluster.leaders[0] = None  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="no leader known for trial/0"):
        resolve("leader", cluster, "trial", 0, 0)
    assert cluster.asked == 1
