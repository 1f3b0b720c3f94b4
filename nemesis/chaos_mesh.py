"""A run's fault schedule as Chaos Mesh resources: the same faults, on paper, for a
Kafka cluster on Kubernetes (docs/kubernetes.md).

Pure data in, pure data out: nothing here talks to a cluster. Chaos Mesh starts a
resource the moment it is applied, so each resource carries its start on the run's
clock (`kafka-trial/at-s`, from schedule.json) and an applier applies it then;
`workflow()` is the form Chaos Mesh times by itself.

Chaos Mesh picks pods by labels at random, where kafka-trial resolves a role (the
leader, the controller) against the live cluster when the fault starts: a fault
aimed by role becomes one random broker, and the resource says so in its
`kafka-trial/approximation` annotation. A package with no faithful equivalent is
not emitted at all; it comes back in `skipped` with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_trial.nemesis.catalog import PACKAGES
from kafka_trial.nemesis.schedule import Step
from kafka_trial.nemesis.settings import NemesisSpec

API_VERSION = "chaos-mesh.org/v1alpha1"
KINDS = ("PodChaos", "NetworkChaos", "IOChaos", "TimeChaos", "StressChaos")
# Every pod of a Strimzi `Kafka` carries this label. So do the entity operator's and
# Cruise Control's: narrow it (strimzi.io/broker-role=true) for a cluster that has them.
DEFAULT_SELECTOR: dict[str, str] = {"strimzi.io/kind": "Kafka"}
# The broker's container in a Strimzi pod.
KAFKA_CONTAINER = "kafka"
# Strimzi mounts JBOD volume `id: 0` (the KafkaNodePool examples' storage) here; its
# log directory is kafka-log<node id> below it.
DATA_VOLUME = "/var/lib/kafka/data-0"
ENOSPC = 28
# Token-bucket sizes for a `bandwidth` toxic: Chaos Mesh requires both, Toxiproxy has
# neither. Chaos Mesh's own example values; large enough not to drop a fetch response.
BANDWIDTH_LIMIT = 20971520
BANDWIDTH_BUFFER = 10000

LABEL_RUN = "kafka-trial/run"
LABEL_STEP = "kafka-trial/step"
NOTE_AT = "kafka-trial/at-s"
NOTE_PICK = "kafka-trial/pick"
NOTE_PACKAGE = "kafka-trial/package"
NOTE_APPROX = "kafka-trial/approximation"

# The Workflow template key that embeds each kind's spec.
_EMBED = {
    "PodChaos": "podChaos",
    "NetworkChaos": "networkChaos",
    "IOChaos": "ioChaos",
    "TimeChaos": "timeChaos",
    "StressChaos": "stressChaos",
}


@dataclass(frozen=True)
class _Ctx:
    """What a builder needs: the step's pick, the run's settings, and where the
    brokers' pods are."""

    pick: int
    spec: NemesisSpec
    namespace: str
    labels: Mapping[str, str]
    volume_path: str

    @property
    def pods(self) -> dict[str, Any]:
        # A new dict at every use: a dict used twice in one document is dumped as a
        # YAML anchor and alias, which kubectl reads but no reader expects.
        return {"namespaces": [self.namespace], "labelSelectors": dict(self.labels)}


@dataclass(frozen=True)
class _Built:
    kind: str
    spec: dict[str, Any]
    approximation: str = ""


# A builder's str: this step has no equivalent, and why.
_Builder = Callable[[_Ctx], _Built | str]


def go_duration(seconds: float) -> str:
    """A Go duration string (time.ParseDuration), signed: whole seconds as "8s",
    anything finer in whole milliseconds, so no float formatting leaks in."""
    ms = round(abs(seconds) * 1000)
    sign = "-" if seconds < 0 and ms else ""
    return f"{sign}{ms // 1000}s" if ms % 1000 == 0 else f"{sign}{ms}ms"


def _pick_of(values: Sequence[Any], pick: int) -> Any:
    # The same choice packages.py makes from the same pick.
    return values[pick % len(values)]


