"""What the nemesis catalog checks of a spec: the names of its packages and toxics,
what a cluster of each kind can fault, and what each package needs of the cluster
and of the fault phase. Registered on the spec models (contracts/spec/owners.py)
when the nemesis package is imported."""

from __future__ import annotations

from kafka_trial.contracts.spec import DegradeSpec, NemesisSpec, RunSpec
from kafka_trial.contracts.spec.cluster import MIN_DYNAMIC_QUORUM, older_than
from kafka_trial.contracts.spec.owners import owner_check
from kafka_trial.nemesis.catalog import (
    COORDINATOR_ROLES,
    PACKAGES,
    PACKET_TOXICS,
    ROLE_PACKAGES,
    TOXICS,
    TXN_PACKAGES,
    kind_refusal,
    toxic_refusal,
)
from kafka_trial.nemesis.schedule import min_duration_s


@owner_check(DegradeSpec, "nemesis")
def _known_toxic(spec: DegradeSpec) -> None:
    if spec.type not in TOXICS + PACKET_TOXICS:
        known = ", ".join(TOXICS + PACKET_TOXICS)
        raise ValueError(f"unknown toxic {spec.type}; choose from {known}")


@owner_check(NemesisSpec, "nemesis")
def _known_packages(spec: NemesisSpec) -> None:
    unknown = [f for f in spec.faults if f not in PACKAGES]
    if unknown:
        raise ValueError(f"unknown nemesis {', '.join(unknown)}; choose from {', '.join(PACKAGES)}")


@owner_check(RunSpec, "nemesis")
def _kind_can_make_the_faults(spec: RunSpec) -> None:
    kind = spec.cluster.kind
    refused = {f: kind_refusal(f, kind) for f in spec.nemesis.faults}
    refused = {f: why for f, why in refused.items() if why}
    if refused:
        first, why = next(iter(refused.items()))
        raise ValueError(
            f"nemesis.faults {', '.join(refused)} cannot act on cluster.kind {kind} "
            f"({first}: {why}); leave them out (--nemesis none runs no fault)"
        )
    uses_toxic = {"degrade", "slow-follower"} & set(spec.nemesis.faults)
    why_not = toxic_refusal(spec.nemesis.degrade.type, kind) if uses_toxic else None
    if why_not:
        raise ValueError(f"nemesis.degrade.type {spec.nemesis.degrade.type}: {why_not}")
    if kind == "ssh" and "clock" in spec.nemesis.faults and spec.nemesis.clock.strobe_ms:
        raise ValueError(
            "nemesis.clock.strobe_ms needs the Docker kind's libfaketime; on cluster.kind "
            "ssh a clock fault is a bump (strobe_ms: 0)"
        )
    if kind == "ssh" and "reassign" in spec.nemesis.faults and spec.nemesis.reassign.throttle_bytes:
        # A throttle's rates are broker configs of the user's cluster, which a run
        # killed before its heal would leave set, and which only the user may know
        # to be theirs: `kafka-trial heal --inventory` could not tell them apart.
        raise ValueError(
            "nemesis.reassign.throttle_bytes on cluster.kind ssh: the replication throttle "
            "is the brokers' own config, which a crashed run would leave on your cluster; "
            "reassign unthrottled there (throttle_bytes: 0)"
        )
    if kind != "docker" and spec.app.image is not None:
        raise ValueError(
            f"app.image runs on the Docker kind's network; on cluster.kind {kind} give "
            "the app as a command (--app-command)"
        )


