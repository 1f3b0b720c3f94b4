"""A run's fault schedule as Chaos Mesh resources (nemesis/chaos_mesh.py, `kafka-trial
schedule`): every fault step becomes a resource with the fields Chaos Mesh documents,
or is skipped with a reason; nothing is applied anywhere."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_trial.harness.cli import main
from kafka_trial.harness.spec import RunSpec
from kafka_trial.nemesis import chaos_mesh
from kafka_trial.nemesis.catalog import PACKAGES
from kafka_trial.nemesis.schedule import Step, schedule
from kafka_trial.nemesis.settings import NemesisSpec

# DNS-1123 subdomain, and the 63 characters a label value (or a DNS label) may hold.
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
# Go's time.ParseDuration, signed.
GO_DURATION = re.compile(r"^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
MODES = {"one", "all", "fixed", "fixed-percent", "random-max-percent"}

# What Chaos Mesh's API (api/v1alpha1/*_types.go) requires or the action needs, per
# kind and action: the fields of the spec, and of the action's own block.
REQUIRED: dict[tuple[str, str | None], set[str]] = {
    ("PodChaos", "pod-kill"): {"action", "mode", "selector"},
    ("PodChaos", "pod-failure"): {"action", "mode", "selector", "duration"},
    ("PodChaos", "container-kill"): {"action", "mode", "selector", "containerNames"},
    ("NetworkChaos", "partition"): {"action", "mode", "selector", "direction", "target"},
    ("NetworkChaos", "delay"): {"action", "mode", "selector", "delay"},
    ("NetworkChaos", "loss"): {"action", "mode", "selector", "loss"},
    ("NetworkChaos", "duplicate"): {"action", "mode", "selector", "duplicate"},
    ("NetworkChaos", "corrupt"): {"action", "mode", "selector", "corrupt"},
    ("NetworkChaos", "bandwidth"): {"action", "mode", "selector", "bandwidth"},
    ("IOChaos", "fault"): {"action", "mode", "selector", "volumePath", "errno"},
    ("IOChaos", "latency"): {"action", "mode", "selector", "volumePath", "delay"},
    ("IOChaos", "attrOverride"): {"action", "mode", "selector", "volumePath", "attr"},
    ("TimeChaos", None): {"timeOffset", "mode", "selector"},
}
BLOCKS = {
    "delay": {"latency"},
    "loss": {"loss"},
    "duplicate": {"duplicate"},
    "corrupt": {"corrupt"},
    "bandwidth": {"rate", "limit", "buffer"},
}

# Settings each package needs to validate in a run; the nemesis spec alone takes every
# package, so several specs cover the knobs the builders read.
SPECS = (
    NemesisSpec(faults=tuple(PACKAGES)),
    NemesisSpec(
        faults=tuple(PACKAGES),
        targets=("all", "majority", "minority", "followers"),
        partition_mode="reject",
        degrade={"type": "bandwidth", "attributes": {"rate": 100}, "stream": "downstream"},
        clock={"offsets_s": (-300, 0, 45), "strobe_ms": 5000},
    ),
    NemesisSpec(
        faults=("degrade", "slow-follower", "partition", "isolate-broker"),
        degrade={"type": "timeout", "attributes": {"timeout": 0}},
        fault_s=2.5,
        quiet_s=1.25,
    ),
    NemesisSpec(faults=("degrade",), degrade={"type": "slicer", "attributes": {}}),
)


def _packet_toxic_specs() -> list[NemesisSpec]:
    """`degrade` with the packet toxics (loss, duplicate, corrupt, reorder), where the
    settings take them."""
    specs = []
    for toxic in ("loss", "duplicate", "corrupt", "reorder"):
        try:
            d = {"type": toxic, "attributes": {"percent": 20}}
            specs.append(NemesisSpec(faults=("degrade", "slow-follower"), degrade=d))
        except ValueError:
            continue
    return specs


def _generated(spec: NemesisSpec, seed: int) -> tuple[list[Step], list[dict], list[tuple]]:
    steps = schedule(spec, seed, 90)
    made, skipped = chaos_mesh.resources(steps, spec, "run-abc123")
    # Through YAML and back: what kubectl would read.
    docs = list(yaml.safe_load_all(yaml.safe_dump_all(made, sort_keys=False)))
    assert docs == made
    return steps, docs, skipped


def _check_spec(kind: str, spec: dict[str, Any]) -> None:
    action = spec.get("action")
    key = (kind, None if kind == "TimeChaos" else action)
    assert key in REQUIRED, key
    assert REQUIRED[key] <= spec.keys(), (key, REQUIRED[key] - spec.keys())
    assert spec["mode"] in MODES
    if spec["mode"] in ("fixed", "fixed-percent", "random-max-percent"):
        assert isinstance(spec["value"], str) and spec["value"].isdigit()
    assert set(spec["selector"]) == {"namespaces", "labelSelectors"}
    if action in BLOCKS:
        assert BLOCKS[action] <= spec[action].keys()
    if "target" in spec:
        assert spec["target"]["mode"] in MODES and "labelSelectors" in spec["target"]["selector"]
    if "direction" in spec:
        assert spec["direction"] in ("to", "from", "both")
    if kind == "IOChaos":
        assert spec["errno"] == 28 and spec["path"].startswith(spec["volumePath"])
    if kind == "TimeChaos":
        assert GO_DURATION.match(spec["timeOffset"])
    for block in ("delay",):
        if isinstance(spec.get(block), dict):
            assert GO_DURATION.match(spec[block]["latency"])


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize(
    "spec", SPECS + tuple(_packet_toxic_specs()), ids=lambda s: f"{s.degrade.type}:{len(s.faults)}"
)
def test_every_fault_step_is_a_documented_resource_or_skipped(spec, seed) -> None:
    steps, docs, skipped = _generated(spec, seed)
    faults = [s for s in steps if s.action == "fault"]
    assert len(docs) + len(skipped) == len(faults)
    names = [d["metadata"]["name"] for d in docs]
    assert len(set(names)) == len(names)
    for d in docs:
        assert d["apiVersion"] == "chaos-mesh.org/v1alpha1"
        assert d["kind"] in chaos_mesh.KINDS
        meta = d["metadata"]
        assert DNS_1123.match(meta["name"]), meta["name"]
        assert meta["namespace"] == "kafka"
        assert meta["labels"]["kafka-trial/run"] == "run-abc123"
        step = steps[int(meta["labels"]["kafka-trial/step"])]
        assert step.action == "fault" and meta["annotations"]["kafka-trial/package"] == step.package
        assert float(meta["annotations"]["kafka-trial/at-s"]) == step.at_s
        assert meta["annotations"]["kafka-trial/pick"] == str(step.pick)
        assert GO_DURATION.match(d["spec"]["duration"])
        _check_spec(d["kind"], d["spec"])
    # The skipped are named with a reason, and are exactly the steps not emitted.
    emitted = Counter(d["metadata"]["annotations"]["kafka-trial/package"] for d in docs)
    assert emitted + Counter(p for p, _ in skipped) == Counter(s.package for s in faults)
    assert all(p in PACKAGES and reason for p, reason in skipped)


def test_every_package_is_mapped_or_skipped_for_a_reason() -> None:
    assert set(chaos_mesh.TABLE) == set(PACKAGES)
    skipped = {p for p, v in chaos_mesh.TABLE.items() if isinstance(v, str)}
    assert skipped == set(PACKAGES) - chaos_mesh.MAPPED
    # The faults the brief names as having no faithful equivalent.
    assert {"power-loss", "pause", "client-pause", "app-kill", "app-pause"} <= skipped
    assert {"kill", "partition", "disk-full", "clock", "isolate-broker"} <= chaos_mesh.MAPPED


def test_the_duration_runs_to_the_heal_and_roles_are_marked_approximate() -> None:
    spec = NemesisSpec(faults=("kill-leader", "clock", "isolate-broker"), fault_s=8)
    steps = [
        Step(6.0, "fault", "kill-leader", 3),
        Step(6.0, "fault", "isolate-broker", 4),
        Step(6.0, "fault", "clock", 1),
        Step(13.5, "heal", "clock"),
        Step(14.0, "heal", "isolate-broker"),
        # kill-leader's heal never comes: fault_s stands in.
    ]
    made, skipped = chaos_mesh.resources([s.to_dict() for s in steps], spec, "r1", "ns1")
    assert skipped == []
    by = {d["metadata"]["annotations"]["kafka-trial/package"]: d for d in made}
    assert by["kill-leader"]["spec"]["duration"] == "8s"
    assert by["isolate-broker"]["spec"]["duration"] == "8s"
    assert by["clock"]["spec"]["duration"] == "7500ms"
    assert by["clock"]["spec"]["timeOffset"] == "-120s"  # offsets (120, -120), pick 1
    assert "leader" in by["kill-leader"]["metadata"]["annotations"]["kafka-trial/approximation"]
    assert "kafka-trial/approximation" not in by["isolate-broker"]["metadata"]["annotations"]
    assert by["isolate-broker"]["spec"]["selector"]["namespaces"] == ["ns1"]


def test_a_selector_overrides_the_strimzi_default() -> None:
    spec = NemesisSpec(faults=("partition",))
    steps = schedule(spec, 0, 30)
    (made, _) = chaos_mesh.resources(steps, spec, "r", selector={"strimzi.io/broker-role": "true"})
    assert made
    for d in made:
        assert d["spec"]["selector"]["labelSelectors"] == {"strimzi.io/broker-role": "true"}
        assert d["spec"]["target"]["selector"]["labelSelectors"] == {
            "strimzi.io/broker-role": "true"
        }


def test_an_awkward_run_id_still_gives_valid_names_and_labels() -> None:
    spec = NemesisSpec(faults=("kill",))
    steps = schedule(spec, 0, 30)
    run_id = "20260101T000000Z-My_Run-" + "x" * 80
    made, _ = chaos_mesh.resources(steps, spec, run_id)
    for d in made:
        assert DNS_1123.match(d["metadata"]["name"]) and len(d["metadata"]["name"]) <= 63
        assert len(d["metadata"]["labels"]["kafka-trial/run"]) <= 63
        assert d["metadata"]["annotations"]["kafka-trial/run-id"] == run_id


def test_workflow_suspends_until_each_fault() -> None:
    spec = SPECS[0]
    steps = schedule(spec, 3, 90)
    made, skipped = chaos_mesh.resources(steps, spec, "wf")
    flow, skipped_too = chaos_mesh.workflow(steps, spec, "wf")
    assert skipped_too == skipped
    flow = yaml.safe_load(yaml.safe_dump(flow))
    assert flow["kind"] == "Workflow" and flow["spec"]["entry"] == "entry"
    templates = {t["name"]: t for t in flow["spec"]["templates"]}
    assert len(templates) == len(flow["spec"]["templates"])
    assert all(DNS_1123.match(n) for n in templates)
    assert len(templates["entry"]["children"]) == len(made)
    for res, branch in zip(made, templates["entry"]["children"], strict=True):
        *waits, chaos = (templates[c] for c in templates[branch]["children"])
        at_s = float(res["metadata"]["annotations"]["kafka-trial/at-s"])
        if at_s:
            assert waits[0]["templateType"] == "Suspend"
            assert waits[0]["deadline"] == chaos_mesh.go_duration(at_s)
        assert chaos["templateType"] == res["kind"]
        assert chaos["deadline"] == res["spec"]["duration"]
        embedded = next(v for k, v in chaos.items() if k.endswith("Chaos"))
        assert "duration" not in embedded and embedded["selector"] == res["spec"]["selector"]


def _run_dir(tmp_path: Path, cluster: bool = True) -> Path:
    run = RunSpec(
        seed=5, duration_s=40, nemesis={"faults": ("kill", "isolate-broker", "wipe", "pause")}
    )
    d = tmp_path / "20260101T000000Z-default-host-000001"
    d.mkdir()
    (d / "spec.json").write_text(run.to_json())
    steps = schedule(run.nemesis, run.seed, run.duration_s)
    (d / "schedule.json").write_text(json.dumps([s.to_dict() for s in steps], indent=1))
    if cluster:
        (d / "cluster.json").write_text(json.dumps({"run_id": "0a1b2c3d", "nodes": [1, 2, 3]}))
    return d


def test_cli_prints_the_schedule_as_yaml(tmp_path: Path, capsys) -> None:
    d = _run_dir(tmp_path)
    assert main(["--progress", "off", "schedule", str(d), "--as", "chaos-mesh"]) == 0
    out = capsys.readouterr().out
    head = out.split("---", 1)[0].splitlines()
    assert head and all(line.startswith("# skipped: ") for line in head)
    assert any(line.startswith("# skipped: wipe (") for line in head)
    assert any(line.startswith("# skipped: pause (") for line in head)
    docs = [doc for doc in yaml.safe_load_all(out) if doc is not None]
    assert docs and {d["kind"] for d in docs} == {"PodChaos", "NetworkChaos"}
    assert all(doc["metadata"]["labels"]["kafka-trial/run"] == "0a1b2c3d" for doc in docs)
    steps = json.loads((d / "schedule.json").read_text())
    kept = sum(
        1 for s in steps if s["action"] == "fault" and s["package"] in ("kill", "isolate-broker")
    )
    assert len(docs) == kept


def test_cli_options_and_the_run_id_from_the_directory(tmp_path: Path, capsys) -> None:
    d = _run_dir(tmp_path, cluster=False)
    argv = ["schedule", str(d), "--namespace", "strimzi", "--selector", "a=b", "--selector", "c=d"]
    assert main(argv) == 0
    docs = [x for x in yaml.safe_load_all(capsys.readouterr().out) if x is not None]
    assert docs
    for doc in docs:
        assert doc["metadata"]["namespace"] == "strimzi"
        assert doc["metadata"]["labels"]["kafka-trial/run"] == d.name
        assert doc["spec"]["selector"]["labelSelectors"] == {"a": "b", "c": "d"}
    assert main(["schedule", str(d), "--as", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((d / "schedule.json").read_text())
    assert main(["schedule", str(d), "--as", "chaos-mesh-workflow"]) == 0
    (flow,) = [x for x in yaml.safe_load_all(capsys.readouterr().out) if x is not None]
    assert flow["kind"] == "Workflow"


def test_cli_missing_or_broken_run_dir_is_a_setup_error(tmp_path: Path, capsys) -> None:
    assert main(["schedule", str(tmp_path / "nope")]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope is not a directory" in err[0] and "fix:" in err[0]
    d = _run_dir(tmp_path)
    (d / "schedule.json").write_text("{not json")
    assert main(["schedule", str(d)]) == 3
    assert "schedule.json cannot be read" in capsys.readouterr().err
    (d / "schedule.json").unlink()
    assert main(["schedule", str(d)]) == 3
    assert "schedule.json is missing" in capsys.readouterr().err
    (d / "schedule.json").write_text("[]")
    assert main(["schedule", str(d), "--selector", "novalue"]) == 3
    assert "--selector 'novalue' is not KEY=VALUE" in capsys.readouterr().err
