"""Packet faults on the Docker kind: iptables rules and a qdisc in a node's network
namespace, which its Toxiproxy sidecar owns (the broker joins it), made with the
host's own iptables and tc through nsenter. Toxiproxy works on TCP streams and
cannot lose, duplicate or rate-limit packets; a namespace's kernel can.

The rules and the qdisc are cluster/netfaults.py's, on the namespace's interface to
the run's network (eth0): everything the node sends to its peers and its clients.
They live as long as the sidecar: a crashed run's go with its containers, and a
heal flushes them. Reordering and corruption need netem, which these machines'
kernel has not, or a userspace queue kafka-trial does not have yet.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Literal

from docker.models.containers import Container
from kafka_trial.cluster import netfaults
from kafka_trial.cluster.host import apt_install, can_self_install
from kafka_trial.contracts.errors import TrialError

INTERFACE = "eth0"
PacketKind = Literal["loss", "duplicate", "rate"]


@dataclass(frozen=True)
class Namespace:
    """A node's network namespace, entered through its sidecar's process."""

    sidecar: Container
    node: int

    def run(self, script: str, check: bool = True) -> str:
        self.sidecar.reload()
        pid = self.sidecar.attrs["State"]["Pid"]
        if not pid:
            raise TrialError(
                f"node {self.node}'s sidecar is not running", "its network namespace is gone"
            )
        res = subprocess.run(
            ["nsenter", "-t", str(pid), "-n", "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if check and res.returncode != 0:
            raise RuntimeError(
                f"node {self.node}'s namespace: {script.split()[0]} failed: "
                f"{(res.stderr.strip().splitlines() or [str(res.returncode)])[-1]}"
            )
        return res.stdout


def _tag(node: int) -> str:
    return f"packet-{node}"


def rules_for(
    kind: PacketKind, probability: float, peers: list[str], node: int
) -> list[netfaults.Rule]:
    """Loss of anything the node sends out; duplicates of what it sends each peer (TEE
    clones a packet to an address, so one rule per peer's)."""
    comment = f"-m comment --comment kt:{_tag(node)}"
    chance = f"-m statistic --mode random --probability {probability:.4f}"
    if kind == "loss":
        return [netfaults.Rule(f"-o {INTERFACE} -p tcp {chance} {comment} -j DROP")]
    if kind == "duplicate":
        return [
            netfaults.Rule(
                f"-o {INTERFACE} -p tcp -d {ip} {chance} {comment} -j TEE --gateway {ip}",
                table="mangle",
            )
            for ip in peers
        ]
    return []


def _ensure_tools() -> None:
    """The host's iptables and tc act inside the namespace (Docker's own package
    brings iptables; iproute2 brings tc)."""
    missing = [
        pkg
        for tool, pkg in (("iptables", "iptables"), ("tc", "iproute2"))
        if not shutil.which(tool)
    ]
    if not missing:
        return
    if not can_self_install():
        raise TrialError(
            f"packet faults need {', '.join(missing)} on the host",
            f"apt-get install {' '.join(missing)}",
        )
    apt_install(*missing)


def add(ns: Namespace, kind: PacketKind, probability: float, kbit: int, peers: list[str]) -> dict:
    """Make the fault and read it back: the rules `iptables -C` finds, or the qdisc."""
    _ensure_tools()
    ns.run(netfaults.setup())
    if kind == "rate":
        ns.run(netfaults.rate(INTERFACE, kbit))
        ns.run(netfaults.qdisc_present(INTERFACE))
        return {"qdisc": f"tbf {kbit}kbit on {INTERFACE}"}
    rules = rules_for(kind, probability, peers, ns.node)
    if not rules:
        raise RuntimeError(f"node {ns.node} has no peer to duplicate packets to")
    for r in rules:
        ns.run(r.add())
    for r in rules:
        ns.run(r.present())
    return {"rules": len(rules), "kind": kind, "probability": probability}


_COUNTS = re.compile(r"^\s*(\d+)\s+\d+\s+(DROP|TEE)\b", re.M)


def matched(ns: Namespace) -> int:
    """Packets the node's rules matched so far: what the fault verifiably did."""
    out = ns.run(
        f"iptables -w -L {netfaults.CHAIN} -v -x -n 2>/dev/null; "
        f"iptables -w -t mangle -L {netfaults.CHAIN} -v -x -n 2>/dev/null",
        check=False,
    )
    return sum(int(n) for n, _ in _COUNTS.findall(out))


_SHAPED = re.compile(
    rf"qdisc tbf {netfaults.QDISC_HANDLE} root.*?Sent \d+ bytes (\d+) pkt \(dropped (\d+), "
    r"overlimits (\d+)",
    re.S,
)


def shaped(ns: Namespace) -> dict[str, int]:
    """What our rate qdisc sent, dropped and held back (overlimits); {} without one."""
    m = _SHAPED.search(ns.run(f"tc -s qdisc show dev {INTERFACE}", check=False))
    if m is None:
        return {}
    sent, dropped, over = (int(x) for x in m.groups())
    return {"shaped_packets": sent, "dropped": dropped, "overlimits": over}


def clear(ns: Namespace) -> dict:
    """Everything gone, and what the rules matched or the qdisc shaped; what is left,
    if anything."""
    found = {"matched_packets": matched(ns)} | shaped(ns)
    ns.run(netfaults.heal(INTERFACE), check=False)
    left = ns.run(netfaults.leftovers(INTERFACE), check=False).strip()
    return found | ({"left": left} if left else {})