def _role_mode(ctx: _Ctx) -> tuple[dict[str, Any], str]:
    """Chaos Mesh's mode for the role the pick aims at, and what it loses."""
    role = _pick_of(ctx.spec.targets, ctx.pick)
    if role == "random":
        return {"mode": "one"}, ""
    if role == "all":
        return {"mode": "all"}, ""
    if role == "majority":
        # fixed-percent rounds up: 51 % is n // 2 + 1 pods for up to 49 pods.
        return {"mode": "fixed-percent", "value": "51"}, ""
    if role == "minority":
        return {"mode": "one"}, "role minority as one pod: (n - 1) // 2 only for 3 or 4 brokers"
    return {"mode": "one"}, f"role {role} is cluster state no label selects: one random broker"


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _kill(hold: bool, role: str | None = None) -> _Builder:
    """A SIGKILL of the broker's container (container-kill); the kubelet starts it
    again at once, so a fault meant to hold the broker down loses the hold."""

    def build(ctx: _Ctx) -> _Built:
        if role is None:
            mode, approx = _role_mode(ctx)
        else:
            mode = {"mode": "one"}
            approx = f"role {role} (partition {ctx.spec.target_partition}): one random broker"
        held = "the kubelet restarts the container at once: no hold until the heal"
        spec = {"action": "container-kill", **mode, "selector": ctx.pods}
        spec["containerNames"] = [KAFKA_CONTAINER]
        return _Built("PodChaos", spec, _joined(approx, held if hold else ""))

    return build


def _stop(ctx: _Ctx) -> _Built:
    mode, approx = _role_mode(ctx)
    how = (
        "pod-failure swaps the image for a pause image: the kubelet stops the broker "
        "with the pod's grace period (SIGTERM, then SIGKILL) and keeps it down"
    )
    spec = {"action": "pod-failure", **mode, "selector": ctx.pods}
    return _Built("PodChaos", spec, _joined(approx, how))


def _partition(topology: str | None = None) -> _Builder:
    """Broker-to-broker links cut: the selected broker against every broker. Only
    `isolate-random` is exact; Chaos Mesh cannot make the target the complement of a
    random selection, so the other topologies become one isolated broker."""

    def build(ctx: _Ctx) -> _Built:
        drawn = topology or _pick_of(ctx.spec.topologies, ctx.pick)
        one_way = drawn == "one-way"
        notes = []
        if drawn not in ("isolate-random", "one-way"):
            notes.append(f"topology {drawn} as one random broker isolated")
        if one_way:
            notes.append("one-way as one random broker's packets to the others dropped")
        if ctx.spec.partition_mode == "reject" and not one_way:
            notes.append("Chaos Mesh drops packets: no reject (refused) mode")
        spec = {
            "action": "partition",
            "mode": "one",
            "selector": ctx.pods,
            "direction": "to" if one_way else "both",
            "target": {"mode": "all", "selector": ctx.pods},
        }
        return _Built("NetworkChaos", spec, _joined(*notes))

    return build


def _netem(ctx: _Ctx) -> tuple[dict[str, Any], str] | str:
    """The `degrade` toxic as a NetworkChaos action block, or why it has none."""
    d = ctx.spec.degrade
    a = d.attributes
    if d.type == "latency":
        block = {"latency": go_duration(a.get("latency", 0) / 1000), "correlation": "0"}
        block["jitter"] = go_duration(a.get("jitter", 0) / 1000)
        return {"action": "delay", "delay": block}, ""
    if d.type == "bandwidth":
        # Toxiproxy's rate is KB/s; Chaos Mesh's "kbps" is kilobytes per second too.
        rate = {"rate": f"{a.get('rate', 0)}kbps", "limit": BANDWIDTH_LIMIT}
        rate["buffer"] = BANDWIDTH_BUFFER
        return {"action": "bandwidth", "bandwidth": rate}, ""
    if d.type in ("loss", "duplicate", "corrupt"):
        # The ssh kind's packet toxics: netem's own, with the same `percent` (default 10).
        percent = f"{float(a.get('percent', 10)):g}"
        return {"action": d.type, d.type: {d.type: percent, "correlation": "0"}}, ""
    if d.type == "reorder":
        # netem reorders by sending some packets at once and delaying the rest: it needs
        # a delay, which kafka-trial's reorder does not set.
        percent = f"{float(a.get('percent', 10)):g}"
        reorder = {"reorder": percent, "correlation": "0", "gap": 0}
        block = {"latency": "10ms", "correlation": "0", "jitter": "0s", "reorder": reorder}
        return {"action": "delay", "delay": block}, "reorder needs a delay in netem: 10 ms"
    if d.type == "timeout":
        note = "toxic timeout as 100 % loss: the connection stalls but is never closed"
        return {"action": "loss", "loss": {"loss": "100", "correlation": "0"}}, note
    return f"toxic {d.type} acts on TCP streams (slices, resets, byte limits): netem has none"


