"""`cluster.kind: ssh` and observer mode against the SSH test double: three KRaft
nodes in containers running sshd, reached only through ports published on 127.0.0.1.

First the double behaves as the nodes kafka-trial drives: SSH with its key alone,
iptables and tc inside a node, the broker's start and stop commands, and an inventory
that names the cluster's real node ids. Then whole runs on it: the presets as on the
Docker kind, with every fault read back on its node; a run killed mid-partition and
healed from the inventory; observer mode with a broker killed from outside; and the
bad inputs that must stop a run before any fault."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kafka_trial.cluster import log_window, netfaults
from kafka_trial.cluster.control import LinkId
from kafka_trial.cluster.inventory import Inventory, load_inventory
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.cluster.ssh import RemoteError
from kafka_trial.cluster.ssh_cluster import SshCluster
from kafka_trial.cluster.ssh_double import SshDouble
from kafka_trial.cluster.toxiproxy import Toxic
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import read_history
from kafka_trial.contracts.ops import Op
from kafka_trial.nemesis.catalog import FAULT_OPS
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.reconfigure import Reassign
from kafka_trial.nemesis.recorder import NemesisRecorder

from tests.integration.runs import stop_stuck
from tests.integration.ssh_fixtures import ssh_double_cluster  # noqa: F401
from tests.results import ran
from tests.rundirs import run_dirs

PGREP = "pgrep -f 'kafka\\.Kafka'"


@pytest.fixture(scope="module")
def double(ssh_double_cluster: SshDouble) -> Iterator[SshDouble]:  # noqa: F811
    yield ssh_double_cluster
    # Later modules share the double: they get every broker back, whatever failed here.
    for j in ssh_double_cluster.node_ids:
        ssh_double_cluster.exec(j, "/opt/kt/broker start")
    ssh_double_cluster.await_ready(120)


@pytest.fixture(scope="module")
def inventory(double: SshDouble) -> Inventory:
    return load_inventory(double.inventory_path)


def ssh(
    inv: Inventory, node: int, cmd: str, key: str | None = None, timeout_s: float = 60
) -> subprocess.CompletedProcess[str]:
    n = inv.node(node)
    return subprocess.run(
        [
            "ssh",
            "-i",
            key or str(n.key),
            "-p",
            str(n.ssh_port),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "LogLevel=ERROR",
            f"{n.user}@{n.host}",
            cmd,
        ],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def registered(bootstrap: str) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return sorted(admin.list_topics(timeout=10).brokers)


def await_registered(bootstrap: str, want: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    seen: list[int] = []
    while time.monotonic() < deadline:
        try:
            seen = registered(bootstrap)
        except KafkaException:
            seen = []  # a bootstrap of one broker that is down
        if seen == want:
            break
        time.sleep(0.5)
    return seen


def test_inventory_names_the_clusters_nodes(double: SshDouble, inventory: Inventory) -> None:
    assert inventory.bootstrap == double.bootstrap
    assert inventory.node_ids == registered(inventory.bootstrap) == [1, 2, 3]
    key = Path(str(inventory.nodes[0].key))
    assert key.is_absolute() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert [n.address for n in inventory.nodes] == [double.containers[j].name for j in (1, 2, 3)]
    assert {n.host for n in inventory.nodes} == {"127.0.0.1"}


def test_ssh_with_the_key_reaches_every_broker(double: SshDouble, inventory: Inventory) -> None:
    for j in inventory.node_ids:
        res = ssh(inventory, j, f"{PGREP} && hostname")
        assert res.returncode == 0, res.stderr
        pid, hostname = res.stdout.split()
        assert int(pid) > 1, "the JVM must not be PID 1: killing it would end the node"
        assert hostname == inventory.node(j).address


def test_a_wrong_key_is_refused(inventory: Inventory, tmp_path: Path) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other], check=True)
    res = ssh(inventory, 1, "true", key=str(other))
    assert res.returncode == 255
    assert "Permission denied" in res.stderr


def test_iptables_rules_on_a_peers_address_take_effect(
    double: SshDouble, inventory: Inventory
) -> None:
    peer = inventory.node(2)
    probe = f"timeout 3 bash -c 'echo > /dev/tcp/{peer.address}/{peer.ports.internal}'"
    add = (
        f"iptables -N KT-TEST && iptables -A KT-TEST -d {peer.address} -j DROP "
        "&& iptables -I OUTPUT -j KT-TEST && iptables -S KT-TEST"
    )
    res = ssh(inventory, 1, add)
    try:
        assert res.returncode == 0, res.stderr
        peer_ip = double.containers[2].attrs["NetworkSettings"]["Networks"][double.network]
        assert f"-d {peer_ip['IPAddress']}/32 -j DROP" in res.stdout
        assert double.exec(1, probe)[0] != 0, "the DROP rule did not cut node 1 from node 2"
    finally:
        delete = "iptables -D OUTPUT -j KT-TEST; iptables -F KT-TEST; iptables -X KT-TEST"
        assert ssh(inventory, 1, delete).returncode == 0
    assert ssh(inventory, 1, "iptables -S KT-TEST").returncode != 0
    assert double.exec(1, probe)[0] == 0


def test_tc_shapes_the_nodes_interface(inventory: Inventory) -> None:
    dev = inventory.node(1).interface
    res = ssh(
        inventory,
        1,
        f"tc qdisc add dev {dev} root tbf rate 10mbit burst 32kbit latency 50ms "
        f"&& tc qdisc show dev {dev}",
    )
    try:
        assert res.returncode == 0, res.stderr
        assert "qdisc tbf" in res.stdout
    finally:
        ssh(inventory, 1, f"tc qdisc del dev {dev} root")
    assert "tbf" not in ssh(inventory, 1, f"tc qdisc show dev {dev}").stdout


def test_stop_and_start_over_ssh(double: SshDouble, inventory: Inventory) -> None:
    n = inventory.node(3)
    stop = ssh(inventory, 3, n.stop_command())
    assert stop.returncode == 0, stop.stderr
    assert double.exec(3, PGREP)[0] == 1, "the JVM outlived `broker stop`"
    assert await_registered(inventory.bootstrap, [1, 2], 30) == [1, 2]
    t0 = time.monotonic()
    start = ssh(inventory, 3, n.start_command(), timeout_s=10)
    assert start.returncode == 0, start.stderr
    assert time.monotonic() - t0 < 5, "`broker start` must return at once"
    again = ssh(inventory, 3, n.start_command())
    assert "already running" in again.stdout
    assert len(double.exec(3, PGREP)[1].split()) == 1, "a second start made a second JVM"
    assert await_registered(inventory.bootstrap, [1, 2, 3], 90) == [1, 2, 3]


def test_a_killed_jvm_leaves_the_node_up(double: SshDouble, inventory: Inventory) -> None:
    killed = ssh(inventory, 2, "pkill -9 -f 'kafka\\.Kafka'; sleep 1; /opt/kt/broker status")
    assert killed.returncode == 3, killed.stdout + killed.stderr
    double.containers[2].reload()
    assert double.containers[2].status == "running"
    assert ssh(inventory, 2, "ps -eo stat= | grep -c '^Z' || true").stdout.strip() == "0"
    assert ssh(inventory, 2, inventory.node(2).start_command()).returncode == 0
    # Node 2's own port: the killed broker stays registered until its session times
    # out, so the whole bootstrap could answer for it before it is back.
    alone = f"127.0.0.1:{double.client_ports[2]}"
    assert await_registered(alone, [1, 2, 3], 90) == [1, 2, 3]


# --- the fault verbs on the nodes, one by one -------------------------------------------


@pytest.fixture(scope="module")
def ssh_cluster(double: SshDouble) -> Iterator[SshCluster]:
    spec = ClusterSpec(kind="ssh", inventory=str(double.inventory_path), brokers=3)
    c = SshCluster(spec, load_inventory(double.inventory_path))
    c.start()
    yield c
    c.heal_all()
    c.teardown()


def _rules(double: SshDouble, node: int, table: str = "filter") -> str:
    return double.exec(node, f"iptables -w -t {table} -S {netfaults.CHAIN}")[1]


@pytest.mark.parametrize(
    ("toxic", "table", "shows"),
    [
        (Toxic("kt-loss", "loss", "downstream", {"percent": 30}), "filter", "statistic"),
        (Toxic("kt-dup", "duplicate", "downstream", {"percent": 30}), "mangle", "TEE"),
        (Toxic("kt-cut", "timeout", "upstream", {"timeout": 0}), "filter", "DROP"),
        (Toxic("kt-rst", "reset_peer", "upstream", {}), "filter", "tcp-reset"),
    ],
)
def test_a_packet_fault_is_a_rule_on_the_node_until_removed(
    double: SshDouble, ssh_cluster: SshCluster, toxic: Toxic, table: str, shows: str
) -> None:
    link = LinkId(2, 1, "internal")
    seen = ssh_cluster.add_toxic(link, toxic)
    assert seen == {"node": 1, "rules": 1, "chain": netfaults.CHAIN}
    assert shows in _rules(double, 1, table) and shows not in _rules(double, 2, table)
    ssh_cluster.remove_toxic(link, toxic.name)
    assert shows not in _rules(double, 1, table)


def test_bandwidth_is_a_token_bucket_on_the_nodes_interface(
    double: SshDouble, ssh_cluster: SshCluster
) -> None:
    link = LinkId(None, 3, "client")
    seen = ssh_cluster.add_toxic(link, Toxic("kt-bw", "bandwidth", "downstream", {"rate": 64}))
    assert seen["qdisc"] == "tbf" and seen["scope"] == "eth0"
    assert "tbf" in double.exec(3, "tc qdisc show dev eth0")[1]
    ssh_cluster.remove_toxic(link, "kt-bw")
    assert "tbf" not in double.exec(3, "tc qdisc show dev eth0")[1]


def test_a_full_disk_leaves_nothing_free_until_freed(
    double: SshDouble, ssh_cluster: SshCluster
) -> None:
    free = "df -B1 --output=avail /var/lib/kafka/data | tail -1"
    before = int(double.exec(2, free)[1])
    seen = ssh_cluster.fill_disk(2)
    assert seen["free_bytes"] < 1024 * 1024 and int(double.exec(2, free)[1]) < 1024 * 1024
    freed = ssh_cluster.free_disk(2)
    assert int(double.exec(2, free)[1]) > before // 2
    assert freed["halted"] in (True, False)
    assert double.exec(2, "/opt/kt/broker status")[0] == 0


def test_a_clock_the_node_does_not_own_is_refused(ssh_cluster: SshCluster) -> None:
    with pytest.raises(TrialError, match="does not allow its clock to be set"):
        ssh_cluster.refuse_unmakeable(None, clock=True)
    with pytest.raises(RemoteError, match="does not allow its clock"):
        ssh_cluster.set_clock(1, 30)


def test_a_reassignment_moves_a_partition_of_the_users_cluster(
    ssh_cluster: SshCluster, rec: NemesisRecorder
) -> None:
    """The Admin API's reassignment on nodes kafka-trial did not build: the move asked
    through the admin tool, seen going or done, and its heal waits until the replicas
    and ISR are the target, as the controller shows them."""
    topic = TopicSpec(name="kt-ssh-reassign", partitions=1, replication_factor=2)
    ssh_cluster.create_topic(topic)
    try:
        assert ssh_cluster.await_in_sync(topic.name, 60)
        before = list(ssh_cluster.partitions(topic.name)[0].replicas)
        nem = Nemesis(ssh_cluster, rec)
        nem.apply(Reassign(topic.name, 0), pick=0)
        ops = read_history(rec.history.path).ops
        (done,) = [o for o in ops if o.f == "reassign" and o.type != "invoke"]
        assert done.type == "ok", done
        assert done.value["from"] == before and done.value["to"] != before
        nem.heal()
        ops = read_history(rec.history.path).ops
        (settled,) = [o for o in ops if o.f == "reassign-settle" and o.type != "invoke"]
        assert settled.type == "ok", settled
        now = ssh_cluster.partitions(topic.name)[0]
        assert list(now.replicas) == done.value["to"]
        assert set(now.isr) == set(done.value["to"])
    finally:
        ssh_cluster.delete_topics([topic.name])


def test_heal_all_leaves_nothing_of_kafka_trial_and_every_broker_running(
    double: SshDouble, ssh_cluster: SshCluster
) -> None:
    ssh_cluster.cut(LinkId(1, 3, "controller"), "reject")
    ssh_cluster.pause_node(1)
    ssh_cluster.add_toxic(
        LinkId(None, 2, "client"), Toxic("bw", "bandwidth", "downstream", {"rate": 64})
    )
    assert any(_chain_rules(double).values())
    ssh_cluster.heal_all()
    assert _chain_rules(double) == {j: [] for j in double.node_ids}
    pid = double.exec(1, PGREP)[1].split()[0]
    assert double.exec(1, f"sed -n 's/^State:\\s*//p' /proc/{pid}/status")[1][:1] != "T"


# --- whole runs on the user's nodes --------------------------------------------------

# Each run's fault phase: one period of the presets' faults fits (nemesis/schedule.py).
RUN_S = 16
# Values/s offered: what a verdict on faults needs, not a load test; the judging of
# the default 15,000 cost more of the suite's time than the runs themselves.
RATE = 3000
CAMPAIGN_LIMIT_S = 900


def _kt(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_trial", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def _chain_rules(double: SshDouble) -> dict[int, list[str]]:
    """kafka-trial's rules and qdisc on each node, as the node's own kernel lists them."""
    out = {}
    for j in double.node_ids:
        _, text = double.exec(j, netfaults.leftovers("eth0"))
        out[j] = [ln for ln in text.splitlines() if ln.strip()]
    return out


@pytest.fixture(scope="module")
def ssh_campaign(double: SshDouble, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """safe, acks1 and leader-epoch on the SSH kind, in one campaign (one judging
    process, each run judged while the next one runs)."""
    root = tmp_path_factory.mktemp("ssh-campaign")
    campaign = {
        "name": "ssh",
        "presets": ["safe", "acks1", "leader-epoch"],
        "seeds": [SEED],
        "duration_s": RUN_S,
        "overrides": {
            "cluster": {"kind": "ssh", "inventory": str(double.inventory_path), "brokers": 3},
            "producer": {"target_rate": RATE},
        },
    }
    (root / "campaign.yaml").write_text(yaml.safe_dump(campaign))
    cmd = [sys.executable, "-m", "kafka_trial", "campaign", "-c", str(root / "campaign.yaml")]
    cmd += ["--runs-dir", str(root / "runs")]
    with (root / "stdout").open("w") as out, (root / "stderr").open("w") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        try:
            child.wait(CAMPAIGN_LIMIT_S)
        except subprocess.TimeoutExpired:
            stop_stuck(child, root / "runs")
    (camp,) = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return camp


SEED = 2


def _campaign_run(camp: Path, preset: str) -> tuple[Path, list[Op], dict[str, Any]]:
    state = json.loads((camp / "campaign.json").read_text())
    entry = state["runs"].get(f"{preset}-s{SEED}", {"status": "never started"})
    run_dir = camp / f"{preset}-s{SEED}"
    if entry.get("status") != "done" or not (run_dir / "results.json").is_file():
        err = (camp.parent.parent / "stderr").read_text(errors="replace")[-4000:]
        pytest.fail(f"campaign run {preset}: {entry}\n{err}", pytrace=False)
    ops = read_history(run_dir / "history.jsonl").ops
    return run_dir, ops, json.loads((run_dir / "results.json").read_text())


def _faults(ops: list[Op]) -> list[Op]:
    return [o for o in ops if o.process == "nemesis" and o.type == "ok" and o.f in FAULT_OPS]


@pytest.mark.parametrize("preset", ["safe", "acks1", "leader-epoch"])
def test_a_preset_judges_the_users_nodes_as_the_docker_kind(
    ssh_campaign: Path, preset: str
) -> None:
    """safe and leader-epoch hold (VALID); acks1 may lose writes, which its claim (C2)
    allows, and gets a definite verdict; each with every fault read back on its node."""
    run_dir, ops, res = _campaign_run(ssh_campaign, preset)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["cluster_kind"] == "ssh" and info["kafka_version"].startswith("4.")
    forbidden = {k: n for k, n in ran(res).items() if n and k not in res["allowed"]}
    assert forbidden == {}, f"{preset}: {forbidden}"
    if preset != "acks1":
        assert res["valid"] is True, res.get("problems")
    assert res["valid"] in (True, False), f"no definite verdict: {res.get('problems')}"
    faults = _faults(ops)
    assert faults, f"{preset}: no fault took effect"
    for op in faults:
        seen = op.value.get("seen")
        assert seen, f"{op.f} recorded nothing it read back on a node: {op.value}"
        if op.f == "kill":
            assert all(x["gone"] and x["signal"] == "KILL" for xs in seen.values() for x in xs)
        if op.f == "pause":
            assert all(x["state"] == "T" for xs in seen.values() for x in xs)
        if op.f == "partition":
            assert all(x["chain"] == netfaults.CHAIN for xs in seen.values() for x in xs)


def test_an_ssh_run_leaves_no_rule_and_cuts_the_nodes_logs_to_its_span(
    ssh_campaign: Path, double: SshDouble
) -> None:
    run_dir, _, _ = _campaign_run(ssh_campaign, "safe")
    assert _chain_rules(double) == {j: [] for j in double.node_ids}
    logs = sorted((run_dir / "logs").glob("kafka-*-server.log"))
    assert len(logs) == 3
    spec = json.loads((run_dir / "spec.json").read_text())
    topic = spec["topic"]["name"]
    assert topic.startswith("trial-"), "an SSH run's topic has a name of its own"
    text = logs[0].read_bytes()
    stamps = [t for ln in text.splitlines() if (t := log_window.stamp_of(ln)) is not None]
    assert stamps, "the brokers' log lines carry no time stamp"
    made = (run_dir / "spec.json").stat().st_mtime
    # Lines from before the run (the double's start) are cut away.
    assert min(stamps) >= made - 60, (min(stamps), made)


def test_a_run_killed_mid_partition_is_healed_from_the_inventory(
    double: SshDouble, tmp_path: Path
) -> None:
    """SIGKILL leaves kafka-trial's rules on the nodes; `heal --inventory` removes
    every one and leaves every broker running."""
    cmd = [sys.executable, "-m", "kafka_trial", "run", "--inventory", str(double.inventory_path)]
    cmd += ["--nemesis", "partition", "--duration", "60", "--no-analyze"]
    cmd += ["--runs-dir", str(tmp_path / "runs"), "--set", "nemesis.quiet_s=2"]
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(_chain_rules(double).values()):
            time.sleep(0.5)
        child.kill()
        child.wait(30)
        left = _chain_rules(double)
        assert any(left.values()), "the partition never showed on a node"
    finally:
        healed = _kt("heal", "--inventory", str(double.inventory_path))
    assert healed.returncode == 0, healed.stderr
    assert _chain_rules(double) == {j: [] for j in double.node_ids}
    for j in double.node_ids:
        assert double.exec(j, "/opt/kt/broker status")[0] == 0
    assert "rules or qdiscs removed" in healed.stdout


def test_observer_mode_judges_a_cluster_it_did_not_start_through_an_outside_kill(
    double: SshDouble, tmp_path: Path
) -> None:
    """`--bootstrap --nemesis none`: a broker SIGKILLed from outside mid-run and marked
    on the timeline; the verdict holds (VALID), and the run's topics are gone after."""
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "kafka_trial", "run", "--bootstrap", double.bootstrap]
    cmd += ["--nemesis", "none", "--duration", "20", "--rate", str(RATE), "--runs-dir", str(runs)]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    victim = double.node_ids[-1]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _histories(runs):
            time.sleep(0.5)
        time.sleep(8)  # into the load
        (run_dir,) = [p.parent for p in _histories(runs)]
        code, pid = double.exec(victim, PGREP)
        assert code == 0
        double.exec(victim, f"kill -KILL {pid.split()[0]}")
        marked = _kt("mark", str(run_dir), f"broker {victim} SIGKILLed from outside")
        assert marked.returncode == 0, marked.stderr
        time.sleep(4)
        double.exec(victim, "/opt/kt/broker start")
        out, _ = child.communicate(timeout=400)
    finally:
        if child.poll() is None:
            child.kill()
        double.exec(victim, "/opt/kt/broker start")
    assert child.returncode == 0, out[-3000:]
    res = json.loads((run_dir / "results.json").read_text())
    assert res["valid"] is True
    ops = read_history(run_dir / "history.jsonl").ops
    marks = [o for o in ops if o.f == "mark" and o.type == "info"]
    assert [o.value["text"] for o in marks] == [f"broker {victim} SIGKILLed from outside"]
    assert not _faults(ops), "observer mode injected a fault"
    topic = json.loads((run_dir / "spec.json").read_text())["topic"]["name"]
    left = AdminClient({"bootstrap.servers": double.bootstrap}).list_topics(timeout=10).topics
    assert topic not in left and f"{topic}-out" not in left


