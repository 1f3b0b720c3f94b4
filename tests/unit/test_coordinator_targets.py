"""The coordinator roles: Kafka's placement of an id on its internal topic (Java's
String.hashCode, Kafka's Utils.abs), and every role-aimed fault package hitting the
coordinator of the run's own ids on an in-memory cluster, recording how it was found,
or completing `info` with the reason. Kafka itself is asked in
tests/integration/test_faults.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka_trial.cluster.control import PartitionState
from kafka_trial.contracts.group_ids import GroupIds
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.transactional_ids import TransactionalIds
from kafka_trial.harness.spec import RunSpec
from kafka_trial.nemesis import targets
from kafka_trial.nemesis.catalog import PACKAGES, ROLE_PACKAGES
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.packages import build_package
from kafka_trial.nemesis.settings import PARTITION_TOPOLOGIES, NemesisSpec
from kafka_trial.nemesis.targets import aim, coordinator_partition, java_string_hash, resolve
from pydantic import ValidationError

from tests.fakes import FakeCluster

# Java's own answers (OpenJDK 17's String.hashCode; Kafka 3.9.2's Utils.abs, % 50).
JAVA = [
    ("", 0, 0),
    ("a", 97, 47),
    ("hello", 99162322, 22),
    ("hello world, this overflows", 161437415, 15),  # wraps past 2^31 on the way
    ("kafka-trial-group-abc", -850819722, 22),  # negative
    ("kt-run-0", -1229457398, 48),
    ("polygenelubricants", -(2**31), 0),  # Integer.MIN_VALUE: Utils.abs makes it 0
    ("été😀", 220632961, 11),  # outside the BMP: two UTF-16 code units
    ("Aa", 2112, 12),
    ("BB", 2112, 12),
]


@pytest.mark.parametrize("text,hash_code,partition", JAVA)
def test_the_hash_and_the_partition_are_java_s_and_kafka_s(
    text: str, hash_code: int, partition: int
) -> None:
    assert java_string_hash(text) == hash_code
    assert coordinator_partition(text, 50) == partition
    assert coordinator_partition(text, 1) == 0


# The run "run"'s ids, and where Kafka puts them among 50 partitions (Java's answers).
TXN_ID, TXN_PART = "kt-run-0", 48
TXN_ID_1, TXN_PART_1 = "kt-run-1", 47
COPIER_TXN_ID = "kt-run-copier-0"  # 47 too: it shares kt-run-1's coordinator
GROUP_ID, GROUP_PART = "kafka-trial-group-run", 35
TXN_BROKER, GROUP_BROKER, CONTROLLER = 3, 2, 2  # broker 1 leads trial/0 and the rest


@dataclass
class CoordinatedCluster(FakeCluster):
    """The fake with Kafka's two internal topics: 50 partitions each, led by broker 1
    but for the partitions the run's ids sit on. Leadership moves off a broker that
    goes down, as it does for the run's topic."""

    internal: dict[str, dict[int, int | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        txn = dict.fromkeys(range(50), 1) | {TXN_PART: TXN_BROKER, TXN_PART_1: 2}
        offsets = dict.fromkeys(range(50), 1) | {GROUP_PART: GROUP_BROKER}
        self.internal = {targets.TXN_STATE: txn, targets.OFFSETS: offsets}
        self.controller = CONTROLLER

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        if topic not in self.internal:
            return super().partitions(topic, timeout_s)
        every = tuple(self.node_ids)
        return {p: PartitionState(b, every, every) for p, b in self.internal[topic].items()}

    def _down(self, node: int, how: str) -> None:
        super()._down(node, how)
        live = [n for n in self._live() if n != node]
        for leaders in self.internal.values():
            for p, b in leaders.items():
                if b == node:
                    leaders[p] = live[0] if live else b


@pytest.fixture(autouse=True)
def own_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registries of this test's own: nothing another test left registered counts."""
    monkeypatch.setattr(targets, "TXN_IDS", TransactionalIds())
    monkeypatch.setattr(targets, "GROUP_IDS", GroupIds())
    monkeypatch.setattr(targets, "LAG_WAIT_S", 0)


@pytest.fixture
def run_ids() -> None:
    """The ids a run's transactional producer and group consumer register."""
    targets.TXN_IDS.register(TXN_ID, "producer", {})
    targets.GROUP_IDS.register(GROUP_ID, "consumer")


def nemesis(tmp_path: Path, cluster: FakeCluster, **spec) -> tuple[Nemesis, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)  # read while open
    settings = NemesisSpec(fault_s=0.01, quiet_s=0.01, **spec)
    return Nemesis(cluster, history, settings, "trial"), history


EXPECTED = {"txn-coordinator": TXN_BROKER, "group-coordinator": GROUP_BROKER}
FOUND = {
    "txn-coordinator": {
        "role": "txn-coordinator",
        "topic": "__transaction_state",
        "partitions": 50,
        "id": TXN_ID,
        "workload": "producer",
        "partition": TXN_PART,
        "broker": TXN_BROKER,
        "ids": {TXN_ID: TXN_PART},
    },
    "group-coordinator": {
        "role": "group-coordinator",
        "topic": "__consumer_offsets",
        "partitions": 50,
        "id": GROUP_ID,
        "workload": "consumer",
        "partition": GROUP_PART,
        "broker": GROUP_BROKER,
        "ids": {GROUP_ID: GROUP_PART},
    },
}
AIMED = sorted(ROLE_PACKAGES)
ROLES = ("controller", "txn-coordinator", "group-coordinator")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("package", AIMED)
def test_every_role_aimed_package_hits_the_role_s_broker_and_records_it(
    tmp_path: Path, run_ids: None, package: str, role: str
) -> None:
    cluster = CoordinatedCluster()
    nem, history = nemesis(tmp_path, cluster, targets=(role,))
    applied = nem.apply(package, pick=3)
    assert applied.ok, read_history(history.path).ops
    done = read_history(history.path).ops[1]
    assert done.type == "ok" and done.value["brokers"] == [EXPECTED.get(role, CONTROLLER)]
    if role in FOUND:
        assert done.value["coordinator"] == FOUND[role]
    else:
        assert "coordinator" not in done.value
    nem.heal_all()
    assert cluster.whole


@pytest.mark.parametrize("role", ROLES)
def test_isolating_a_role_cuts_its_broker_off_and_records_it(
    tmp_path: Path, run_ids: None, role: str
) -> None:
    cluster = CoordinatedCluster()
    nem, history = nemesis(tmp_path, cluster, topologies=(f"isolate-{role}",))
    assert nem.apply("partition", pick=5).ok
    done = read_history(history.path).ops[1].value
    broker = EXPECTED.get(role, CONTROLLER)
    assert done["isolated"] == [broker]
    assert set(done["grudge"][str(broker)]) == {1, 2, 3} - {broker}
    assert done.get("coordinator") == FOUND.get(role)
    nem.heal()
    assert cluster.whole


@pytest.mark.parametrize("package", [*AIMED, "partition"])
@pytest.mark.parametrize("role", ["txn-coordinator", "group-coordinator"])
def test_without_the_run_s_ids_a_coordinator_fault_is_info(
    tmp_path: Path, package: str, role: str
) -> None:
    cluster = CoordinatedCluster()
    nem, history = nemesis(tmp_path, cluster, targets=(role,), topologies=(f"isolate-{role}",))
    applied = nem.apply(package)
    last = read_history(history.path).ops[-1]
    assert not applied.ok and applied.heal is None and last.type == "info"
    assert "no client of the run holds a" in (last.error or "")
    assert cluster.calls == [] and cluster.whole  # nothing was done to any broker


@pytest.mark.parametrize("role", ["txn-coordinator", "group-coordinator"])
def test_before_the_internal_topic_exists_a_coordinator_fault_is_info(
    tmp_path: Path, run_ids: None, role: str
) -> None:
    cluster = CoordinatedCluster()
    cluster.internal.clear()
    nem, history = nemesis(tmp_path, cluster, targets=(role,))
    assert not nem.apply("kill").ok
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "does not exist yet" in (last.error or "")
    assert cluster.calls == []


def test_a_leaderless_coordinator_partition_is_info_and_names_the_id(run_ids: None) -> None:
    cluster = CoordinatedCluster()
    cluster.internal[targets.TXN_STATE][TXN_PART] = None
    with pytest.raises(targets.NoTarget, match=f"{TXN_ID} on __transaction_state-{TXN_PART}"):
        resolve("txn-coordinator", cluster, "trial", 0, 0)


def test_the_pick_chooses_among_the_run_s_ids_and_records_all_a_broker_holds(
    run_ids: None,
) -> None:
    targets.TXN_IDS.register(TXN_ID_1, "producer", {})
    targets.TXN_IDS.register(COPIER_TXN_ID, "copier", {})
    cluster = CoordinatedCluster()
    aims = [aim("txn-coordinator", cluster, "trial", 0, p) for p in range(30)]
    assert aims == [aim("txn-coordinator", cluster, "trial", 0, p) for p in range(30)]
    by_broker = {a.brokers[0]: a.coordinator["ids"] for a in aims}
    # Broker 1 leads 48 of the 50 partitions, but no id of the run is on them.
    assert by_broker == {
        TXN_BROKER: {TXN_ID: TXN_PART},
        2: {COPIER_TXN_ID: TXN_PART_1, TXN_ID_1: TXN_PART_1},
    }


def test_a_killed_coordinator_moves_and_the_next_fault_follows_it(
    tmp_path: Path, run_ids: None
) -> None:
    cluster = CoordinatedCluster()
    nem, history = nemesis(tmp_path, cluster, targets=("txn-coordinator",))
    assert nem.apply("kill").ok
    assert nem.apply("pause").ok  # the partition's new leader, looked up anew
    done = [o for o in read_history(history.path).ops if o.type == "ok"]
    assert [d.value["brokers"] for d in done] == [[TXN_BROKER], [1]]
    assert done[1].value["coordinator"]["broker"] == 1


def test_a_group_is_live_until_its_last_member_leaves() -> None:
    groups = GroupIds()
    groups.register("g", "consumer")
    groups.register("g", "consumer")
    groups.register("c", "copier")
    groups.unregister("g")
    assert groups.live() == [("c", "copier"), ("g", "consumer")]
    groups.unregister("g")
    groups.unregister("g")  # one too many takes nothing else with it
    assert groups.live() == [("c", "copier")]


def test_the_role_packages_are_those_whose_builders_pass_the_roles() -> None:
    spec = NemesisSpec(targets=("controller", "leader"))
    # slow-follower is a Degrade too, whose follower-replication links ignore the roles.
    for name in set(PACKAGES) - {"slow-follower"}:
        pkg = build_package(name, spec, "trial")
        assert (getattr(pkg, "roles", None) == spec.targets) == (name in ROLE_PACKAGES), name


def test_the_default_rotation_keeps_its_topologies_and_the_new_ones_are_words() -> None:
    assert NemesisSpec().topologies == (
        "isolate-random",
        "isolate-leader",
        "isolate-controller",
        "halves",
        "majorities-ring",
        "bridge",
        "one-way",
    )
    assert {"isolate-txn-coordinator", "isolate-group-coordinator"} <= set(PARTITION_TOPOLOGIES)


def _spec(**over) -> RunSpec:
    return RunSpec.model_validate({"duration_s": 60, **over})


@pytest.mark.parametrize(
    "nemesis_over,message",
    [
        (
            {"faults": ["kill"], "targets": ["txn-coordinator"]},
            "nemesis.targets aims at the txn-coordinator of the run's own transactional.ids",
        ),
        (
            {"faults": ["partition"], "topologies": ["isolate-group-coordinator"]},
            "nemesis.topologies aims at the group-coordinator of the run's own group.ids",
        ),
    ],
)
def test_a_coordinator_role_without_ids_to_follow_is_refused(nemesis_over, message) -> None:
    with pytest.raises(ValidationError, match=message):
        _spec(nemesis=nemesis_over)


def test_a_coordinator_role_is_accepted_where_the_run_holds_its_ids() -> None:
    _spec(
        producer={"transactional": True},
        consumer={"workers": 2, "mode": "subscribe"},
        nemesis={
            "faults": ["kill", "packet", "partition"],
            "targets": ["txn-coordinator", "group-coordinator", "controller"],
            "topologies": ["isolate-txn-coordinator", "isolate-group-coordinator"],
        },
    )
    _spec(copier={"workers": 1}, nemesis={"faults": ["pause"], "targets": ["txn-coordinator"]})
    # Unused, the role is no promise: kill-leader aims at the leader whatever targets say.
    _spec(nemesis={"faults": ["kill-leader"], "targets": ["group-coordinator"]})
