"""The kinds of cluster a run can put on trial, before any node is reached: the
inventory's model and its errors, the spec's refusals per kind, the client security
settings, the iptables and tc commands, and a log cut to a run's span."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kafka_trial.cluster import log_window, netfaults
from kafka_trial.cluster.control import LinkId
from kafka_trial.cluster.inventory import load_inventory
from kafka_trial.cluster.settings import ClientSpec, ClusterSpec
from kafka_trial.cluster.ssh_cluster import SshCluster
from kafka_trial.contracts.errors import TrialError
from kafka_trial.harness.spec import RunSpec
from kafka_trial.nemesis.catalog import DOCKER_ONLY, HARNESS_SIDE, PACKAGES, kind_refusal
from pydantic import ValidationError

NODE = {
    "node_id": 1,
    "host": "10.0.0.1",
    "address": "kafka-1",
    "systemd_unit": "kafka",
}


def _inventory(tmp_path: Path, nodes: list[dict], **top: object) -> Path:
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump({"bootstrap": "10.0.0.1:9092", "nodes": nodes, **top}))
    return path


def test_an_inventory_loads_with_keys_relative_to_it(tmp_path: Path) -> None:
    nodes = [{**NODE, "node_id": j, "key": "keys/id"} for j in (1, 2, 3)]
    inv = load_inventory(_inventory(tmp_path, nodes))
    assert inv.node_ids == [1, 2, 3]
    assert inv.node(2).key == str((tmp_path / "keys/id").resolve())
    assert inv.node(1).start_command() == "systemctl start kafka"
    assert inv.node(1).ports.internal == 9093


@pytest.mark.parametrize(
    ("nodes", "said"),
    [
        ([NODE, NODE], "node ids repeat"),
        ([{**NODE, "systemd_unit": None}], "give systemd_unit, or both start and stop"),
        ([{k: v for k, v in NODE.items() if k != "address"}], "nodes.0.address"),
    ],
)
def test_a_bad_inventory_says_what_is_wrong_in_one_line(
    tmp_path: Path, nodes: list[dict], said: str
) -> None:
    with pytest.raises(TrialError) as e:
        load_inventory(_inventory(tmp_path, nodes))
    assert said in e.value.problem and "\n" not in e.value.one_line()


def test_a_missing_inventory_is_named(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match="cannot read the inventory"):
        load_inventory(tmp_path / "nope.yaml")


def test_every_package_is_either_made_or_refused_with_a_reason_per_kind() -> None:
    for name in PACKAGES:
        assert kind_refusal(name, "docker") is None
        assert (kind_refusal(name, "ssh") is None) == (name not in DOCKER_ONLY)
        assert (kind_refusal(name, "bootstrap") is None) == (name in HARNESS_SIDE)
    assert set(DOCKER_ONLY) <= set(PACKAGES) and set(PACKAGES) >= HARNESS_SIDE


def test_the_spec_refuses_what_a_kind_cannot_make() -> None:
    ssh = {"kind": "ssh", "inventory": "nodes.yaml"}
    with pytest.raises(ValidationError, match=r"power-loss cannot act on cluster\.kind ssh"):
        RunSpec(cluster=ssh, nemesis={"faults": ["power-loss"]})
    with pytest.raises(ValidationError, match="Toxiproxy stream toxic"):
        RunSpec(cluster=ssh, nemesis={"faults": ["degrade"], "degrade": {"type": "slicer"}})
    with pytest.raises(ValidationError, match="acts on packets"):
        RunSpec(nemesis={"faults": ["degrade"], "degrade": {"type": "loss"}})
    with pytest.raises(ValidationError, match="only observes"):
        RunSpec(cluster={"kind": "bootstrap", "bootstrap": "h:9092"})
    with pytest.raises(ValidationError, match="give the app as a command"):
        RunSpec(
            cluster=ssh, app={"image": "x:1", "guarantee": "at-least-once"}, nemesis={"faults": []}
        )
    with pytest.raises(ValidationError, match="need the Docker kind"):
        ClusterSpec(kind="ssh", inventory="n.yaml", storage="writeback")
    # A throttle is the brokers' own config: a crashed run would leave it on the
    # user's cluster, where no heal can tell it from theirs.
    with pytest.raises(ValidationError, match=r"throttle_bytes on cluster\.kind ssh"):
        RunSpec(
            cluster=ssh,
            nemesis={"faults": ["reassign"], "reassign": {"throttle_bytes": 1_000_000}},
        )
    # What each kind can make passes, disk-full on a user's disk without kt-lazyfs too,
    # and an unthrottled reassignment (the Admin API, as any client reaches it).
    RunSpec(cluster=ssh, nemesis={"faults": ["kill-leader", "isolate-broker", "disk-full"]})
    RunSpec(cluster=ssh, nemesis={"faults": ["reassign"]})
    RunSpec(cluster={"kind": "bootstrap", "bootstrap": "h:9092"}, nemesis={"faults": []})


@pytest.mark.parametrize("version", ["2.8", "3.2", "3.2.3"])
def test_a_kafka_version_this_kraft_cluster_cannot_run_is_refused(version: str) -> None:
    with pytest.raises(ValidationError, match=r"production-ready from 3\.3"):
        ClusterSpec(kafka_version=version)


def test_the_cli_refuses_kafka_2_8_before_anything_starts(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "kafka_trial", "run", "--kafka-version", "2.8"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 3, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("kafka-trial:")]
    assert len(lines) == 1 and "3.3" in lines[0]
    assert not (tmp_path / "runs").exists()


def test_client_security_settings_flatten_to_librdkafka_keys() -> None:
    spec = RunSpec.model_validate(
        {
            "client": {
                "security": {"protocol": "SASL_SSL"},
                "sasl": {"mechanism": "PLAIN", "username": "u"},
                "ssl": {"ca": {"location": "/etc/ca.pem"}, "endpoint": {"identification": {}}},
            }
        }
    )
    assert spec.client.librdkafka() == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "ssl.ca.location": "/etc/ca.pem",
    }
    assert ClientSpec().librdkafka() == {}


def test_a_cut_is_rules_on_the_node_the_link_ends_at() -> None:
    up, down = netfaults.cut_rules("kafka-2", 9093, ("upstream", "downstream"), "drop", "2->1")
    assert up.add() == (
        f"iptables -w -A {netfaults.CHAIN} -p tcp -s kafka-2 --dport 9093 "
        "-m comment --comment 'kt:2->1' -j DROP"
    )
    assert "-d kafka-2 --sport 9093" in down.add()
    (rej,) = netfaults.cut_rules(None, 9092, ("upstream",), "reject", "client")
    assert "-s " not in rej.add() and rej.add().endswith("-j REJECT --reject-with tcp-reset")
    assert rej.delete().startswith(f"iptables -w -D {netfaults.CHAIN} ")
    assert rej.present().startswith(f"iptables -w -C {netfaults.CHAIN} ")
    tee = netfaults.duplicate_rule("172.18.0.3", 9093, 0.2, "dup")
    assert tee.table == "mangle" and "-t mangle -A" in tee.add() and "TEE --gateway" in tee.add()


def test_the_heal_finds_everything_kafka_trial_adds() -> None:
    heal = netfaults.heal("eth0")
    assert f"-F {netfaults.CHAIN}" in heal and f"-t mangle -F {netfaults.CHAIN}" in heal
    assert f"{netfaults.QDISC_HANDLE} root" in heal
    for added in (netfaults.rate("eth0", 800), netfaults.netem("eth0", "loss 5%")):
        assert f"root handle {netfaults.QDISC_HANDLE}" in added


def test_an_ssh_cluster_aims_a_link_at_the_port_of_its_kind(tmp_path: Path) -> None:
    nodes = [{**NODE, "node_id": j, "address": f"kafka-{j}"} for j in (1, 2, 3)]
    inv = load_inventory(_inventory(tmp_path, nodes))
    c = SshCluster(ClusterSpec(kind="ssh", inventory="x", brokers=3), inv)
    assert c._port(LinkId(2, 1, "controller")) == 9094
    assert c._port(LinkId(None, 3, "client")) == 9092
    assert c._peer(LinkId(2, 1, "internal")) == "kafka-2"
    assert c._peer(LinkId(None, 1, "client")) is None
    assert c.describe()["kind"] == "ssh" and c.client_lanes == 1


def test_a_log_is_cut_to_the_runs_span_with_its_continuation_lines() -> None:
    text = (
        b"2026-11-28T11:59:00.000 [main] INFO before\n"
        b"2026-11-28T12:00:01.000 [main] ERROR in the run\n"
        b"\tat a.stack.Frame\n"
        b"[2026-11-28 12:00:03,120] INFO log4j's stamp, in the run\n"
        b"2026-11-28T12:10:00.000 [main] INFO after\n"
    )
    start = log_window.stamp_of(b"2026-11-28T12:00:00")
    assert start is not None
    kept = log_window.cut(text, start, start + 10).decode()
    assert kept.splitlines() == [
        "2026-11-28T12:00:01.000 [main] ERROR in the run",
        "\tat a.stack.Frame",
        "[2026-11-28 12:00:03,120] INFO log4j's stamp, in the run",
    ]
    assert log_window.cut(b"no stamps here\n", 0, 1) == b"no stamps here\n"
