"""One warm cluster kept between the runs of a campaign.

Starting a 3-node cluster and getting its topic in sync costs ~11 s, and tearing it
down a few more; a campaign of many short runs spends a large share of its time on
that. A run may take the warm cluster when its broker side is the same: the same
ClusterSpec (version, images, broker count and config, lanes, ports). It gets fresh
topics and fresh client ids (group ids, transactional ids), so nothing of an earlier
run reaches it except the brokers themselves, which the earlier run left healed and
healthy: a run that ended unhealthy, with an error or interrupted gives its cluster
back for removal, never for reuse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.contracts.log import log


def broker_side(spec: ClusterSpec) -> str:
    """What makes two runs' clusters interchangeable (a timeout is not the broker's)."""
    return spec.model_copy(update={"startup_timeout_s": 0.0}).model_dump_json()


@dataclass
class WarmCluster:
    """Holds at most one started cluster between runs. `take` hands it to a run that
    fits it (removing it if the run does not); `give_back` keeps or removes it."""

    cluster: Cluster | None = None
    key: str = ""
    runs: int = 0  # runs the held cluster has served
    used_topics: set[str] = field(default_factory=set)
    started: int = 0  # clusters started for runs of this holder
    reused: int = 0  # runs that got a warm cluster

    def take(self, spec: ClusterSpec) -> Cluster | None:
        if self.cluster is not None and self.key != broker_side(spec):
            log("the next run's broker side differs: removing the warm cluster")
            self.close()
        c, self.cluster = self.cluster, None
        if c is not None:
            self.reused += 1
        return c

    def note_started(self) -> None:
        self.started += 1

    def topic_name(self, wanted: str) -> str:
        """`wanted`, or with a suffix if an earlier run on the warm cluster had it
        (its records are still there, and the new run must not read them)."""
        name, n = wanted, 1
        while name in self.used_topics or f"{name}-out" in self.used_topics:
            n += 1
            name = f"{wanted}-r{n}"
        return name

    def give_back(self, cluster: Cluster, topics: list[str], reusable: bool) -> None:
        if not reusable:
            cluster.teardown()
            self.used_topics.clear()
            self.runs = 0
            return
        self.cluster, self.key = cluster, broker_side(cluster.spec)
        self.used_topics.update(topics)
        self.runs += 1

    def close(self) -> None:
        c, self.cluster = self.cluster, None
        self.used_topics.clear()
        self.runs = 0
        if c is not None:
            c.teardown()
