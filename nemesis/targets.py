"""Targets chosen by role at the moment a fault starts.

`pick` is the seeded number from the schedule, so a replay makes the same random
choices; roles that depend on cluster state (leader, controller, a coordinator) are
resolved against the cluster as it is right then.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from kafka_trial.cluster.control import ClusterControl, PartitionState
from kafka_trial.contracts.group_ids import GROUP_IDS
from kafka_trial.contracts.transactional_ids import TXN_IDS
from kafka_trial.nemesis.catalog import COORDINATOR_ROLES, ROLES

TXN_STATE = "__transaction_state"
OFFSETS = "__consumer_offsets"
# A coordinator role -> the internal topic whose partition leaders coordinate what it
# holds: transactions, or groups and their offsets.
COORDINATORS = {"txn-coordinator": TXN_STATE, "group-coordinator": OFFSETS}
_INT_MIN = -(1 << 31)


# How often, and how far apart, a role is looked up again when the answer lacks the
# run's topic altogether.
LAG_LOOKS = 4
LAG_WAIT_S = 0.5


class NoTarget(RuntimeError):
    pass


@dataclass(frozen=True)
class Aim:
    """The brokers a role names right now; for a coordinator role, how they were
    found (`coordinator`: the id, its internal partition, that partition's leader)."""

    brokers: list[int]
    coordinator: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """What a fault's completion adds about the choice."""
        return {"coordinator": self.coordinator} if self.coordinator else {}


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: 31*h + c over the UTF-16 code units, as a signed
    32-bit int (a character outside the BMP counts as its two surrogates)."""
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The internal topic's partition Kafka keeps a transactional.id or group.id on:
    `Utils.abs(key.hashCode()) % partitions` (TransactionStateManager.partitionFor,
    GroupCoordinatorService.partitionFor). Kafka's Utils.abs maps Integer.MIN_VALUE,
    which has no positive int, to 0."""
    h = java_string_hash(key)
    return (0 if h == _INT_MIN else abs(h)) % partitions


def _looked_up(cluster: ClusterControl, topic: str) -> dict[int, PartitionState]:
    parts = cluster.partitions(topic)
    for _ in range(LAG_LOOKS):
        # The topic exists (the run created it, or a client of the run found its
        # coordinator), so an answer without it comes from a broker whose metadata
        # has not caught up (KRaft brokers apply the controller's records each in its
        # own time): right after the topic was seen in sync, a kill-leader found "no
        # leader" 84 ms in. A partition without a leader is an answer: no retry.
        if parts:
            break
        time.sleep(LAG_WAIT_S)
        parts = cluster.partitions(topic)
    return parts


def _live_ids(role: str) -> list[tuple[str, str]]:
    """(id, workload) of the run's clients that hold one now, in the ids' order."""
    if role == "txn-coordinator":
        return [(c.transactional_id, c.workload) for c in TXN_IDS.live()]
    return GROUP_IDS.live()


def _coordinator(role: str, cluster: ClusterControl, pick: int) -> Aim:
    """The broker that coordinates one of the run's own ids (the pick's choice): the
    leader of the internal partition the id hashes to. Kafka's default 50 partitions
    spread over every broker, so the leaders of the whole topic would be all of them."""
    internal, key = COORDINATORS[role], COORDINATOR_ROLES[role]
    ids = dict(_live_ids(role))
    if not ids:
        raise NoTarget(f"no client of the run holds a {key} now: no {role} to aim at")
    parts = _looked_up(cluster, internal)
    if not parts:
        raise NoTarget(f"{internal} does not exist yet: no client has found its {role}")
    n = len(parts)
    if sorted(parts) != list(range(n)):
        raise NoTarget(f"the metadata of {internal} lacks partitions: {sorted(parts)}")
    placed = {i: coordinator_partition(i, n) for i in ids}
    led = {i: b for i, p in placed.items() if (b := parts[p].leader) is not None}
    if not led:
        where = ", ".join(f"{i} on {internal}-{p}" for i, p in placed.items())
        raise NoTarget(f"no leader known for the run's {key}s ({where})")
    chosen = random.Random(pick).choice(sorted(led))
    broker = led[chosen]
    found: dict[str, Any] = {
        "role": role,
        "topic": internal,
        "partitions": n,
        "id": chosen,
        "workload": ids[chosen],
        "partition": placed[chosen],
        "broker": broker,
        # Every id of the run the broker coordinates, each on its partition: the fault
        # hits all of them, not only the one chosen.
        "ids": {i: placed[i] for i in sorted(led) if led[i] == broker},
    }
    if leaderless := {i: placed[i] for i in sorted(set(placed) - set(led))}:
        found["leaderless"] = leaderless
    return Aim([broker], found)


def aim(role: str, cluster: ClusterControl, topic: str, partition: int, pick: int) -> Aim:
    """The brokers `role` names now, and how a coordinator was found."""
    rng = random.Random(pick)
    nodes = sorted(cluster.node_ids)
    n = len(nodes)
    if role == "random":
        return Aim([rng.choice(nodes)])
    if role == "all":
        return Aim(nodes)
    if role == "minority":
        return Aim(sorted(rng.sample(nodes, (n - 1) // 2)))
    if role == "majority":
        return Aim(sorted(rng.sample(nodes, n // 2 + 1)))
    if role == "controller":
        c = cluster.active_controller()
        if c is None:
            raise NoTarget("no active KRaft controller known")
        return Aim([c])
    if role in COORDINATORS:
        return _coordinator(role, cluster, pick)
    if role not in ("leader", "followers"):
        raise ValueError(f"unknown target role {role!r}; choose from {', '.join(ROLES)}")
    st = _looked_up(cluster, topic).get(partition)
    if st is None or st.leader is None:
        raise NoTarget(f"no leader known for {topic}/{partition}")
    if role == "leader":
        return Aim([st.leader])
    return Aim(sorted(r for r in st.replicas if r != st.leader))


def resolve(role: str, cluster: ClusterControl, topic: str, partition: int, pick: int) -> list[int]:
    """The brokers `role` names now (`aim` without how they were found)."""
    return aim(role, cluster, topic, partition, pick).brokers
