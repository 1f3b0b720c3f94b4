"""Targets chosen by role at the moment a fault starts.

`pick` is the seeded number from the schedule, so a replay makes the same random
choices; roles that depend on cluster state (leader, controller) are resolved
against the cluster as it is right then.
"""

from __future__ import annotations

import random

from kafka_trial.cluster.control import ClusterControl
from kafka_trial.nemesis.catalog import ROLES

TXN_STATE = "__transaction_state"


class NoTarget(RuntimeError):
    pass


def resolve(role: str, cluster: ClusterControl, topic: str, partition: int, pick: int) -> list[int]:
    rng = random.Random(pick)
    nodes = sorted(cluster.node_ids)
    n = len(nodes)
    if role == "random":
        return [rng.choice(nodes)]
    if role == "all":
        return nodes
    if role == "minority":
        return sorted(rng.sample(nodes, (n - 1) // 2))
    if role == "majority":
        return sorted(rng.sample(nodes, n // 2 + 1))
    if role == "controller":
        c = cluster.active_controller()
        if c is None:
            raise NoTarget("no active KRaft controller known")
        return [c]
    if role == "txn-coordinator":
        # The brokers that lead __transaction_state partitions coordinate transactions
        # (one, with transaction.state.log.num.partitions=1).
        leaders = {s.leader for s in cluster.partitions(TXN_STATE).values()} - {None}
        if not leaders:
            raise NoTarget(f"no leader known for {TXN_STATE} (no transaction yet?)")
        return sorted(leaders)  # type: ignore[arg-type]
    st = cluster.partitions(topic).get(partition)
    if st is None or st.leader is None:
        raise NoTarget(f"no leader known for {topic}/{partition}")
    if role == "leader":
        return [st.leader]
    if role == "followers":
        return sorted(r for r in st.replicas if r != st.leader)
    raise ValueError(f"unknown target role {role!r}; choose from {', '.join(ROLES)}")
