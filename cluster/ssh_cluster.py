"""`cluster.kind: ssh`: a cluster kafka-trial did not build, driven over SSH as Jepsen
drives its nodes. Process faults are signals (pgrep, kill), link faults iptables rules
in kafka-trial's own chain on the node a link ends at, packet faults netem where the
kernel has it and otherwise iptables' statistic match, TEE and tbf. Observation is the
Docker kind's: the admin API, and each node's quorum-state file read over SSH.

It implements the ClusterControl verbs the nemesis acts through; each fault verb
returns what it read back on the node, and raises when it did not take effect."""

from __future__ import annotations

import contextlib
import secrets
import shlex
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kafka_trial.cluster import log_window, netfaults
from kafka_trial.cluster.admin_tool import AdminTool
from kafka_trial.cluster.control import BOTH_STREAMS, CutMode, LinkId, PartitionState, Stream
from kafka_trial.cluster.inventory import Inventory, Node
from kafka_trial.cluster.observe import Observer
from kafka_trial.cluster.reassignment import Reassignment, Reassigns
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.cluster.ssh import Remote, RemoteError
from kafka_trial.cluster.ssh_nodes import SshNode
from kafka_trial.cluster.toxiproxy import Toxic
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log

# The tools each node needs, and what for.
_TOOLS = {
    "pgrep": "finding the broker",
    "kill": "signals",
    "iptables": "link faults",
    "tc": "packet faults",
}
# Collected per log file: the tail a run can have written, not a node's whole history.
LOG_TAIL_BYTES = 32 * 1024 * 1024


# The Kafka version whose client jars the admin tool is built against here.
ADMIN_CLIENT_VERSION = "4"


@dataclass
class SshNodes:
    """The NodeProbe of observation, over SSH."""

    nodes: dict[int, SshNode]

    def ids(self) -> list[int]:
        return sorted(self.nodes)

    def direct_address(self, node: int) -> str | None:
        return None  # clients reach a node only through the inventory's bootstrap

    def running(self, node: int) -> bool | None:
        try:
            return self.nodes[node].pid() is not None
        except (RemoteError, TrialError):
            return None

    def failure(self, node: int) -> str | None:
        return None  # a user's broker is restarted by its own unit, not judged here

    def quorum_state(self, node: int) -> str | None:
        return self.nodes[node].quorum_state()