@owner_check(RunSpec, "nemesis")
def _cluster_has_what_the_faults_need(spec: RunSpec) -> None:
    faults = spec.nemesis.faults
    docker = spec.cluster.kind == "docker"
    on_writeback = [f for f in faults if PACKAGES[f].storage == "writeback"]
    if docker and on_writeback and spec.cluster.storage != "writeback":
        # Plain volumes keep what a killed broker wrote: the fault would do nothing.
        raise ValueError(
            f"nemesis.faults {', '.join(on_writeback)} act on the brokers' write-back "
            "filesystem, which cluster.storage=plain has not; set cluster.storage: "
            "writeback"
        )
    on_faketime = [f for f in faults if PACKAGES[f].clock == "faketime"]
    if docker and on_faketime and spec.cluster.clock != "faketime":
        raise ValueError(
            f"nemesis.faults {', '.join(on_faketime)} act on the brokers' clocks, which "
            "cluster.clock=real leaves to the host; set cluster.clock: faketime"
        )
    _quorum_can_change(spec)
    shortest = min_duration_s(spec.nemesis)
    if spec.nemesis.steps and spec.duration_s < shortest:
        raise ValueError(
            f"duration_s={spec.duration_s:g} ends the fault phase before nemesis.steps' "
            f"last step at {shortest:g} s; set duration_s to at least {shortest:g}"
        )
    if spec.duration_s < shortest:
        # Asked for faults, it would inject none: a VALID verdict would mean nothing.
        raise ValueError(
            f"duration_s={spec.duration_s:g} is too short for nemesis.faults "
            f"({', '.join(faults)}): the first fault starts after "
            f"nemesis.quiet_s={spec.nemesis.quiet_s:g} and lasts "
            f"nemesis.fault_s={spec.nemesis.fault_s:g}, so the shortest duration_s "
            f"that injects every fault is {shortest:g}"
        )


def _quorum_can_change(spec: RunSpec) -> None:
    on_dynamic = [f for f in spec.nemesis.faults if PACKAGES[f].quorum == "dynamic"]
    if not on_dynamic or spec.cluster.kind != "docker":
        return
    version = spec.cluster.kafka_version
    if older_than(version, MIN_DYNAMIC_QUORUM):
        # Before KIP-853 no quorum changes its voters: the fault could only end info.
        raise ValueError(
            f"nemesis.faults: {', '.join(on_dynamic)} needs a KRaft quorum whose voters can "
            f"change (KIP-853, Kafka {'.'.join(map(str, MIN_DYNAMIC_QUORUM))}+), and "
            f"cluster.kafka_version is {version}; choose --kafka-version 3.9 or 4 and set "
            "cluster.quorum: dynamic"
        )
    if spec.cluster.quorum != "dynamic":
        raise ValueError(
            f"nemesis.faults: {', '.join(on_dynamic)} needs a KRaft quorum whose voters can "
            "change, and a static quorum (controller.quorum.voters) has a fixed set; set "
            "cluster.quorum: dynamic"
        )


@owner_check(RunSpec, "nemesis")
def _a_transactional_client_to_fault(spec: RunSpec) -> None:
    wanted = [f for f in spec.nemesis.faults if f in TXN_PACKAGES]
    if wanted and not spec.producer.transactional and not spec.copier.workers:
        # It would find no id to take over and end info every time: a fault in name only.
        raise ValueError(
            f"nemesis.faults {', '.join(wanted)} takes over the transactional.id of a "
            "transactional producer or copier, and this run runs neither; set "
            "producer.transactional: true, or copier.workers to 1 or more"
        )


def _aimed_roles(spec: RunSpec) -> dict[str, str]:
    """The roles the run's faults will aim at -> where the spec names each."""
    n = spec.nemesis
    aiming = set(n.faults) & ROLE_PACKAGES
    if n.degrade.links == "follower-replication":
        aiming.discard("degrade")  # it aims at a follower's fetch link, whatever the role
    out = {r: "nemesis.targets" for r in n.targets} if aiming else {}
    if "partition" in n.faults:
        out |= {t.removeprefix("isolate-"): "nemesis.topologies" for t in n.topologies}
    return out


def _holders(spec: RunSpec, role: str) -> bool:
    """Whether a client of the run holds an id of the kind a coordinator role needs."""
    if role == "txn-coordinator":
        return spec.producer.transactional or spec.copier.workers > 0
    subscribed = spec.consumer.mode == "subscribe" and spec.consumer.workers > 0
    return subscribed or spec.copier.workers > 0 or spec.app.present


@owner_check(RunSpec, "nemesis")
def _a_coordinator_role_has_ids_to_follow(spec: RunSpec) -> None:
    for role, where in _aimed_roles(spec).items():
        if role in COORDINATOR_ROLES and not _holders(spec, role):
            # Every fault aimed at it would end info: no id of the run to find it by.
            how = (
                "producer.transactional: true, or copier.workers to 1 or more"
                if role == "txn-coordinator"
                else "consumer.mode: subscribe with consumer.workers, copier.workers, or an app"
            )
            raise ValueError(
                f"{where} aims at the {role} of the run's own {COORDINATOR_ROLES[role]}s, "
                f"and no client of this run holds one; set {how}, or leave it out"
            )
