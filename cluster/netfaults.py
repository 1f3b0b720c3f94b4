"""Link and packet faults on a node's own kernel, as Jepsen makes them: iptables rules
in one chain kafka-trial owns, and qdiscs on one interface. Pure command builders:
`SshCluster` runs them over SSH and reads back what they did.

Everything kafka-trial adds is findable, so a crashed run can be undone: every rule
lives in CHAIN (jumped to from INPUT and OUTPUT, and from mangle's OUTPUT for TEE),
and every qdisc is the root qdisc of the node's interface with handle QDISC_HANDLE.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

# Packet faults: a node's kernel makes them (netem, or iptables where it lacks netem);
# Toxiproxy works on TCP streams and cannot, so only cluster.kind ssh has them.
PACKET_TOXICS = ("loss", "duplicate", "reorder", "corrupt")
# Toxiproxy's stream toxics, which no kernel qdisc or rule stands in for.
STREAM_TOXICS = ("slicer", "limit_data", "slow_close")

CHAIN = "KT-TRIAL"
QDISC_HANDLE = "7a71:"  # "kt": a root qdisc with this handle is ours
Direction = Literal["in", "out"]


def setup() -> str:
    """The chain and its jumps, made once a run, whatever a crashed run left."""
    parts = [f"iptables -w -N {CHAIN} 2>/dev/null || true"]
    for hook in ("INPUT", "OUTPUT"):
        parts.append(
            f"iptables -w -C {hook} -j {CHAIN} 2>/dev/null || iptables -w -I {hook} 1 -j {CHAIN}"
        )
    parts.append(f"iptables -w -t mangle -N {CHAIN} 2>/dev/null || true")
    parts.append(
        f"iptables -w -t mangle -C OUTPUT -j {CHAIN} 2>/dev/null || "
        f"iptables -w -t mangle -I OUTPUT 1 -j {CHAIN}"
    )
    return " && ".join(parts)


def heal(interface: str) -> str:
    """Everything kafka-trial added, gone: both chains flushed, and our root qdisc."""
    return "; ".join(
        [
            f"iptables -w -F {CHAIN} 2>/dev/null",
            f"iptables -w -t mangle -F {CHAIN} 2>/dev/null",
            f"tc qdisc show dev {interface} | grep -q ' {QDISC_HANDLE} root' "
            f"&& tc qdisc del dev {interface} root",
            "true",
        ]
    )


def leftovers(interface: str) -> str:
    """What is left of kafka-trial on a node: its rules, and our qdisc if present."""
    return (
        f"iptables -w -S {CHAIN} 2>/dev/null | grep -v '^-N'; "
        f"iptables -w -t mangle -S {CHAIN} 2>/dev/null | grep -v '^-N'; "
        f"tc qdisc show dev {interface} | grep 'qdisc .* {QDISC_HANDLE} root' || true"
    )


@dataclass(frozen=True)
class Rule:
    """One iptables rule in CHAIN: `spec` is everything after the chain name."""

    spec: str
    table: str = "filter"

    def _cmd(self, op: str) -> str:
        t = "" if self.table == "filter" else f"-t {self.table} "
        return f"iptables -w {t}{op} {CHAIN} {self.spec}"

    def add(self) -> str:
        return self._cmd("-A")

    def delete(self) -> str:
        # Deleting a rule that is gone (a heal-all came first) is not an error.
        return self._cmd("-D") + " 2>/dev/null || true"

    def present(self) -> str:
        return self._cmd("-C")


def _comment(tag: str) -> str:
    return f"-m comment --comment {shlex.quote('kt:' + tag)}"


def cut_rules(
    peer: str | None, port: int, streams: tuple[str, ...], mode: str, tag: str
) -> list[Rule]:
    """The rules on the node a link ends at, for the connections `peer` opens to its
    `port` (peer None: from anywhere, the clients): upstream is what the peer sends,
    downstream what the node answers. Reject answers a TCP reset, as a closed port."""
    target = "REJECT --reject-with tcp-reset" if mode == "reject" else "DROP"
    rules = []
    if "upstream" in streams:
        src = f"-s {peer} " if peer else ""
        rules.append(Rule(f"-p tcp {src}--dport {port} {_comment(tag)} -j {target}"))
    if "downstream" in streams:
        dst = f"-d {peer} " if peer else ""
        rules.append(Rule(f"-p tcp {dst}--sport {port} {_comment(tag)} -j {target}"))
    return rules


def loss_rule(peer: str | None, port: int, probability: float, tag: str) -> Rule:
    """Random loss of what the node sends on the link (the statistic match)."""
    dst = f"-d {peer} " if peer else ""
    return Rule(
        f"-p tcp {dst}--sport {port} -m statistic --mode random "
        f"--probability {probability:.4f} {_comment(tag)} -j DROP"
    )


def duplicate_rule(peer_ip: str, port: int, probability: float, tag: str) -> Rule:
    """Duplicated packets of what the node sends to `peer_ip`: TEE clones each one to
    the peer (TEE needs an address, not a name); the mangle table owns it."""
    return Rule(
        f"-p tcp -d {peer_ip} --sport {port} -m statistic --mode random "
        f"--probability {probability:.4f} {_comment(tag)} -j TEE --gateway {peer_ip}",
        table="mangle",
    )


def netem_available(interface: str) -> str:
    """Exits 0 where the kernel has the netem qdisc: added on a dummy handle and removed."""
    return (
        f"tc qdisc add dev {interface} root handle {QDISC_HANDLE} netem delay 1ms 2>/dev/null "
        f"&& tc qdisc del dev {interface} root"
    )


def netem(interface: str, args: str) -> str:
    return f"tc qdisc replace dev {interface} root handle {QDISC_HANDLE} netem {args}"


def rate(interface: str, kbit: int) -> str:
    """A token bucket on everything the node sends: its links slowed to `kbit`."""
    burst = max(1600, kbit * 1000 // 8 // 100)  # ~10 ms of the rate, at least a packet
    return (
        f"tc qdisc replace dev {interface} root handle {QDISC_HANDLE} tbf "
        f"rate {kbit}kbit burst {burst} latency 400ms"
    )


def rate_to(interface: str, kbit: int, ip: str) -> str:
    """A rate on what the node sends to one address only: an htb root whose one class
    has the rate, and a u32 filter on the destination that classifies into it. htb
    sends what no filter classifies (no default class) directly, unshaped; a tbf root
    cannot tell destinations apart, and this kernel has no prio qdisc."""
    burst = max(1600, kbit * 1000 // 8 // 100)
    cls = f"{QDISC_HANDLE}1"
    # Ours from before (a qdisc cannot be added over one) goes first: a fresh htb.
    return " && ".join(
        [
            qdisc_delete(interface),
            f"tc qdisc add dev {interface} root handle {QDISC_HANDLE} htb",
            f"tc class add dev {interface} parent {QDISC_HANDLE} classid {cls} htb "
            f"rate {kbit}kbit ceil {kbit}kbit burst {burst} cburst {burst}",
            f"tc filter add dev {interface} parent {QDISC_HANDLE} protocol ip prio 1 "
            f"u32 match ip dst {ip}/32 flowid {cls}",
        ]
    )


def qdisc_present(interface: str) -> str:
    return f"tc qdisc show dev {interface} | grep 'handle {QDISC_HANDLE}\\|{QDISC_HANDLE} root'"


def qdisc_delete(interface: str) -> str:
    return (
        f"tc qdisc show dev {interface} | grep -q '{QDISC_HANDLE}' "
        f"&& tc qdisc del dev {interface} root || true"
    )