# --- bad input: one line naming the node and the fix, exit 3, before any fault ---------


def _histories(runs: Path) -> list[Path]:
    """The run's history once it exists (not through the `latest` link as well)."""
    if not runs.is_dir():
        return []
    return [d / "history.jsonl" for d in run_dirs(runs) if (d / "history.jsonl").is_file()]


def _bad_inventory(tmp_path: Path, inv: Inventory, node_update: dict[str, Any]) -> Path:
    data = inv.model_dump(mode="json")
    data["nodes"][0].update(node_update)
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(path: Path, tmp_path: Path, *extra: str) -> str:
    r = _kt(
        "run", "--inventory", str(path), "--preset", "safe", "--duration", "20",
        "--runs-dir", str(tmp_path / "runs"), *extra, timeout_s=180,
    )  # fmt: skip
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("kafka-trial:")]
    assert len(lines) == 1 and "-- fix:" in lines[0], r.stderr[-2000:]
    history = list((tmp_path / "runs").glob("*/history.jsonl"))
    faults = [ln for h in history for ln in h.read_text().splitlines() if '"kill"' in ln]
    assert faults == [], "a fault came before the refusal"
    return lines[0]


@pytest.mark.parametrize(
    ("update", "said"),
    [
        ({"ssh_port": 1}, "cannot be reached over SSH"),
        ({"pgrep": "no-such-broker-[x]"}, "no broker process found"),
        ({"node_id": 7}, "do not match the cluster's brokers"),
    ],
)
def test_a_bad_inventory_is_refused_naming_the_node(
    inventory: Inventory, tmp_path: Path, update: dict[str, Any], said: str
) -> None:
    line = _refused(_bad_inventory(tmp_path, inventory, update), tmp_path)
    assert said in line
    if said != "do not match the cluster's brokers":
        assert "node 1" in line