def _degrade(follower: bool) -> _Builder:
    def build(ctx: _Ctx) -> _Built | str:
        netem = _netem(ctx)
        if isinstance(netem, str):
            return netem
        block, note = netem
        spec: dict[str, Any] = {**block, "direction": "to", "selector": ctx.pods}
        if follower or ctx.spec.degrade.links == "follower-replication":
            spec |= {"mode": "one", "target": {"mode": "one", "selector": ctx.pods}}
            where = (
                "a follower's link to the leader as one random broker's egress to another "
                "random broker (the same pod: no effect)"
            )
            return _Built("NetworkChaos", spec, _joined(note, where))
        mode, approx = _role_mode(ctx)
        spec |= mode
        where = "netem on the brokers' egress: replication too, not the client links alone"
        stream = "" if ctx.spec.degrade.stream == "downstream" else "upstream as egress"
        return _Built("NetworkChaos", spec, _joined(approx, note, where, stream))

    return build


def _disk_full(ctx: _Ctx) -> _Built:
    mode, approx = _role_mode(ctx)
    spec = {
        "action": "fault",
        **mode,
        "selector": ctx.pods,
        "containerNames": [KAFKA_CONTAINER],
        "volumePath": ctx.volume_path,
        "path": f"{ctx.volume_path}/**/*",
        "errno": ENOSPC,
        "percent": 100,
        "methods": ["write", "create", "mknod", "mkdir", "fsync"],
    }
    return _Built("IOChaos", spec, approx)


def _clock(ctx: _Ctx) -> _Built:
    mode, approx = _role_mode(ctx)
    offset = _pick_of(ctx.spec.clock.offsets_s, ctx.pick)
    spec = {
        "timeOffset": go_duration(offset),
        **mode,
        "selector": ctx.pods,
        "containerNames": [KAFKA_CONTAINER],
        # The wall clock only: the monotonic clock stays true, as with libfaketime.
        "clockIds": ["CLOCK_REALTIME"],
    }
    strobe = (
        "no strobe in TimeChaos: a bump held for the duration" if ctx.spec.clock.strobe_ms else ""
    )
    return _Built("TimeChaos", spec, _joined(approx, strobe))


