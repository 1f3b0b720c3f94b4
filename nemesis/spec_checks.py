"""What the nemesis catalog checks of a spec: the names of its packages and toxics,
what a cluster of each kind can fault, and what each package needs of the cluster
and of the fault phase. Registered on the spec models (contracts/spec/owners.py)
when the nemesis package is imported."""

from __future__ import annotations

from kafka_trial.contracts.spec import DegradeSpec, NemesisSpec, RunSpec
from kafka_trial.contracts.spec.owners import owner_check
from kafka_trial.nemesis.catalog import (
    PACKAGES,
    PACKET_TOXICS,
    TOXICS,
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
    shortest = min_duration_s(spec.nemesis)
    if spec.duration_s < shortest:
        # Asked for faults, it would inject none: a VALID verdict would mean nothing.
        raise ValueError(
            f"duration_s={spec.duration_s:g} is too short for nemesis.faults "
            f"({', '.join(faults)}): the first fault starts after "
            f"nemesis.quiet_s={spec.nemesis.quiet_s:g} and lasts "
            f"nemesis.fault_s={spec.nemesis.fault_s:g}, so the shortest duration_s "
            f"that injects every fault is {shortest:g}"
        )
