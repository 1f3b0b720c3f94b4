"""The warm-cluster holder's rules, with a stand-in cluster (the real reuse runs in
tests/integration/test_claims.py, test_the_claims_campaign_is_a_campaign)."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.harness.warm_cluster import WarmCluster, broker_side


@dataclass
class FakeCluster:
    spec: ClusterSpec
    torn_down: bool = False

    def teardown(self) -> None:
        self.torn_down = True


def test_a_healthy_cluster_serves_the_next_run_with_the_same_broker_side() -> None:
    warm = WarmCluster()
    c = FakeCluster(ClusterSpec())
    assert warm.take(ClusterSpec()) is None  # nothing warm yet
    warm.give_back(c, ["trial", "trial-out"], reusable=True)  # type: ignore[arg-type]
    # A different start-up timeout is not a different broker side.
    assert warm.take(ClusterSpec(startup_timeout_s=30)) is c
    assert not c.torn_down and warm.reused == 1


def test_a_different_broker_side_removes_the_warm_cluster() -> None:
    warm = WarmCluster()
    c = FakeCluster(ClusterSpec())
    warm.give_back(c, ["trial"], reusable=True)  # type: ignore[arg-type]
    changed = ClusterSpec(broker_config={"replica.lag.time.max.ms": "3000"})
    assert broker_side(changed) != broker_side(ClusterSpec())
    assert warm.take(changed) is None
    assert c.torn_down and warm.cluster is None


def test_an_unhealthy_run_gives_its_cluster_back_for_removal_only() -> None:
    warm = WarmCluster()
    c = FakeCluster(ClusterSpec())
    warm.give_back(c, ["trial"], reusable=False)  # type: ignore[arg-type]
    assert c.torn_down and warm.take(ClusterSpec()) is None


def test_topics_of_earlier_runs_are_never_reused() -> None:
    warm = WarmCluster()
    c = FakeCluster(ClusterSpec())
    assert warm.topic_name("trial") == "trial"
    warm.give_back(c, ["trial", "trial-out"], reusable=True)  # type: ignore[arg-type]
    assert warm.topic_name("trial") == "trial-r2"
    warm.give_back(c, ["trial-r2"], reusable=True)  # type: ignore[arg-type]
    assert warm.topic_name("trial") == "trial-r3"
    # An earlier copier's output topic is taken too, and so is a name whose own
    # output topic would be an earlier run's.
    assert warm.topic_name("trial-out") == "trial-out-r2"
    warm.give_back(c, ["x-out"], reusable=True)  # type: ignore[arg-type]
    assert warm.topic_name("x") == "x-r2"


def test_close_removes_the_warm_cluster() -> None:
    warm = WarmCluster()
    c = FakeCluster(ClusterSpec())
    warm.give_back(c, ["trial"], reusable=True)  # type: ignore[arg-type]
    warm.close()
    assert c.torn_down and warm.cluster is None and warm.used_topics == set()