_APP = "acts on the application on trial, a process or container the harness runs itself"
# One table, every package: a builder, or the reason it has no Chaos Mesh equivalent.
TABLE: dict[str, _Builder | str] = {
    "kill": _kill(hold=True),
    "stop": _stop,
    "pause": "a cgroup freeze: PodChaos has no SIGSTOP and StressChaos only competes for "
    "CPU (heartbeats still go out); `kill -STOP 1` in a kubectl exec is the faithful one",
    "bounce": _kill(hold=False),
    "partition": _partition(),
    "client-partition": "needs the clients' address (externalTargets), which the schedule "
    "does not know; port-forwarded traffic enters through the pod's loopback, "
    "which NetworkChaos does not touch",
    "client-pause": "freezes one of the harness's own client processes, not a pod",
    "hijack-txn": "a client of the harness takes over a transactional.id: a Kafka "
    "protocol fault, not a fault on a pod",
    "fence-txn-id": "a client of the harness takes over a transactional.id: a Kafka "
    "protocol fault, not a fault on a pod",
    "degrade": _degrade(follower=False),
    "slow-follower": _degrade(follower=True),
    "wipe": "Chaos Mesh cannot empty a volume; delete the pod's PVC and then the pod, and "
    "Strimzi recreates both empty",
    "power-loss": "IOChaos cannot drop a page cache: writes a broker had not fsynced survive "
    "a pod kill, since the node's kernel keeps them",
    "disk-full": _disk_full,
    "corrupt": "bit flips or a torn tail in a stopped broker's segment: IOChaos `mistake` "
    "corrupts I/O in flight instead, a different fault",
    "clock": _clock,
    "kill-leader": _kill(hold=True, role="leader"),
    "isolate-broker": _partition("isolate-random"),
    "packet": "NetworkChaos `loss`, `duplicate` and `bandwidth` on the broker pods are "
    "the counterparts; not mapped yet",
    "rolling-restart": "waits for the ISR between brokers, and no Chaos Mesh resource waits "
    "on Kafka's state; Strimzi rolls a cluster itself when a pod annotation changes",
    "preferred-election": "an Admin API call, not a fault on a pod: "
    "`kafka-leader-election.sh --election-type PREFERRED --all-topic-partitions`",
    "reassign": "an Admin API call, not a fault on a pod: `kafka-reassign-partitions.sh "
    "--execute`, or Cruise Control under Strimzi (KafkaRebalance)",
    "voter-change": "an Admin API call, not a fault on a pod: `kafka-metadata-quorum.sh "
    "remove-controller`, then `add-controller`",
    "remove-broker": "an operator's decommission (reassign, stop, `kafka-cluster.sh "
    "unregister`), not a fault on a pod; Strimzi scales a node pool down instead",
    "unclean-failover": "a sequence that waits on the ISR and elects uncleanly through the "
    "Admin API: no Chaos Mesh resource waits on Kafka's state",
    "last-replica-power-loss": "waits on the ISR, then a power loss: neither exists in Chaos Mesh",
    "app-kill": _APP,
    "app-pause": _APP,
    "app-restart": _APP,
    "app-partition": _APP,
}
# The catalog is the one registry of names: a package neither mapped nor skipped with
# a reason is a gap to catch at import, not when someone reads the YAML.
if set(TABLE) != set(PACKAGES) or any(v == "" for v in TABLE.values()):
    raise ImportError(f"chaos_mesh.TABLE and the catalog disagree: {set(TABLE) ^ set(PACKAGES)}")
MAPPED = frozenset(p for p, v in TABLE.items() if not isinstance(v, str))


