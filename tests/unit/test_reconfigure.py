"""rolling-restart and preferred-election on the in-memory cluster: what each does to
which broker, in what order, what its completion records, and that one that changed
nothing completes `info` (the real-broker test is tests/integration/test_faults.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.nemesis import Nemesis, steps
from kafka_trial.nemesis.reconfigure import PreferredElection, RollingRestart
from kafka_trial.nemesis.settings import NemesisSpec

from tests.fakes import FakeCluster


def _nemesis(tmp_path: Path, cluster: FakeCluster, fault: str) -> tuple[Nemesis, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    spec = NemesisSpec(faults=(fault,))
    return Nemesis(cluster, history, spec, "trial"), history


def test_a_roll_restarts_every_broker_once_one_at_a_time_in_the_seeds_order(tmp_path) -> None:
    cluster = FakeCluster()
    nem, history = _nemesis(tmp_path, cluster, "rolling-restart")
    applied = nem.apply("rolling-restart", pick=7)
    assert applied.ok and applied.heal is None
    verbs = [(v, n) for v, n in cluster.calls if v in ("stop_node", "start_node")]
    order = [n for v, n in verbs if v == "stop_node"]
    assert sorted(order) == [1, 2, 3]
    # Each broker is started before the next one stops: never two down at once.
    assert verbs == [(v, n) for n in order for v in ("stop_node", "start_node")]
    assert all(s == "running" for s in cluster.state.values())
    done = [o for o in read_history(history.path).ops if o.f == "restart" and o.type == "ok"]
    assert [o.value["broker"] for o in done] == order
    assert all(o.value["down_s"] >= 0 and "in_sync_after_s" in o.value for o in done)
    # The same pick, the same order: a replayed schedule rolls the same way.
    again = FakeCluster()
    nem2, _ = _nemesis(tmp_path / "again", again, "rolling-restart")
    nem2.apply("rolling-restart", pick=7)
    assert [n for v, n in again.calls if v == "stop_node"] == order


@dataclass
class _LaggingCluster(FakeCluster):
    """Replicas never rejoin after the first restart."""

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        return False


def test_a_broker_that_does_not_rejoin_ends_the_roll_as_info(tmp_path) -> None:
    cluster = _LaggingCluster()
    nem, history = _nemesis(tmp_path, cluster, "rolling-restart")
    applied = nem.apply("rolling-restart", pick=1)
    assert not applied.ok
    stopped = [n for v, n in cluster.calls if v == "stop_node"]
    assert len(stopped) == 1  # no second broker went down beside a lagging one
    restarts = [o for o in read_history(history.path).ops if o.f == "restart"]
    assert [o.type for o in restarts] == ["invoke", "info"]
    assert "not back in sync" in (restarts[1].error or "")


def test_a_preferred_election_moves_leaders_back_and_records_each(tmp_path) -> None:
    cluster = FakeCluster()  # partitions 1 and 2 are led by brokers 2 and 3, not 1
    before = dict(cluster.leaders)
    nem, history = _nemesis(tmp_path, cluster, "preferred-election")
    applied = nem.apply("preferred-election", pick=0)
    assert applied.ok
    elections = [a for v, a in cluster.calls if v == "elect_leader"]
    assert elections == [("trial", 1, False), ("trial", 2, False)]  # partition 0 was led by 1
    done = next(
        o for o in read_history(history.path).ops if o.f == "elect-preferred" and o.type == "ok"
    )
    assert done.value["elected"] == {
        "1": {"from": before[1], "to": 1},
        "2": {"from": before[2], "to": 1},
    }


def test_an_election_that_moves_no_leader_is_info(tmp_path) -> None:
    cluster = FakeCluster()
    cluster.leaders = dict.fromkeys(cluster.leaders, 1)  # every partition on its preferred
    nem, history = _nemesis(tmp_path, cluster, "preferred-election")
    assert not nem.apply("preferred-election", pick=0).ok
    ops = [o for o in read_history(history.path).ops if o.f == "elect-preferred"]
    assert [o.type for o in ops] == ["invoke", "info"]
    assert "already had its preferred leader" in (ops[1].error or "")
    assert not [v for v, _ in cluster.calls if v == "elect_leader"]


def test_both_are_built_from_the_run_spec() -> None:
    from kafka_trial.nemesis.packages import build_package

    assert build_package("rolling-restart", NemesisSpec(), "t") == RollingRestart("t")
    assert build_package("preferred-election", NemesisSpec(), "t") == PreferredElection("t")


def test_the_report_says_what_each_did() -> None:
    from kafka_trial.nemesis.effects import effect

    said = effect(
        "restart", "ok", {"broker": 2, "led": [0, 1], "down_s": 1.5, "in_sync_after_s": 3.1}
    )
    assert (
        said == "broker 2 down 1.5 s, leading partitions [0, 1]; back in sync 3.1 s after its start"
    )
    said = effect("elect-preferred", "ok", {"elected": {"0": {"from": 2, "to": 1}}})
    assert said == "partition 0: leader 2 -> 1"
    said = effect("reassign", "ok", {"from": [3, 1], "to": [2, 1], "started": True})
    assert said == "replicas [3, 1] -> [2, 1], moving"
    settled = {"trial/0": {"replicas": [2, 1], "isr": [2, 1], "took_s": 2.1}}
    said = effect("reassign-settle", "ok", {"topic": "trial", "settled": settled})
    assert said == "trial/0: replicas [2, 1], ISR [2, 1], done 2.1 s after its request"


def test_a_reassignment_moves_a_replica_to_a_spare_broker_or_reorders() -> None:
    from kafka_trial.nemesis.reconfigure import target_replicas

    for pick in range(20):
        moved = target_replicas((1, 2), [1, 2, 3], pick)
        assert len(moved) == 2 and 3 in moved and len(set(moved)) == 2
        turned = target_replicas((1, 2, 3), [1, 2, 3], pick)
        assert sorted(turned) == [1, 2, 3] and turned != [1, 2, 3]
    assert target_replicas((1, 2, 3), [1, 2, 3], 4) == target_replicas((1, 2, 3), [1, 2, 3], 4)


def _ops(history: HistoryWriter, f: str) -> list:
    return [o for o in read_history(history.path).ops if o.f == f]


def test_a_reassignment_records_where_the_partition_went(tmp_path) -> None:
    cluster = FakeCluster(brokers=4)
    cluster.assignments[0] = (1, 2, 3)
    nem, history = _nemesis(tmp_path, cluster, "reassign")
    applied = nem.apply("reassign", pick=3)
    assert applied.ok and applied.heal is not None and applied.heal.f == "reassign-settle"
    ((_, (topic, partition, target)),) = [c for c in cluster.calls if c[0] == "reassign"]
    assert (topic, partition) == ("trial", 0) and 4 in target
    (done,) = [o for o in _ops(history, "reassign") if o.type == "ok"]
    assert done.value["from"] == [1, 2, 3] and done.value["to"] == list(target)
    assert done.value["moved_to"] == [4]
    # The fake moves at once: the controller showed it done before the op completed.
    assert done.value["done_at_fault"] is True and "started" not in done.value
    assert nem.heal("reassign") == 1 and nem.outstanding == ()
    (settled,) = [o for o in _ops(history, "reassign-settle") if o.type == "ok"]
    assert settled.value["settled"]["trial/0"]["replicas"] == list(target)


@dataclass
class _StuckCluster(FakeCluster):
    """Accepts the reassignment and shows it in progress until `finish()`, if ever."""

    moving: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        self._verb("reassign", (topic, partition, tuple(replicas)))
        self.moving[partition] = tuple(replicas)

    def reassignments(self, topic: str) -> dict[int, dict[str, list[int]]]:
        return {p: {"replicas": [1, 2, 3, 4], "adding": [4], "removing": [3]} for p in self.moving}

    def finish(self) -> None:
        self.assignments.update(self.moving)
        self.moving.clear()


def test_the_fault_returns_while_the_move_goes_on_and_its_heal_waits_for_it(tmp_path) -> None:
    from kafka_trial.nemesis.reconfigure import Reassign

    cluster = _StuckCluster(brokers=4)
    cluster.assignments[0] = (1, 2, 3)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    nem = Nemesis(cluster, history, NemesisSpec(), "trial")
    applied = nem.apply(Reassign("trial", 0, settle_s=30), pick=3)
    assert applied.ok and cluster.moving  # still moving when the op completed
    (done,) = [o for o in _ops(history, "reassign") if o.type == "ok"]
    assert done.value["started"] is True and "done_at_fault" not in done.value
    assert "took_s" not in done.value
    timer = threading.Timer(1.5, cluster.finish)
    timer.start()
    try:
        assert nem.heal("reassign") == 1 and nem.outstanding == ()
    finally:
        timer.join()
    (settled,) = [o for o in _ops(history, "reassign-settle") if o.type == "ok"]
    went = settled.value["settled"]["trial/0"]
    assert went["replicas"] == done.value["to"] and sorted(went["isr"]) == sorted(done.value["to"])
    assert went["took_s"] >= 1.5  # counted from the request, not from the heal
    assert "unthrottled" not in settled.value


def test_a_move_the_controller_never_shows_is_info_and_left_to_its_heal(tmp_path) -> None:
    from kafka_trial.nemesis.reconfigure import Reassign

    @dataclass
    class _Unseen(FakeCluster):
        def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
            self._verb("reassign", (topic, partition, tuple(replicas)))

    cluster = _Unseen(brokers=4)
    cluster.assignments[0] = (1, 2, 3)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    nem = Nemesis(cluster, history, NemesisSpec(), "trial")
    applied = nem.apply(Reassign("trial", 0, settle_s=0.1, started_s=0.3), pick=3)
    assert not applied.ok and applied.heal is not None and applied.heal.f == "reassign-settle"
    (info,) = [o for o in _ops(history, "reassign") if o.type == "info"]
    assert "neither in progress nor done" in (info.error or "")


def test_a_reassignment_that_does_not_complete_is_info_with_where_it_stopped(tmp_path) -> None:
    from kafka_trial.nemesis.reconfigure import Reassign

    cluster = _StuckCluster(brokers=4)
    cluster.assignments[0] = (1, 2, 3)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    nem = Nemesis(cluster, history, NemesisSpec(), "trial")
    assert nem.apply(Reassign("trial", 0, settle_s=0.1), pick=3).ok
    # Stopped short with nothing left in force: the move is left to finish.
    assert nem.heal("reassign") == 1 and nem.outstanding == ()
    (info,) = [o for o in _ops(history, "reassign-settle") if o.type == "info"]
    assert "not done in time" in (info.error or "") and "'adding': [4]" in (info.error or "")


# --- a throttled reassignment (nemesis.reassign.throttle_bytes) ---------------------

RATE = 65536


def _throttled(tmp_path: Path, cluster: FakeCluster, settle_s: float = 90.0):
    from kafka_trial.nemesis.reconfigure import Reassign

    cluster.assignments[0] = (1, 2, 3)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    nem = Nemesis(cluster, history, NemesisSpec(), "trial")
    return nem, history, Reassign("trial", 0, settle_s=settle_s, throttle_bytes=RATE)


def _verbs(cluster: FakeCluster) -> list[str]:
    return [v for v, _ in cluster.calls if v in THROTTLE_VERBS]


THROTTLE_VERBS = ("set_throttle", "throttle_configs", "reassign", "clear_throttle")


def test_a_throttled_move_sets_the_throttle_first_and_its_heal_removes_it(tmp_path) -> None:
    cluster = _StuckCluster(brokers=4)
    nem, history, pkg = _throttled(tmp_path, cluster)
    applied = nem.apply(pkg, pick=3)
    assert applied.ok and applied.heal is not None
    # The op is over while the move goes on, its throttle still in force.
    assert _verbs(cluster) == ["set_throttle", "throttle_configs", "reassign"]
    assert cluster.throttles
    ((_, (_, rate, brokers, leader, follower)),) = [
        c for c in cluster.calls if c[0] == "set_throttle"
    ]
    # The tool's lists: the replicas it has serve the copy, the one it moves to fetches.
    assert (rate, brokers, leader, follower) == (RATE, (1, 2, 3, 4), "0:1,0:2,0:3", "0:4")
    (done,) = [o for o in _ops(history, "reassign") if o.type == "ok"]
    throttle = done.value["throttle"]
    assert throttle["rate"] == RATE and throttle["brokers"] == [1, 2, 3, 4]
    seen = throttle["read_back"]
    assert seen["brokers"]["4"] == {
        "leader.replication.throttled.rate": str(RATE),
        "follower.replication.throttled.rate": str(RATE),
    }
    assert seen["topic"]["follower.replication.throttled.replicas"] == "0:4"
    cluster.finish()
    assert nem.heal("reassign") == 1 and nem.outstanding == ()
    assert _verbs(cluster)[3:] == ["clear_throttle", "throttle_configs"]
    assert cluster.throttles == {}
    (healed,) = [o for o in _ops(history, "reassign-settle") if o.type == "ok"]
    assert healed.value["unthrottled"] == {"trial": {}}  # read back: every config gone
    assert (
        healed.value["brokers"] == [1, 2, 3, 4] and "took_s" in healed.value["settled"]["trial/0"]
    )


def test_a_stalled_throttled_move_is_info_and_its_heal_still_removes_the_throttle(
    tmp_path,
) -> None:
    cluster = _StuckCluster(brokers=4)
    nem, history, pkg = _throttled(tmp_path, cluster, settle_s=0.1)
    assert nem.apply(pkg, pick=3).ok
    assert nem.heal("reassign") == 1 and nem.outstanding == ()
    assert cluster.throttles == {} and cluster.moving  # gone, though the move is not done
    (info,) = [o for o in _ops(history, "reassign-settle") if o.type == "info"]
    said = info.error or ""
    assert "'adding': [4]" in said and "'removing': [3]" in said
    assert "throttle removed, read back gone" in said


def test_a_throttle_not_in_force_moves_nothing_and_is_removed_by_the_heal(tmp_path) -> None:
    cluster = FakeCluster(brokers=4, throttle_ignored={4})
    nem, history, pkg = _throttled(tmp_path, cluster)
    applied = nem.apply(pkg, pick=3)
    assert not applied.ok and "reassign" not in _verbs(cluster)
    assert applied.heal is not None and applied.heal.f == "unthrottle"
    (info,) = [o for o in read_history(history.path).ops if o.type == "info"]
    assert "not in force" in (info.error or "") and "broker 4" in (info.error or "")
    assert nem.heal() == 1 and cluster.throttles == {}
    healed = _ops(history, "unthrottle")
    assert [o.type for o in healed] == ["invoke", "ok"]
    assert healed[-1].value["unthrottled"] == {"trial": {}}


def test_a_deleted_throttle_that_reads_back_late_is_gone_not_stuck(tmp_path, monkeypatch) -> None:
    """A broker describes its configs from its metadata image, which takes a deletion a
    moment after the controller: a read-back that still shows it is asked again."""
    monkeypatch.setattr(steps, "THROTTLE_GONE_S", 2.0)

    class Lagging(FakeCluster):
        stale_reads = 2

        def throttle_configs(self, topic: str, brokers: list[int]) -> dict:
            if self.stale_reads and self.throttles == {}:
                self.stale_reads -= 1
                return {"brokers": {"3": {"leader.replication.throttled.rate": "131072"}}}
            return super().throttle_configs(topic, brokers)

    cluster = Lagging(brokers=4)
    nem, history, pkg = _throttled(tmp_path, cluster)
    assert nem.apply(pkg, pick=3).ok
    assert nem.heal() == 1 and nem.outstanding == () and cluster.stale_reads == 0
    (done,) = [o for o in _ops(history, "reassign-settle") if o.type != "invoke"]
    assert done.type == "ok" and done.value["unthrottled"] == {"trial": {}}


def test_a_throttle_its_heal_cannot_remove_stays_outstanding(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(steps, "THROTTLE_GONE_S", 0.2)
    cluster = FakeCluster(brokers=4, sticky_throttle=True)
    nem, history, pkg = _throttled(tmp_path, cluster)
    applied = nem.apply(pkg, pick=3)
    assert applied.ok and applied.heal is not None
    # A heal that finds it still there fails, and stays outstanding for the final heal.
    assert nem.heal("reassign") == 0 and nem.outstanding == (applied,)
    assert nem.heal_failed(applied)
    (info,) = [o for o in _ops(history, "reassign-settle") if o.type == "info"]
    assert "still set" in (info.error or "")
    cluster.sticky_throttle = False
    assert nem.heal() == 1 and cluster.throttles == {} and nem.outstanding == ()


def test_a_heal_tried_again_does_not_wait_again_for_a_stalled_move(tmp_path, monkeypatch) -> None:
    import time

    monkeypatch.setattr(steps, "THROTTLE_GONE_S", 0.2)

    cluster = _StuckCluster(brokers=4, sticky_throttle=True)
    nem, history, pkg = _throttled(tmp_path, cluster, settle_s=1.0)
    assert nem.apply(pkg, pick=3).ok
    assert nem.heal("reassign") == 0 and len(nem.outstanding) == 1  # the throttle stayed
    cluster.sticky_throttle = False
    t0 = time.monotonic()
    assert nem.heal() == 1 and nem.outstanding == () and cluster.throttles == {}
    assert time.monotonic() - t0 < 0.5  # the wait counts from the request: one look
    said = [o.error or "" for o in _ops(history, "reassign-settle") if o.type == "info"]
    assert "still set" in said[0] and "throttle removed, read back gone" in said[1]


def test_an_unthrottled_move_makes_no_config_call(tmp_path) -> None:
    cluster = _StuckCluster(brokers=4)
    cluster.assignments[0] = (1, 2, 3)
    nem, history = _nemesis(tmp_path, cluster, "reassign")
    applied = nem.apply("reassign", pick=3)
    assert applied.ok and applied.heal is not None
    cluster.finish()
    assert nem.heal() == 1
    assert _verbs(cluster) == ["reassign"]
    (done,) = [o for o in _ops(history, "reassign") if o.type == "ok"]
    assert "throttle" not in done.value
    (healed,) = [o for o in _ops(history, "reassign-settle") if o.type == "ok"]
    assert "unthrottled" not in healed.value and "brokers" not in healed.value


def test_a_reorder_is_not_throttled_and_says_so(tmp_path) -> None:
    cluster = FakeCluster(brokers=3)
    nem, history, pkg = _throttled(tmp_path, cluster)
    assert nem.apply(pkg, pick=3).ok
    assert nem.heal() == 1
    assert _verbs(cluster) == ["reassign"]
    (done,) = [o for o in _ops(history, "reassign") if o.type == "ok"]
    assert done.value["throttle"] == {
        "rate": RATE,
        "skipped": "no replica to copy to: a new order only",
    }


def test_the_throttle_comes_from_the_spec_and_a_negative_one_is_refused() -> None:
    import pytest
    from kafka_trial.nemesis.packages import build_package
    from kafka_trial.nemesis.reconfigure import Reassign
    from pydantic import ValidationError

    spec = NemesisSpec(faults=("reassign",), reassign={"throttle_bytes": RATE})
    assert build_package("reassign", spec, "t") == Reassign("t", 0, throttle_bytes=RATE)
    assert build_package("reassign", NemesisSpec(), "t") == Reassign("t", 0)
    with pytest.raises(ValidationError, match=r"throttle_bytes=-1 is negative.*use 0"):
        NemesisSpec(reassign={"throttle_bytes": -1})
