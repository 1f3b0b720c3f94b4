"""Targets chosen by role at the moment a fault starts.

`pick` is the seeded number from the schedule, so a replay makes the same random
choices; roles that depend on cluster state (leader, controller) are resolved
against the cluster as it is right then.
"""

from __future__ import annotations

import random
import time

from kafka_trial.cluster.control import ClusterControl
from kafka_trial.nemesis.catalog import ROLES

TXN_STATE = "__transaction_state"
OFFSETS = "__consumer_offsets"
# Internal topic -> the role whose brokers lead its partitions.
COORDINATORS = {"txn-coordinator": TXN_STATE, "group-coordinator": OFFSETS}


# How often, and how far apart, a role is looked up again when the answer lacks the
# run's topic altogether.
LAG_LOOKS = 4
LAG_WAIT_S = 0.5


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
    if role in COORDINATORS:
        # The brokers that lead an internal topic's partitions coordinate what it
        # holds: transactions, or groups and their offsets (one broker, with the
        # topic's num.partitions=1 that the presets aiming at them set).
        internal = COORDINATORS[role]
        leaders = {s.leader for s in cluster.partitions(internal).values()} - {None}
        if not leaders:
            raise NoTarget(f"no leader known for {internal} (no transaction or group yet?)")
        return sorted(leaders)  # type: ignore[arg-type]
    parts = cluster.partitions(topic)
    for _ in range(LAG_LOOKS):
        # The run created its topic, so an answer without it comes from a broker whose
        # metadata has not caught up (KRaft brokers apply the controller's records each
        # in its own time): right after the topic was seen in sync, a kill-leader found
        # "no leader" 84 ms in. A partition without a leader is an answer: no retry.
        if parts:
            break
        time.sleep(LAG_WAIT_S)
        parts = cluster.partitions(topic)
    st = parts.get(partition)
    if st is None or st.leader is None:
        raise NoTarget(f"no leader known for {topic}/{partition}")
    if role == "leader":
        return [st.leader]
    if role == "followers":
        return sorted(r for r in st.replicas if r != st.leader)
    raise ValueError(f"unknown target role {role!r}; choose from {', '.join(ROLES)}")
