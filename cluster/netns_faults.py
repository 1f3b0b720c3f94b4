"""Packet faults on the Docker kind: iptables rules and a qdisc in a node's network
namespace, which its Toxiproxy sidecar owns (the broker joins it), made with the
host's own iptables and tc through nsenter. Toxiproxy works on TCP streams and
cannot lose, duplicate or rate-limit packets; a namespace's kernel can.

The rules and the qdisc are cluster/netfaults.py's, on the namespace's interface to
the run's network (eth0): everything the node sends to its peers and its clients, or,
aimed at one link, only what it sends to one peer's address (the rules match `-d`; the
rate is an htb class a u32 filter on that address classifies into).
They live as long as the sidecar: a crashed run's go with its containers, and a
heal flushes them.

Reordering and corruption would need netem, which these machines' kernel has not;
they are made in userspace instead. An NFQUEUE rule queues a share of what the node
sends to cluster/nfqueue_helper.py, started through nsenter so that its netlink
socket lives in the node's namespace: it holds each queued packet (reorder) or flips
one bit of its TCP payload (corrupt) before it lets it go. The rule bypasses the queue
while no helper is bound, so a helper that dies lets the packets pass; a helper whose
parent is gone exits; and a heal, or `kafka-trial heal`, ends any helper it finds in
the namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from docker.models.containers import Container
from kafka_trial.cluster import netfaults
from kafka_trial.cluster.host import apt_install, can_self_install
from kafka_trial.contracts.errors import TrialError

INTERFACE = "eth0"
PacketKind = Literal["loss", "duplicate", "rate", "reorder", "corrupt"]
QUEUED_KINDS = ("reorder", "corrupt")  # made by the userspace helper
HELPER_MODULE = "kafka_trial.cluster.nfqueue_helper"
QUEUE_BASE = 100  # node n's queue is 100 + n (queues are per namespace; this reads well)
READY_S = 20.0  # a cold interpreter and the bind; the helper says when it is bound


@dataclass(frozen=True)
class Namespace:
    """A node's network namespace, entered through its sidecar's process."""

    sidecar: Container
    node: int

    def pid(self) -> int:
        self.sidecar.reload()
        pid = self.sidecar.attrs["State"]["Pid"]
        if not pid:
            raise TrialError(
                f"node {self.node}'s sidecar is not running", "its network namespace is gone"
            )
        return int(pid)

    def run(self, script: str, check: bool = True) -> str:
        res = subprocess.run(
            ["nsenter", "-t", str(self.pid()), "-n", "sh", "-c", script],
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


def queue_for(node: int) -> int:
    return QUEUE_BASE + node


def rules_for(
    kind: PacketKind, probability: float, peers: list[str], node: int, to: str | None = None
) -> list[netfaults.Rule]:
    """Loss of anything the node sends out; duplicates of what it sends each peer (TEE
    clones a packet to an address, so one rule per peer's); anything it sends queued
    to the helper, which reorders or corrupts it (--queue-bypass: with no helper bound
    the packets pass, and the fault fails open, never wedging the node). With `to`,
    one link: only what the node sends to that address."""
    comment = f"-m comment --comment kt:{_tag(node)}"
    chance = f"-m statistic --mode random --probability {probability:.4f}"
    dst = f"-d {to} " if to else ""
    if kind == "loss":
        return [netfaults.Rule(f"-o {INTERFACE} -p tcp {dst}{chance} {comment} -j DROP")]
    if kind in QUEUED_KINDS:
        queue = f"-j NFQUEUE --queue-num {queue_for(node)} --queue-bypass"
        return [netfaults.Rule(f"-o {INTERFACE} -p tcp {dst}{chance} {comment} {queue}")]
    if kind == "duplicate":
        return [
            netfaults.Rule(
                f"-o {INTERFACE} -p tcp -d {ip} {chance} {comment} -j TEE --gateway {ip}",
                table="mangle",
            )
            for ip in ([to] if to else peers)
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


@dataclass(frozen=True)
class Helper:
    """A running nfqueue helper. nsenter execs it, so `proc` is the helper itself."""

    node: int
    queue: int
    proc: subprocess.Popen[str]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def counts(self, timeout_s: float = 5.0) -> dict[str, int]:
        """What it has done so far (SIGUSR1: it prints a line); {} if it says nothing."""
        if not self.alive() or self.proc.stdout is None:
            return {}
        self.proc.send_signal(signal.SIGUSR1)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        with contextlib.suppress(ValueError):
            said = json.loads(self.proc.stdout.readline()) if ready else {}
            if isinstance(said, dict) and isinstance(said.get("counts"), dict):
                return said["counts"]
        return {}


def helper_argv(ns: Namespace, mode: str, delay_ms: int, seed: int) -> list[str]:
    """The helper in the node's namespace; the module's name in its argv is how a heal
    finds a helper nobody holds (strays)."""
    return [
        *("nsenter", "-t", str(ns.pid()), "-n", sys.executable, "-m", HELPER_MODULE),
        *("--queue", str(queue_for(ns.node)), "--mode", mode),
        *("--delay-ms", str(delay_ms), "--seed", str(seed), "--tag", f"kt:{_tag(ns.node)}"),
    ]


def start_helper(ns: Namespace, mode: str, delay_ms: int, seed: int) -> Helper:
    """The helper, bound to the node's queue: it says so before this returns, or this
    raises and leaves no process behind."""
    proc = subprocess.Popen(
        helper_argv(ns, mode, delay_ms, seed),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Its own session: a Ctrl-C to the run reaches the run, whose heal then ends the
        # helper after letting its held packets go.
        start_new_session=True,
    )
    helper = Helper(ns.node, queue_for(ns.node), proc)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_S)
    line = proc.stdout.readline() if ready else ""
    if '"ready": true' not in line:
        said = stop_helper(helper).get("helper")
        raise RuntimeError(
            f"node {ns.node}'s nfqueue helper did not bind queue {helper.queue} "
            f"within {READY_S:g} s: {said}"
        )
    return helper


def bound(ns: Namespace, queue: int) -> dict[str, int]:
    """The kernel's view of the queue in the node's namespace: the reader's netlink
    port and how many packets it was given (ids run from 1); {} if nobody is bound."""
    table = ns.run("cat /proc/net/netfilter/nfnetlink_queue", check=False)
    for line in table.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == str(queue):
            return {"portid": int(fields[1]), "waiting": int(fields[2]), "ids": int(fields[7])}
    return {}


def stop_helper(helper: Helper, timeout_s: float = 5.0) -> dict[str, Any]:
    """SIGTERM: the helper lets its held packets go and prints its counts; one that
    does not exit in time is killed, and says so."""
    if helper.alive():
        helper.proc.send_signal(signal.SIGTERM)
    try:
        out, err = helper.proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        helper.proc.kill()
        helper.proc.communicate()
        return {"helper": f"killed after {timeout_s:g} s"}
    for line in reversed(out.splitlines()):
        with contextlib.suppress(ValueError):
            said = json.loads(line)
            if isinstance(said, dict) and isinstance(said.get("counts"), dict):
                return {"helper": said["counts"]}
    last = (err.strip().splitlines() or [f"exit {helper.proc.returncode}"])[-1]
    return {"helper": f"no counts: {last}"}


def strays(ns: Namespace) -> list[int]:
    """Pids of helpers running in the node's namespace, whoever started them."""
    try:
        target = os.stat(f"/proc/{ns.pid()}/ns/net")
    except (OSError, TrialError):
        return []
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if HELPER_MODULE.encode() not in (proc / "cmdline").read_bytes():
                continue
            st = os.stat(proc / "ns" / "net")
        except OSError:
            continue  # gone meanwhile, or a zombie
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            found.append(int(proc.name))
    return found


def _running(pid: int) -> bool:
    """Not gone, and not a zombie waiting for its parent (its cmdline reads empty)."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


def end_strays(ns: Namespace, grace_s: float = 3.0) -> int:
    """SIGTERM every helper left in the namespace (a crashed run's), then SIGKILL
    those still there after `grace_s`; how many there were."""
    pids = strays(ns)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while (left := [p for p in pids if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)


_U32_DST = re.compile(
    rf"flowid {netfaults.QDISC_HANDLE}1.*?\n\s*match ([0-9a-f]{{8}})/ffffffff at 16"
)


def filtered_to(ns: Namespace) -> list[str]:
    """The addresses our u32 filters classify into the rate's class, as the kernel
    shows them (it prints the destination match as hex at offset 16)."""
    shown = ns.run(f"tc filter show dev {INTERFACE}", check=False)
    return [".".join(str(b) for b in bytes.fromhex(h)) for h in _U32_DST.findall(shown)]


def shown_rules(ns: Namespace) -> list[str]:
    """The node's packet rules as iptables prints them (-S), both tables."""
    out = ns.run(
        f"iptables -w -S {netfaults.CHAIN}; iptables -w -t mangle -S {netfaults.CHAIN}",
        check=False,
    )
    return [line for line in out.splitlines() if f"kt:{_tag(ns.node)}" in line]


def _rate(ns: Namespace, kbit: int, to: str | None) -> dict[str, Any]:
    if to is None:
        ns.run(netfaults.rate(INTERFACE, kbit))
        ns.run(netfaults.qdisc_present(INTERFACE))
        return {"qdisc": f"tbf {kbit}kbit on {INTERFACE}"}
    ns.run(netfaults.rate_to(INTERFACE, kbit, to))
    ns.run(netfaults.qdisc_present(INTERFACE))
    if (seen := filtered_to(ns)) != [to]:
        raise RuntimeError(f"node {ns.node}'s rate filter reads back {seen}, not [{to}]")
    return {
        "qdisc": f"htb {kbit}kbit on {INTERFACE} to {to}",
        "dst": to,
        "read_back": [f"u32 match ip dst {ip}/32 flowid {netfaults.QDISC_HANDLE}1" for ip in seen],
    }


def add(
    ns: Namespace,
    kind: PacketKind,
    probability: float,
    kbit: int,
    peers: list[str],
    delay_ms: int = 20,
    seed: int = 0,
    to: str | None = None,
) -> tuple[dict[str, Any], Helper | None]:
    """Make the fault and read it back: the rules `iptables -C` finds, or the qdisc;
    for reorder and corrupt also the helper, bound and alive (returned: the heal
    stops it). With `to`, on one link only: what the node sends to that address, and
    the read back (`read_back`) shows the destination match."""
    _ensure_tools()
    ns.run(netfaults.setup())
    if kind == "rate":
        return _rate(ns, kbit, to), None
    rules = rules_for(kind, probability, peers, ns.node, to)
    if not rules:
        raise RuntimeError(f"node {ns.node} has no peer to duplicate packets to")
    # The helper binds first: a rule that queued to no one would only bypass.
    helper = start_helper(ns, kind, delay_ms, seed) if kind in QUEUED_KINDS else None
    try:
        for r in rules:
            ns.run(r.add())
        for r in rules:
            ns.run(r.present())
        if helper is not None and not (helper.alive() and bound(ns, helper.queue)):
            raise RuntimeError(
                f"node {ns.node}'s nfqueue helper is not bound to queue {helper.queue}"
            )
        seen = shown_rules(ns) if to is not None else []
        if to is not None and not (seen and all(f"-d {to}/32" in r for r in seen)):
            raise RuntimeError(f"node {ns.node}'s rules do not all match -d {to}: {seen}")
    except BaseException:
        if helper is not None:
            stop_helper(helper)
        raise
    made: dict[str, Any] = {"rules": len(rules), "kind": kind, "probability": probability}
    made |= {"dst": to, "read_back": seen} if to is not None else {}
    if helper is not None:
        made |= {"queue": helper.queue, "helper_pid": helper.proc.pid}
        made |= {"delay_ms": delay_ms} if kind == "reorder" else {}
    return made, helper


_COUNTS = re.compile(r"^\s*(\d+)\s+\d+\s+(DROP|TEE|NFQUEUE)\b", re.M)


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


_SHAPED_LINK = re.compile(
    rf"class htb {netfaults.QDISC_HANDLE}1 .*?Sent \d+ bytes (\d+) pkt \(dropped (\d+), "
    r"overlimits (\d+)",
    re.S,
)


def shaped(ns: Namespace) -> dict[str, int]:
    """What our rate qdisc sent, dropped and held back (overlimits); {} without one.
    On one link, its class's counts: what the node sent to that peer."""
    m = _SHAPED.search(ns.run(f"tc -s qdisc show dev {INTERFACE}", check=False))
    if m is None:
        m = _SHAPED_LINK.search(ns.run(f"tc -s class show dev {INTERFACE}", check=False))
    if m is None:
        return {}
    sent, dropped, over = (int(x) for x in m.groups())
    return {"shaped_packets": sent, "dropped": dropped, "overlimits": over}


def clear(ns: Namespace, helper: Helper | None = None) -> dict[str, Any]:
    """Everything gone, and what the rules matched, the qdisc shaped or the helper
    did; what is left, if anything. The rules go before the helper, so nothing is
    queued to it while it lets its held packets go."""
    found = {"matched_packets": matched(ns)} | shaped(ns)
    ns.run(netfaults.heal(INTERFACE), check=False)
    if helper is not None:
        found |= stop_helper(helper)
    if ended := end_strays(ns):
        found["strays_ended"] = ended
    left = ns.run(netfaults.leftovers(INTERFACE), check=False).strip()
    if running := strays(ns):
        left = (left + "\n" if left else "") + f"nfqueue helper pids {running}"
    return found | ({"left": left} if left else {})