def _dns_part(text: str) -> str:
    """Lowercase alphanumerics and '-': a piece of a DNS-1123 name."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")


def _label_value(text: str) -> str:
    # A label value: 63 characters at most, alphanumeric at both ends.
    return re.sub(r"[^A-Za-z0-9._-]", "-", text)[:63].strip("-._") or "run"


def resource_name(run_id: str, index: int, package: str) -> str:
    """`kt-<run>-<i>-<package>`, within 63 characters (a label value may hold it):
    the run part is cut, never the index that makes it unique."""
    tail = f"-{index}-{_dns_part(package)}"
    run = _dns_part(run_id)[: 63 - len("kt-") - len(tail)].strip("-") or "run"
    return f"kt-{run}{tail}"


def _as_step(s: Step | Mapping[str, Any]) -> Step:
    if isinstance(s, Step):
        return s
    return Step(float(s["at_s"]), s["action"], str(s["package"]), int(s.get("pick", 0)))


def _durations(steps: Sequence[Step], fault_s: float) -> dict[int, float]:
    """Each fault step's time until its package's next heal (or fault_s: none)."""
    out: dict[int, float] = {}
    for i, s in enumerate(steps):
        if s.action != "fault":
            continue
        heal = next(
            (h for h in steps[i + 1 :] if h.action == "heal" and h.package == s.package), None
        )
        out[i] = heal.at_s - s.at_s if heal is not None and heal.at_s > s.at_s else fault_s
    return out


def _seconds(value: float) -> str:
    # schedule.json's at_s has 3 decimals: "6", "6.5", never "6.000" or "1e+06".
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _metadata(run_id: str, namespace: str, i: int, s: Step, approx: str) -> dict[str, Any]:
    notes = {NOTE_AT: _seconds(s.at_s), NOTE_PICK: str(s.pick), NOTE_PACKAGE: s.package}
    if approx:
        notes[NOTE_APPROX] = approx
    labels = {LABEL_RUN: _label_value(run_id), LABEL_STEP: str(i)}
    if labels[LABEL_RUN] != run_id:
        notes["kafka-trial/run-id"] = run_id  # the label had to be cut or cleaned
    return {
        "name": resource_name(run_id, i, s.package),
        "namespace": namespace,
        "labels": labels,
        "annotations": notes,
    }


def resources(
    steps: Sequence[Step | Mapping[str, Any]],
    spec: NemesisSpec,
    run_id: str,
    namespace: str = "kafka",
    selector: Mapping[str, str] | None = None,
    *,
    volume_path: str = DATA_VOLUME,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """One Chaos Mesh resource per fault step of `steps` (schedule.json's list, as
    Steps or its dicts), in schedule order, and (package, reason) for each fault step
    that has none. Every fault step is in exactly one of the two lists."""
    plan = [_as_step(s) for s in steps]
    labels = dict(selector if selector is not None else DEFAULT_SELECTOR)
    made: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for i, seconds in _durations(plan, spec.fault_s).items():
        s = plan[i]
        route = TABLE.get(s.package, f"unknown package {s.package}")
        built = (
            route
            if isinstance(route, str)
            else route(_Ctx(s.pick, spec, namespace, labels, volume_path))
        )
        if isinstance(built, str):
            skipped.append((s.package, built))
            continue
        made.append(
            {
                "apiVersion": API_VERSION,
                "kind": built.kind,
                "metadata": _metadata(run_id, namespace, i, s, built.approximation),
                # A resource of no duration would never recover: 1 ms at least.
                "spec": {**built.spec, "duration": go_duration(max(seconds, 0.001))},
            }
        )
    return made, skipped


def _branch(res: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A Serial template that sleeps until the fault's start and then injects it for
    its duration (Chaos Mesh runs an embedded chaos until the template's deadline)."""
    meta = res["metadata"]
    step = meta["labels"][LABEL_STEP]
    at_s = float(meta["annotations"][NOTE_AT])
    inject = {k: v for k, v in res["spec"].items() if k != "duration"}
    chaos = {
        "name": f"fault-{step}",
        "templateType": res["kind"],
        "deadline": res["spec"]["duration"],
        _EMBED[res["kind"]]: inject,
    }
    children = [chaos]
    if at_s > 0:
        wait = {"name": f"wait-{step}", "templateType": "Suspend", "deadline": go_duration(at_s)}
        children.insert(0, wait)
    serial = {
        "name": f"step-{step}",
        "templateType": "Serial",
        "children": [c["name"] for c in children],
    }
    return serial["name"], [serial, *children]


def workflow(
    steps: Sequence[Step | Mapping[str, Any]],
    spec: NemesisSpec,
    run_id: str,
    namespace: str = "kafka",
    selector: Mapping[str, str] | None = None,
    *,
    volume_path: str = DATA_VOLUME,
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The whole schedule as one Chaos Mesh Workflow: a Parallel entry with one
    Serial branch per fault (a Suspend until its at_s, then the chaos), so at_s counts
    from the Workflow's creation: apply it when the fault phase starts."""
    made, skipped = resources(steps, spec, run_id, namespace, selector, volume_path=volume_path)
    branches: list[str] = []
    templates: list[dict[str, Any]] = []
    for res in made:
        name, own = _branch(res)
        branches.append(name)
        templates.extend(own)
    entry = {"name": "entry", "templateType": "Parallel", "children": branches}
    doc = {
        "apiVersion": API_VERSION,
        "kind": "Workflow",
        "metadata": {
            "name": f"kt-{_dns_part(run_id)[:50].strip('-') or 'run'}-faults",
            "namespace": namespace,
            "labels": {LABEL_RUN: _label_value(run_id)},
        },
        "spec": {"entry": "entry", "templates": [entry, *templates]},
    }
    return doc, skipped