def test_a_refused_key_is_named(inventory: Inventory, tmp_path: Path) -> None:
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    line = _refused(_bad_inventory(tmp_path, inventory, {"key": str(key)}), tmp_path)
    assert "refused the key" in line and "node 1" in line


def test_a_node_without_tc_is_refused(
    double: SshDouble, inventory: Inventory, tmp_path: Path
) -> None:
    first = double.node_ids[0]
    double.exec(first, "mv /usr/sbin/tc /usr/sbin/tc.off")
    try:
        line = _refused(Path(double.inventory_path), tmp_path)
    finally:
        double.exec(first, "mv /usr/sbin/tc.off /usr/sbin/tc")
    assert "has no tc" in line and f"node {first}" in line


def test_latency_is_refused_where_the_kernel_has_no_netem(
    double: SshDouble, tmp_path: Path
) -> None:
    code, _ = double.exec(double.node_ids[0], netfaults.netem_available("eth0"))
    if code == 0:
        pytest.skip("this kernel has netem: latency is made, not refused")
    line = _refused(
        Path(double.inventory_path), tmp_path, "--nemesis", "degrade",
        "--set", "nemesis.degrade.type=latency",
    )  # fmt: skip
    assert "needs the netem qdisc" in line


def test_a_bootstrap_address_that_does_not_answer_is_refused(tmp_path: Path) -> None:
    r = _kt("run", "--bootstrap", "127.0.0.1:1", "--nemesis", "none", timeout_s=120)
    assert r.returncode == 3, r.stderr[-2000:]
    assert "the bootstrap address 127.0.0.1:1 does not answer" in r.stderr
