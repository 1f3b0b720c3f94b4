"""voter-change and remove-broker on the in-memory cluster: which voter or broker each
picks, what its completion records, that a change the cluster does not show completes
`info` (and leaves nothing down or moved), that each heal is recorded and makes the
cluster whole, and what the spec refuses. The real-broker tests, on a dynamic quorum,
are tests/integration/test_membership.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.cluster.control import PartitionState
from kafka_trial.cluster.provision import Provisioner
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.harness.spec import build_spec
from kafka_trial.nemesis import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.membership import RemoveBroker, VoterChange, plan_moves
from kafka_trial.nemesis.settings import NemesisSpec

from tests.fakes import FakeCluster


def _nemesis(tmp_path: Path, cluster: FakeCluster) -> tuple[Nemesis, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    return Nemesis(cluster, history, NemesisSpec(), "trial"), history


def _done(history: HistoryWriter, f: str) -> list:
    return [o for o in read_history(history.path).ops if o.f == f and o.type != "invoke"]


# --- voter-change -----------------------------------------------------------------


def test_an_even_pick_removes_the_quorum_leader_and_the_heal_adds_it_back(tmp_path) -> None:
    cluster = FakeCluster(controller=2)
    nem, history = _nemesis(tmp_path, cluster)
    applied = nem.apply("voter-change", pick=4)
    assert applied.ok and applied.heal is not None
    assert sorted(cluster.voters) == [1, 3]  # the fault changed the fake's voter set
    (done,) = _done(history, "voter-remove")
    assert done.type == "ok"
    assert done.value["voter"] == 2 and done.value["was_leader"] is True
    assert done.value["directory_id"] == "dir-2"
    assert done.value["before"] == [1, 2, 3] and done.value["after"] == [1, 3]
    assert done.value["leader_before"] == 2 and done.value["leader_after"] == 1
    assert done.value["observer"] is True
    nem.heal()
    assert sorted(cluster.voters) == [1, 2, 3] and cluster.whole
    (heal,) = _done(history, "voter-add")
    assert heal.type == "ok" and heal.value["added"]["2"]["voters"] == [1, 2, 3]
    assert heal.value["voter"] == 2


def test_an_odd_pick_removes_another_voter_the_same_one_for_the_same_pick(tmp_path) -> None:
    removed = []
    for i in range(2):
        cluster = FakeCluster(controller=1)
        nem, _ = _nemesis(tmp_path / str(i), cluster)
        assert nem.apply("voter-change", pick=7).ok
        ((node, _),) = [a for v, a in cluster.calls if v == "remove_voter"]
        removed.append(node)
    assert removed[0] == removed[1] and removed[0] != 1


def test_a_static_quorum_refuses_and_the_fault_is_info_with_nothing_to_heal(tmp_path) -> None:
    cluster = FakeCluster(quorum_mode="static")
    nem, history = _nemesis(tmp_path, cluster)
    applied = nem.apply("voter-change", pick=0)
    assert not applied.ok and applied.heal is None and nem.outstanding == ()
    (info,) = _done(history, "voter-remove")
    assert info.type == "info" and "static" in (info.error or "")
    assert sorted(cluster.voters) == [1, 2, 3]


def test_a_removal_the_quorum_does_not_show_is_info_and_its_add_back_stays(tmp_path) -> None:
    """Asked, the removal may still take effect (a VotersRecord appended but not yet
    committed, its new majority cut off): the add-back stays outstanding, and finds the
    node a voter already if it never left."""
    cluster = FakeCluster(sticky_voters=True)
    nem, history = _nemesis(tmp_path, cluster)
    assert not nem.apply(VoterChange(settle_s=0.1), pick=1).ok
    (info,) = _done(history, "voter-remove")
    assert info.type == "info" and "still a voter" in (info.error or "")
    assert len(nem.outstanding) == 1
    assert nem.heal() == 1 and nem.outstanding == ()
    (heal,) = _done(history, "voter-add")
    assert heal.type == "ok" and sorted(cluster.voters) == [1, 2, 3]


def test_each_look_for_the_removal_is_bounded_by_what_is_left_of_settle_s(tmp_path) -> None:
    """A quorum that cannot answer made each look cost up to three brokers' timeouts,
    and the 30 s wait ran to 100 s: every look after the first reading of the voters
    is given only what is left of settle_s."""
    cluster = FakeCluster(sticky_voters=True)
    nem, _ = _nemesis(tmp_path, cluster)
    nem.apply(VoterChange(settle_s=0.3), pick=1)
    looks = [w for name, w in cluster.calls if name == "quorum"]
    assert looks[0] is None  # the voters before the change: no deadline yet
    bounded = looks[1:]
    assert len(bounded) >= 2 and all(w is not None and w <= 0.3 for w in bounded)
    assert bounded == sorted(bounded, reverse=True)


def test_a_membership_call_asks_no_broker_once_its_time_is_up(monkeypatch) -> None:
    """Through one broker at a time, each given at least MIN_CALL_S; once `within_s`
    has passed, the brokers not yet asked are not, and the error says so. Without it,
    every broker is asked."""
    from kafka_trial.cluster import membership as cm

    now = [0.0]
    monkeypatch.setattr(cm.time, "monotonic", lambda: now[0])
    asked: list[tuple[str, float]] = []

    class Tool:
        def call(self, server: str, *args: str, timeout_s: float = 60) -> dict:
            asked.append((server, timeout_s))
            now[0] += 4.0  # a broker that times out, as a cut-off one does
            raise RuntimeError("TimeoutException")

    m = cm.DockerMembership(None, {}, None, None, lambda: "a:1,b:2,c:3", Tool)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not asked through c:3 or later: out of time"):
        m.quorum(within_s=6.0)
    assert asked == [("a:1", 6.0), ("b:2", cm.MIN_CALL_S)]
    asked.clear()
    with pytest.raises(RuntimeError, match="through c:3: TimeoutException"):
        m.quorum()
    assert [s for s, _ in asked] == ["a:1", "b:2", "c:3"]
    assert {t for _, t in asked} == {60.0}


def test_a_removal_that_errs_once_asked_is_judged_by_the_quorum(tmp_path) -> None:
    """An error after the request (a timeout, the leader gone) says nothing of whether
    the change took: the quorum decides. Not shown: `info`, the heal outstanding. Its
    twin, a refusal before anything was asked (a static quorum), has nothing to heal
    (test_a_static_quorum_refuses_...)."""
    cluster = FakeCluster(fail_verbs={"remove_voter"})
    nem, history = _nemesis(tmp_path, cluster)
    assert not nem.apply(VoterChange(settle_s=0.1), pick=0).ok
    (info,) = _done(history, "voter-remove")
    assert info.type == "info" and "ended in an error" in (info.error or "")
    assert "still a voter" in (info.error or "")
    assert len(nem.outstanding) == 1
    assert nem.heal_all() and nem.outstanding == ()


def test_a_removal_that_errs_but_takes_effect_is_ok_with_the_error(tmp_path) -> None:
    """As on 4.4.0 with the new majority cut off: the admin call timed out, and the
    change committed a moment later. The fault did take effect: ok, with the error."""

    class LateCommit(FakeCluster):
        def remove_voter(self, node: int, directory_id: str) -> None:
            super().remove_voter(node, directory_id)
            raise RuntimeError("TimeoutException: The request timed out.")

    cluster = LateCommit(controller=2)
    nem, history = _nemesis(tmp_path, cluster)
    assert nem.apply("voter-change", pick=0).ok
    (done,) = _done(history, "voter-remove")
    assert done.type == "ok" and done.value["voter"] == 2
    assert "timed out" in done.value["asked_error"] and done.value["after"] == [1, 3]
    nem.heal()
    assert sorted(cluster.voters) == [1, 2, 3]


def test_a_voter_whose_heal_failed_stays_outstanding_and_heal_all_adds_it(tmp_path) -> None:
    cluster = FakeCluster(fail_verbs={"add_voter"})
    nem, history = _nemesis(tmp_path, cluster)
    assert nem.apply("voter-change", pick=0).ok
    assert nem.heal() == 0 and len(nem.outstanding) == 1
    assert [o.type for o in _done(history, "voter-add")] == ["info"]
    cluster.fail_verbs.clear()
    assert nem.heal_all()
    assert nem.outstanding == () and sorted(cluster.voters) == [1, 2, 3]


def test_a_cluster_without_membership_verbs_makes_it_info(tmp_path) -> None:
    class Bare:
        node_ids = [1, 2, 3]

    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    nem = Nemesis(Bare(), history, NemesisSpec(), "trial")  # type: ignore[arg-type]
    for package in ("voter-change", "remove-broker"):
        assert not nem.apply(package, pick=0).ok
    infos = [o for o in read_history(history.path).ops if o.type == "info"]
    assert len(infos) == 2
    assert all("cannot change the cluster's membership" in (o.error or "") for o in infos)


# --- remove-broker ------------------------------------------------------------------


def test_moves_go_to_a_broker_that_holds_none_or_drop_the_replica() -> None:
    placement = {
        "t": {0: PartitionState(1, (1, 2, 3), (1, 2, 3)), 1: PartitionState(2, (2, 3), (2, 3))},
        "u": {0: PartitionState(3, (3,), (3,))},
    }
    moves = plan_moves(placement, 1, [1, 2, 3], pick=0)
    assert moves == {("t", 0): ((1, 2, 3), (2, 3))}  # no spare: one replica fewer
    moves = plan_moves(placement, 3, [1, 2, 3, 4], pick=0)
    assert moves[("t", 0)] == ((1, 2, 3), (1, 2, 4))
    frm, (to,) = moves[("u", 0)]
    assert frm == (3,) and to in (1, 2, 4)  # a single replica moves, never dropped
    assert moves[("t", 1)][1] in ((2, 1), (2, 4))  # its place kept: the leader stays first
    assert plan_moves(placement, 3, [1, 2, 3, 4], pick=5) == plan_moves(
        placement, 3, [1, 2, 3, 4], pick=5
    )


def test_a_decommission_moves_every_replica_off_stops_unregisters_and_records(
    tmp_path,
) -> None:
    cluster = FakeCluster(brokers=4)
    cluster.assignments = {0: (1, 2, 3), 1: (2, 3, 4), 2: (3, 4, 1)}
    before = dict(cluster.assignments)
    nem, history = _nemesis(tmp_path, cluster)
    applied = nem.apply("remove-broker", pick=3)
    assert applied.ok and applied.heal is not None
    (done,) = _done(history, "remove-broker")
    broker = done.value["broker"]
    assert cluster.state[broker] == "exited" and broker in cluster.unregistered
    assert broker not in done.value["registered"]
    assert all(broker not in r for r in cluster.assignments.values())
    held = {f"trial/{p}": list(r) for p, r in before.items() if broker in r}
    assert {k: v["from"] for k, v in done.value["moved"].items()} == held
    for k, v in done.value["moved"].items():
        assert len(v["to"]) == 3 and broker not in v["to"], k  # a fourth broker took it
    # Moved first, stopped after, unregistered last.
    verbs = [v for v, _ in cluster.calls]
    assert (
        verbs.index("move_replicas") < verbs.index("stop_node") < verbs.index("unregister_broker")
    )
    nem.heal()
    (heal,) = _done(history, "add-broker")
    assert heal.type == "ok" and heal.value["added"][str(broker)]["restored"] == len(held)
    assert cluster.assignments == before and cluster.whole
    assert cluster.wiped == [broker]  # the fresh node's storage was empty


def test_with_no_spare_broker_each_partition_keeps_one_replica_fewer_until_the_heal(
    tmp_path,
) -> None:
    cluster = FakeCluster()
    nem, history = _nemesis(tmp_path, cluster)
    assert nem.apply("remove-broker", pick=0).ok
    (done,) = _done(history, "remove-broker")
    broker = done.value["broker"]
    assert all(len(v["to"]) == 2 for v in done.value["moved"].values())
    assert all(
        r == tuple(n for n in (1, 2, 3) if n != broker) for r in cluster.assignments.values()
    )
    nem.heal()
    assert all(r == (1, 2, 3) for r in cluster.assignments.values()) and cluster.whole


def test_replicas_that_do_not_move_are_info_and_no_broker_goes_down(tmp_path) -> None:
    cluster = FakeCluster(stuck_moves=True)
    nem, history = _nemesis(tmp_path, cluster)
    assert not nem.apply(RemoveBroker(settle_s=0.1), pick=0).ok
    (info,) = _done(history, "remove-broker")
    assert info.type == "info" and "not off broker" in (info.error or "")
    assert not [v for v, _ in cluster.calls if v == "stop_node"]
    assert nem.outstanding == ()


def test_a_broker_still_registered_is_info_and_is_started_with_its_replicas_back(
    tmp_path,
) -> None:
    cluster = FakeCluster(sticky_registration=True)
    nem, history = _nemesis(tmp_path, cluster)
    applied = nem.apply(RemoveBroker(unregister_s=0.1), pick=0)
    assert not applied.ok and nem.outstanding == ()
    (info,) = _done(history, "remove-broker")
    assert info.type == "info" and "still registered" in (info.error or "")
    assert cluster.whole  # started again, and every partition back on three replicas
    assert all(r == (1, 2, 3) for r in cluster.assignments.values())


# --- the spec, the builders, the report, the brokers' environment --------------------


def _spec(faults: list[str], **cluster: object) -> object:
    return build_spec({"nemesis": {"faults": faults}, "cluster": cluster, "duration_s": 60})


def test_the_spec_refuses_voter_change_where_voters_cannot_change() -> None:
    with pytest.raises(
        TrialError, match=r"voter-change needs a KRaft quorum.*cluster.quorum: dynamic"
    ):
        _spec(["voter-change"])
    with pytest.raises(TrialError, match=r"kafka_version is 3.8; choose --kafka-version 3.9 or 4"):
        _spec(["voter-change"], kafka_version="3.8")
    with pytest.raises(TrialError, match=r"cluster.quorum dynamic needs KIP-853.*3.9 or 4"):
        _spec(["voter-change"], kafka_version="3.8", quorum="dynamic")
    with pytest.raises(TrialError, match=r"unset cluster.kafka_image"):
        _spec([], quorum="dynamic", kafka_image="apache/kafka:4.1.0")
    with pytest.raises(TrialError, match=r"cluster.quorum need the Docker kind"):
        _spec([], kind="bootstrap", bootstrap="h:9092", quorum="dynamic")
    with pytest.raises(TrialError, match=r"voter-change, remove-broker cannot act on cluster.kind"):
        build_spec(
            {
                "nemesis": {"faults": ["voter-change", "remove-broker"]},
                "cluster": {"kind": "ssh", "inventory": "nodes.yaml"},
                "duration_s": 60,
            }
        )


def test_the_spec_allows_them_where_they_can_act() -> None:
    for version in ("4", "3.9", "3", "4.1.1"):
        _spec(["voter-change"], quorum="dynamic", kafka_version=version)
    _spec(["remove-broker"])  # any quorum
    _spec(["remove-broker", "voter-change"], quorum="dynamic")


def test_both_are_built_from_the_run_spec() -> None:
    from kafka_trial.nemesis.packages import build_package

    assert build_package("voter-change", NemesisSpec(), "t") == VoterChange()
    assert build_package("remove-broker", NemesisSpec(), "t") == RemoveBroker()


def test_the_report_says_what_each_did() -> None:
    said = effect(
        "voter-remove",
        "ok",
        {"voter": 2, "was_leader": True, "before": [1, 2, 3], "after": [1, 3], "observer": True},
    )
    assert (
        said == "voter 2 (the quorum leader) removed: voters [1, 2, 3] -> [1, 3], an observer now"
    )
    said = effect("voter-add", "ok", {"added": {"2": {"voters": [1, 2, 3], "took_s": 4.5}}})
    assert said == "node 2 a voter again in 4.5 s (voters [1, 2, 3])"
    said = effect(
        "remove-broker",
        "ok",
        {"broker": 3, "moved": {"t/0": {}, "t/1": {}}, "moved_s": 2.0, "registered": [1, 2]},
    )
    assert said == (
        "broker 3 stopped and unregistered after 2 partitions moved off it in 2.0 s; "
        "registered now [1, 2]"
    )
    said = effect(
        "add-broker",
        "ok",
        {"added": {"3": {"registered_after_s": 9.1, "restored": 2, "in_sync": False}}},
    )
    assert said == (
        "fresh broker 3 registered in 9.1 s; 2 partitions moved back to it, not yet in sync"
    )
    voter = {"from": "dir-a", "to": "dir-b", "voters": [1, 2, 3]}
    said = effect(
        "add-broker",
        "ok",
        {"added": {"3": {"registered_after_s": 9, "voter": voter, "restored": 1, "in_sync": True}}},
    )
    assert said == (
        "fresh broker 3 registered in 9 s; its controller a voter as a new replica "
        "(dir-a -> dir-b); 1 partitions moved back to it, in sync"
    )


def _env(spec: ClusterSpec, node: int = 2) -> dict[str, str]:
    return Provisioner(None, spec, None, "r")._broker_env(node, "cid", [9092])  # type: ignore[arg-type]


def test_a_static_quorum_is_configured_as_before() -> None:
    env = _env(ClusterSpec())
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == (
        "1@127.0.0.1:19201,2@127.0.0.1:19202,3@127.0.0.1:19203"
    )
    assert "KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS" not in env
    assert "KT_INITIAL_CONTROLLERS" not in env
    assert "CONTROLLER://" not in env["KAFKA_ADVERTISED_LISTENERS"]


def test_a_dynamic_quorum_bootstraps_and_formats_with_one_voter_set() -> None:
    spec = ClusterSpec(quorum="dynamic")
    provisioner = Provisioner(None, spec, None, "r")  # type: ignore[arg-type]
    envs = {j: provisioner._broker_env(j, "cid", [9092]) for j in (1, 2, 3)}
    ids = provisioner.directory_ids
    assert len(set(ids.values())) == 3 and all(len(d) == 22 for d in ids.values())
    initial = ",".join(f"{j}@127.0.0.1:{19200 + j}:{ids[j]}" for j in (1, 2, 3))
    for j, env in envs.items():
        assert "KAFKA_CONTROLLER_QUORUM_VOTERS" not in env
        assert env["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == (
            "127.0.0.1:19201,127.0.0.1:19202,127.0.0.1:19203"
        )
        assert env["KT_INITIAL_CONTROLLERS"] == initial  # the same on every node
        assert env["KAFKA_ADVERTISED_LISTENERS"].endswith(f",CONTROLLER://127.0.0.1:{19200 + j}")
