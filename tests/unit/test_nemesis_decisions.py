"""The nemesis makes the same seeded choices as before the refactor onto cluster
verbs: the targets a pick resolves to, and the grudge a topology builds from it.
The expected values were written by the code before that refactor (HEAD~1 of the
"packages act through cluster verbs" commit), run against the same fake cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.packages import PartitionFault
from kafka_trial.nemesis.targets import NoTarget, resolve

from tests.fakes import FakeCluster

PICKS = (0, 1, 2, 7, 12345)
TARGETS = {
    3: {
        "random": [[2], [1], [1], [2], [2]],
        "minority": [[2], [1], [1], [2], [2]],
        "majority": [[2, 3], [1, 3], [1, 3], [1, 2], [1, 2]],
    },
    5: {
        "random": [[4], [2], [1], [3], [4]],
        "minority": [[4, 5], [1, 2], [1, 5], [2, 3], [1, 4]],
        "majority": [[1, 4, 5], [1, 2, 5], [1, 4, 5], [2, 3, 4], [1, 2, 4]],
    },
}

# (brokers, topology, pick, grudge: node -> the nodes it no longer hears)
GRUDGES = [
    (5, "isolate-random", 0, {1: [4], 2: [4], 3: [4], 4: [1, 2, 3, 5], 5: [4]}),
    (5, "isolate-random", 7, {1: [3], 2: [3], 3: [1, 2, 4, 5], 4: [3], 5: [3]}),
    (5, "isolate-leader", 0, {1: [2, 3, 4, 5], 2: [1], 3: [1], 4: [1], 5: [1]}),
    (5, "isolate-controller", 7, {1: [2, 3, 4, 5], 2: [1], 3: [1], 4: [1], 5: [1]}),
    (5, "halves", 0, {1: [4, 5], 2: [4, 5], 3: [4, 5], 4: [1, 2, 3], 5: [1, 2, 3]}),
    (5, "halves", 7, {1: [2, 3], 2: [1, 4, 5], 3: [1, 4, 5], 4: [2, 3], 5: [2, 3]}),
    (5, "majorities-ring", 0, {1: [4, 5], 2: [1, 5], 3: [1, 2], 4: [2, 3], 5: [3, 4]}),
    (5, "majorities-ring", 7, {1: [2, 4], 2: [3, 5], 3: [1, 5], 4: [2, 3], 5: [1, 4]}),
    (5, "bridge", 0, {1: [2, 3], 2: [1, 5], 3: [1, 5], 5: [2, 3]}),
    (5, "bridge", 7, {1: [2, 4], 2: [1, 5], 4: [1, 5], 5: [2, 4]}),
    (5, "one-way", 0, {5: [4]}),
    (5, "one-way", 7, {2: [3]}),
    (3, "halves", 7, {1: [2], 2: [1, 3], 3: [2]}),
    (3, "majorities-ring", 7, {1: [2], 2: [3], 3: [1]}),
    (3, "one-way", 7, {1: [2]}),
]


@pytest.mark.parametrize("brokers", sorted(TARGETS))
def test_seeded_roles_pick_the_same_brokers_as_before(brokers: int) -> None:
    cluster = FakeCluster(brokers=brokers)
    for role, want in TARGETS[brokers].items():
        assert [resolve(role, cluster, "trial", 0, p) for p in PICKS] == want, role


def test_state_roles_follow_the_cluster_as_it_is_when_the_fault_starts() -> None:
    cluster = FakeCluster(brokers=3)
    leader = cluster.leaders[0]
    assert resolve("leader", cluster, "trial", 0, 99) == [leader]
    assert resolve("followers", cluster, "trial", 0, 99) == sorted({1, 2, 3} - {leader})
    assert resolve("controller", cluster, "trial", 0, 99) == [cluster.controller]
    cluster.kill_node(leader)
    assert resolve("leader", cluster, "trial", 0, 99) != [leader]
    cluster.kill_node(cluster.controller)
    cluster.kill_node(cluster.controller)
    with pytest.raises(NoTarget):
        resolve("controller", cluster, "trial", 0, 99)
    with pytest.raises(ValueError, match="unknown target role"):
        resolve("everyone", FakeCluster(), "trial", 0, 0)


@pytest.mark.parametrize(("brokers", "topology", "pick", "grudge"), GRUDGES)
def test_topologies_build_the_same_grudge_as_before(
    tmp_path: Path, brokers: int, topology: str, pick: int, grudge: dict[int, list[int]]
) -> None:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)  # read while open
    Nemesis(FakeCluster(brokers=brokers), history).apply(
        PartitionFault("trial", 0, (topology,)), pick
    )
    done = read_history(history.path).ops[1]
    assert done.type == "ok"
    assert {int(k): v for k, v in done.value["grudge"].items()} == grudge