@dataclass
class SshCluster(Reassigns):
    spec: ClusterSpec
    inventory: Inventory
    client_config: dict[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    started_at: float = field(default_factory=time.time)
    _applied: dict[tuple[LinkId, str], list[str]] = field(default_factory=dict, init=False)
    _netem: dict[int, bool] = field(default_factory=dict, init=False)
    # Each node's clock bump in force, so that a reset goes back by exactly it.
    _offsets: dict[int, int] = field(default_factory=dict, init=False)
    # Set once every node passed its checks: before that no fault can have run, and a
    # node that failed them (unreachable, no broker) has nothing of ours to heal.
    _checked: bool = field(default=False, init=False)
    _tool: AdminTool | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        t = self.inventory.connect_timeout_s
        self.nodes = {n.node_id: SshNode(n, Remote(n, t)) for n in self.inventory.nodes}
        self.observe = Observer(
            SshNodes(self.nodes),
            len(self.nodes),
            lambda: self.inventory.bootstrap,
            self.client_config,
        )
        self.moves = Reassignment(lambda: self.bootstrap, self.observe.admin, self._admin_tool)

    # --- what the runner asks of any cluster --------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.nodes)

    @property
    def brokers(self) -> dict[int, SshNode]:
        return self.nodes

    @property
    def client_lanes(self) -> int:
        return 1

    @property
    def bootstrap(self) -> str:
        return self.inventory.bootstrap

    def bootstrap_for(self, lane: int) -> str:
        return self.inventory.bootstrap

    def describe(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": "ssh",
            "nodes": self.node_ids,
            "bootstrap": [self.bootstrap],
        }

    def start(self) -> None:
        """Check every node before any fault: reachable, the key accepted, the tools
        there, a broker running, the chain in place; one line naming the node if not."""
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            for node_id, netem in zip(
                self.nodes, pool.map(self._preflight, self.nodes.values()), strict=True
            ):
                self._netem[node_id] = netem
        self._checked = True

    def _preflight(self, n: SshNode) -> bool:
        n.remote.connect()
        missing = [
            f"{tool} ({why})"
            for tool, why in _TOOLS.items()
            if not n.remote.run(f"command -v {tool}", 15).ok
        ]
        if missing:
            raise TrialError(
                f"{n.node.label} has no {', '.join(missing)}",
                "install iptables and iproute2 (tc) and procps on the node",
            )
        if n.pid() is None:
            raise TrialError(
                f"{n.node.label}: no broker process found (pgrep -f {n.node.pgrep!r})",
                "start the broker, or fix the node's `pgrep` pattern in the inventory",
            )
        a = n.remote.run(netfaults.setup(), 30)
        if not a.ok:
            raise TrialError(
                f"{n.node.label}: iptables refused to make the {netfaults.CHAIN} chain: "
                f"{(a.err or a.out).strip()[-200:]}",
                "log in as root, or set `sudo: true` with passwordless sudo, and give the "
                "node the NET_ADMIN capability",
            )
        if self.inventory.packet_faults == "iptables":
            return False
        return n.remote.run(netfaults.netem_available(n.node.interface), 15).ok

    def kafka_version(self) -> str | None:
        """The version the brokers run, as the first node that shows it says."""
        for n in self.nodes.values():
            try:
                found = n.kafka_version()
            except (RemoteError, TrialError):
                continue
            if found:
                return found
        return None

    def refuse_unmakeable(self, toxic_type: str | None, clock: bool) -> None:
        """Before any fault: a fault a node cannot make, refused with the reason."""
        for j, n in self.nodes.items():
            if toxic_type in ("latency", "reorder", "corrupt") and not self._netem.get(j):
                raise TrialError(
                    f"{n.node.label}: {toxic_type} needs the netem qdisc, which this node's "
                    "kernel does not have (tc: Specified qdisc kind is unknown)",
                    "use nemesis.degrade.type loss, duplicate, bandwidth, timeout or "
                    "reset_peer, which iptables and tbf make, or load sch_netem",
                )
            if clock and not n.node.clock:
                raise TrialError(
                    f"{n.node.label} does not allow its clock to be set (inventory clock: false)",
                    "set `clock: true` for nodes with a clock of their own, or drop `clock`",
                )

    def await_registered(self, timeout_s: float) -> None:
        """Every inventory node registered, and no other: a node id that the cluster's
        metadata does not know would aim faults at the wrong broker."""
        deadline = time.monotonic() + timeout_s
        seen: list[int] = []
        while time.monotonic() < deadline:
            try:
                seen = sorted(self.observe.metadata(None, 5).brokers)
            except KafkaException:
                seen = []
            if seen == self.node_ids:
                return
            if seen and not set(seen) <= set(self.node_ids):
                break
            time.sleep(1)
        if not seen:
            raise TrialError(
                f"the bootstrap address {self.bootstrap} does not answer",
                "check the inventory's `bootstrap`, and that the client listeners are reachable",
            )
        raise TrialError(
            f"the inventory's node ids {self.node_ids} do not match the cluster's brokers {seen}",
            "set each node's node_id to its broker's node.id",
        )

    def create_topic(self, topic: TopicSpec) -> None:
        self.observe.create_topic(topic)

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        return self.observe.await_in_sync(topic, timeout_s)

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        return self.observe.partitions(topic, timeout_s)

    def active_controller(self) -> int | None:
        return self.observe.active_controller()

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> None:
        self.observe.elect_leader(topic, partition, unclean)

    def admin(self) -> AdminClient:
        return self.observe.admin()

    # --- reassignment (cluster/reassignment.py) --------------------------------------

    def _admin_tool(self) -> AdminTool:
        # The tool is a client: built against the newest 4.x jars, whose Admin client
        # speaks to brokers back to 2.1, whatever version the user's nodes run (its
        # source uses 3.9's voter API, so an older version's jars would not build it).
        if self._tool is None:
            self._tool = AdminTool.for_version(ADMIN_CLIENT_VERSION)
        return self._tool

    def delete_topics(self, names: Sequence[str], timeout_s: float = 30) -> None:
        self.observe.delete_topics(names, timeout_s)

    def engine_alive(self) -> bool:
        return True  # no engine: a node that stops answering fails its own commands

    def collect_logs(self, dest: Path, since: float | None = None) -> None:
        """Each node's log files over SSH, cut to the run's time span."""
        dest.mkdir(parents=True, exist_ok=True)
        if not self._checked:
            return  # a node that failed its checks may not be reachable at all
        start, end = since or self.started_at, time.time()
        for j, n in self.nodes.items():
            for path in n.node.log_files:
                try:
                    text = n.remote.read_bytes(path, LOG_TAIL_BYTES)
                except (RemoteError, TrialError) as e:
                    log(f"could not read {path} on node {j}: {e}")
                    continue
                name = f"kafka-{j}-{Path(path).name}"
                (dest / name).write_bytes(log_window.cut(text, start, end))

    def teardown(self) -> None:
        self.observe.close()
        for n in self.nodes.values():
            n.remote.close()

    # --- processes ------------------------------------------------------------------------

    def kill_node(self, node: int) -> dict[str, Any]:
        return self.nodes[node].kill()

    def stop_node(self, node: int) -> dict[str, Any]:
        return self.nodes[node].stop()

    def start_node(self, node: int) -> str | None:
        self.nodes[node].start()
        return None

    def pause_node(self, node: int) -> dict[str, Any]:
        return self.nodes[node].pause()

    def resume_node(self, node: int) -> str | None:
        self.nodes[node].resume()
        return None

    def fill_disk(self, node: int) -> dict[str, Any]:
        return self.nodes[node].fill_disk()

    def free_disk(self, node: int) -> dict[str, Any]:
        return self.nodes[node].free_disk()

    def wipe_node(self, node: int) -> None:
        raise RemoteError("wipe needs the Docker kind")

    def corrupt_segment(
        self, node: int, topic: str, partition: int, mode: Any, seed: int
    ) -> dict[str, Any]:
        raise RemoteError("corrupt needs the Docker kind")

    def lose_unfsynced(self, nodes: list[int]) -> dict[int, dict[str, Any]]:
        return {
            j: {"error": "power loss needs the Docker kind's write-back filesystem"} for j in nodes
        }

    def set_clock(self, node: int, offset_s: int) -> dict[str, Any]:
        """A bump of the node's wall clock by `offset_s` from true (0: back to true,
        as the clock was when the run began), measured against the harness's."""
        n = self.nodes[node]
        if not n.node.clock:
            raise RemoteError(f"{n.node.label} does not allow its clock to be set")
        step = int(offset_s) - self._offsets.get(node, 0)
        n.remote.check(f"date -u -s @$(( $(date +%s) + {step} ))")
        self._offsets[node] = int(offset_s)
        return {"asked_s": offset_s, "offset_s": round(self._measure(n), 3)}

    def strobe_clock(
        self, node: int, offset_s: int, period_ms: int, duration_s: float
    ) -> dict[str, Any]:
        raise RemoteError("a clock strobe needs the Docker kind's libfaketime")

    def _measure(self, n: SshNode) -> float:
        t0 = time.time()
        theirs = float(n.remote.check("date +%s.%N"))
        return theirs - (t0 + time.time()) / 2

    # --- links and packets --------------------------------------------------------------

    def _port(self, link: LinkId) -> int:
        ports = self.nodes[link.dst].node.ports
        return {"internal": ports.internal, "controller": ports.controller, "client": ports.client}[
            link.kind
        ]

    def _peer(self, link: LinkId) -> str | None:
        return None if link.src is None else self.nodes[link.src].node.address

    def _apply(self, link: LinkId, tag: str, rules: list[netfaults.Rule]) -> dict[str, Any]:
        n = self.nodes[link.dst]
        done: list[str] = []
        try:
            for r in rules:
                n.remote.check(r.add())
                done.append(r.delete())
                n.remote.check(r.present())
        except RemoteError:
            for undo in done:
                n.remote.run(undo)
            raise
        self._applied[(link, tag)] = done
        return {"node": link.dst, "rules": len(rules), "chain": netfaults.CHAIN}

    def _undo(self, link: LinkId, tag: str) -> None:
        n = self.nodes[link.dst]
        for cmd in self._applied.pop((link, tag), []):
            n.remote.check(cmd)

    def cut(
        self, link: LinkId, mode: CutMode = "drop", streams: tuple[Stream, ...] = BOTH_STREAMS
    ) -> dict[str, Any]:
        rules = netfaults.cut_rules(self._peer(link), self._port(link), streams, mode, link.label())
        return self._apply(link, "cut", rules)

    def uncut(self, link: LinkId) -> None:
        self._undo(link, "cut")

    def add_toxic(self, link: LinkId, toxic: Toxic) -> dict[str, Any]:
        n = self.nodes[link.dst]
        kind, a = toxic.type, toxic.attributes
        peer, port, tag = self._peer(link), self._port(link), f"{link.label()}:{toxic.name}"
        if kind in ("timeout", "reset_peer"):
            mode = "reject" if kind == "reset_peer" else "drop"
            rules = netfaults.cut_rules(peer, port, (toxic.stream,), mode, tag)
            return self._apply(link, toxic.name, rules)
        if kind == "loss" and not self._netem.get(link.dst):
            p = float(a.get("percent", 10)) / 100
            return self._apply(link, toxic.name, [netfaults.loss_rule(peer, port, p, tag)])
        if kind == "duplicate" and not self._netem.get(link.dst):
            if peer is None:
                raise RemoteError(
                    "duplication without netem needs a peer node (TEE): not client links"
                )
            ip = n.remote.check(f"getent ahostsv4 {shlex.quote(peer)} | head -1").split()[0]
            p = float(a.get("percent", 10)) / 100
            return self._apply(link, toxic.name, [netfaults.duplicate_rule(ip, port, p, tag)])
        return self._shape(link, toxic)

    def _shape(self, link: LinkId, toxic: Toxic) -> dict[str, Any]:
        """A qdisc on the node's interface: everything it sends is shaped, not only the
        link's (the interface is what a qdisc owns); the completion says so."""
        n, a = self.nodes[link.dst], toxic.attributes
        iface = n.node.interface
        if toxic.type == "bandwidth":
            cmd = netfaults.rate(iface, int(a.get("rate", 100)) * 8)
        elif toxic.type in ("latency", *netfaults.PACKET_TOXICS) and self._netem.get(link.dst):
            cmd = netfaults.netem(iface, _netem_args(toxic))
        else:
            raise RemoteError(f"{n.node.label} cannot make a {toxic.type} fault")
        n.remote.check(cmd)
        n.remote.check(netfaults.qdisc_present(iface))
        self._applied[(link, toxic.name)] = [netfaults.qdisc_delete(iface)]
        return {"node": link.dst, "qdisc": cmd.split(" root ")[1].split()[2], "scope": iface}

    def remove_toxic(self, link: LinkId, name: str) -> None:
        self._undo(link, name)

    # --- healing ---------------------------------------------------------------------------

    def heal_all(self) -> None:
        """Every rule and qdisc of kafka-trial gone, every disk freed, every broker
        running and not stopped: what `kafka-trial heal --inventory` does too."""
        if not self._checked:
            return
        errors: list[str] = []
        for j, n in self.nodes.items():
            try:
                heal_node(n)
            except (RemoteError, TrialError) as e:
                errors.append(f"node {j}: {e}")
            if self._offsets.get(j):
                with contextlib.suppress(RemoteError, TrialError):
                    self.set_clock(j, 0)
        self._applied.clear()
        if errors:
            raise RuntimeError("; ".join(errors))


def _netem_args(t: Toxic) -> str:
    a = t.attributes
    if t.type == "latency":
        return f"delay {int(a.get('latency', 100))}ms {int(a.get('jitter', 0))}ms"
    return f"{t.type} {float(a.get('percent', 10)):g}%"


def heal_node(n: SshNode) -> dict[str, Any]:
    """Undo whatever kafka-trial left on a node, then read back that nothing is left."""
    node: Node = n.node
    n.remote.check(netfaults.heal(node.interface))
    n.remote.run(f"rm -f {shlex.quote(node.data_dirs[0].rstrip('/') + '/.kafka-trial-fill')}")
    started = n.start()
    left = n.remote.run(netfaults.leftovers(node.interface)).out.strip()
    if left:
        raise RemoteError(f"{node.label}: still there after the heal: {left[:300]}")
    return started


def heal_inventory(path: str) -> list[str]:
    """`kafka-trial heal --inventory`: what a crashed run left on each node, undone and
    read back; one line per node. A node it cannot heal raises, naming it."""
    from kafka_trial.cluster.inventory import load_inventory

    inv = load_inventory(path)
    lines = []
    for node in inv.nodes:
        n = SshNode(node, Remote(node, inv.connect_timeout_s))
        try:
            before = n.remote.run(netfaults.leftovers(node.interface)).out.strip()
            got = heal_node(n)
        except RemoteError as e:
            raise TrialError(str(e), "log in to the node and look; then run heal again") from None
        finally:
            n.remote.close()
        undone = len(before.splitlines())
        lines.append(f"{node.label}: {undone} rules or qdiscs removed; broker {_said(got)}")
    return lines


def _said(got: dict[str, Any]) -> str:
    if got.get("started"):
        return f"started (pid {got['pid']})"
    if got.get("resumed"):
        return f"resumed (pid {got['pid']})"
    return f"running (pid {got.get('pid')})"
