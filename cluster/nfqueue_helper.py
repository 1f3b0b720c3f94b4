"""A userspace NFQUEUE reader that reorders or corrupts the packets an iptables rule
queues to it: the `packet` package's `reorder` and `corrupt` on kernels without netem.

Run inside a node's network namespace (`nsenter -t PID -n python -m
kafka_trial.cluster.nfqueue_helper --queue N --mode reorder|corrupt`), it binds queue N
over a raw NETLINK_NETFILTER socket (no libnetfilter_queue: the standard library only)
and prints one JSON line, `{"ready": true, ...}`, once the kernel has accepted the
bind. Then, for every queued packet:

- reorder: it holds the packet for `--delay-ms` before its ACCEPT verdict, so the
  packets the rule did not queue, sent later, overtake it;
- corrupt: it flips one random bit of the TCP payload and recomputes the TCP checksum
  before it accepts the changed packet. The checksum is recomputed on purpose: a packet
  whose checksum fails is dropped by the receiving kernel and resent, which is only
  loss; one that passes delivers wrong bytes to Kafka, whose record batch CRC (and the
  protocol's parsing) is what should catch them. Packets without payload (bare ACKs,
  SYNs) pass unchanged.

It never drops a packet and never crashes on one: a packet it cannot read or change is
accepted as it came, and counted as an error. SIGUSR1 prints the counts so far, one
JSON line. On SIGTERM, or when the process that started it is gone, it releases what
it holds, prints its counts, one JSON line, and exits 0. The rule queues with
--queue-bypass, so while no reader is bound the packets pass: the fault fails open.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

# linux/netlink.h, linux/netfilter/nfnetlink.h, linux/netfilter/nfnetlink_queue.h
NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLMSG_ERROR = 0x2
NLMSG_DONE = 0x3
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_PACKET = 2
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_PAYLOAD = 10
NFQA_CAP_LEN = 13
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQA_CFG_MASK = 4
NFQA_CFG_FLAGS = 5
NFQA_CFG_F_FAIL_OPEN = 0x1
NF_ACCEPT = 1
NLA_TYPE_MASK = 0x3FFF  # the nested and byte-order flags are not part of the type

_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, portid: host order
_NFGENMSG = struct.Struct("!BBH")  # family, version, res_id (the queue): network order
_NLATTR = struct.Struct("=HH")
COPY_RANGE = 0xFFFF
QUEUE_MAXLEN = 4096
RECV_BYTES = 1 << 18


def _align(n: int) -> int:
    return (n + 3) & ~3


def nlattr(kind: int, data: bytes) -> bytes:
    size = _NLATTR.size + len(data)
    return _NLATTR.pack(size, kind) + data + b"\0" * (_align(size) - size)


def nlmsg(msg: int, flags: int, seq: int, family: int, queue: int, attrs: bytes) -> bytes:
    """One nfnetlink message of the queue subsystem: header, nfgenmsg, attributes."""
    body = _NFGENMSG.pack(family, 0, queue) + attrs
    kind = (NFNL_SUBSYS_QUEUE << 8) | msg
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), kind, flags, seq, 0) + body


def bind_message(queue: int, seq: int = 1) -> bytes:
    """Bind the queue, copy whole packets, and let the kernel accept what overflows the
    queue (fail open) instead of dropping it; the kernel acknowledges it."""
    attrs = (
        nlattr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, socket.AF_INET))
        + nlattr(NFQA_CFG_PARAMS, struct.pack("!IB", COPY_RANGE, NFQNL_COPY_PACKET))
        + nlattr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN))
        + nlattr(NFQA_CFG_FLAGS, struct.pack("!I", NFQA_CFG_F_FAIL_OPEN))
        + nlattr(NFQA_CFG_MASK, struct.pack("!I", NFQA_CFG_F_FAIL_OPEN))
    )
    return nlmsg(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, seq, 0, queue, attrs)


def verdict_message(queue: int, packet_id: int, payload: bytes | None = None) -> bytes:
    """ACCEPT for one packet; with `payload`, the packet is replaced by it."""
    attrs = nlattr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))
    if payload is not None:
        attrs += nlattr(NFQA_PAYLOAD, payload)
    return nlmsg(NFQNL_MSG_VERDICT, NLM_F_REQUEST, 0, 0, queue, attrs)


@dataclass(frozen=True)
class Message:
    """One netlink message: its type (subsystem << 8 | message), and for nfnetlink
    messages the queue and the attributes (by type; the last one of a type wins)."""

    kind: int
    queue: int
    attrs: dict[int, bytes]
    error: int | None = None  # NLMSG_ERROR: 0 is an ack, else -errno


def parse_attrs(buf: bytes) -> dict[int, bytes]:
    attrs: dict[int, bytes] = {}
    at = 0
    while at + _NLATTR.size <= len(buf):
        size, kind = _NLATTR.unpack_from(buf, at)
        if size < _NLATTR.size or at + size > len(buf):
            break  # a truncated attribute: what came before it stands
        attrs[kind & NLA_TYPE_MASK] = buf[at + _NLATTR.size : at + size]
        at += _align(size)
    return attrs


def parse_messages(buf: bytes) -> Iterator[Message]:
    """Every netlink message in one datagram (the kernel batches them)."""
    at = 0
    while at + _NLMSGHDR.size <= len(buf):
        size, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(buf, at)
        if size < _NLMSGHDR.size or at + size > len(buf):
            return
        body = buf[at + _NLMSGHDR.size : at + size]
        at += _align(size)
        if kind == NLMSG_ERROR:
            yield Message(kind, -1, {}, struct.unpack_from("=i", body)[0] if body else None)
        elif kind >> 8 == NFNL_SUBSYS_QUEUE and len(body) >= _NFGENMSG.size:
            _family, _version, queue = _NFGENMSG.unpack_from(body)
            yield Message(kind, queue, parse_attrs(body[_NFGENMSG.size :]))


@dataclass(frozen=True)
class Queued:
    """A packet the kernel queued: its id for the verdict, and its bytes (IP header
    first). `whole` is false when the kernel copied only part of it."""

    packet_id: int
    payload: bytes
    whole: bool


def queued(msg: Message) -> Queued | None:
    if msg.kind != (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
        return None
    hdr = msg.attrs.get(NFQA_PACKET_HDR)
    if hdr is None or len(hdr) < 4:
        return None
    (packet_id,) = struct.unpack_from("!I", hdr)
    payload = msg.attrs.get(NFQA_PAYLOAD, b"")
    return Queued(packet_id, payload, NFQA_CAP_LEN not in msg.attrs)


def _ones_complement_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def tcp_checksum(packet: bytes) -> int:
    """The TCP checksum of an IPv4 packet, its own checksum field counted as zero."""
    ihl = (packet[0] & 0x0F) * 4
    total = struct.unpack_from("!H", packet, 2)[0]
    segment = bytearray(packet[ihl:total])
    segment[16:18] = b"\0\0"
    pseudo = packet[12:20] + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(segment))
    return ~_ones_complement_sum(pseudo + bytes(segment)) & 0xFFFF


def tcp_payload_span(packet: bytes) -> tuple[int, int] | None:
    """Where an IPv4 TCP packet's payload starts and ends; None for anything else."""
    if len(packet) < 20 or packet[0] >> 4 != 4 or packet[9] != socket.IPPROTO_TCP:
        return None
    ihl = (packet[0] & 0x0F) * 4
    total = struct.unpack_from("!H", packet, 2)[0]
    if ihl < 20 or total > len(packet) or ihl + 20 > total:
        return None
    if struct.unpack_from("!H", packet, 6)[0] & 0x3FFF:
        return None  # a fragment: its TCP checksum spans bytes this packet lacks
    offset = (packet[ihl + 12] >> 4) * 4
    if offset < 20:
        return None  # not a TCP header: its "payload" would be the header itself
    start = ihl + offset
    return (start, total) if start < total else None


def corrupt(packet: bytes, rng: random.Random) -> bytes | None:
    """The packet with one random payload bit flipped and its TCP checksum made valid
    again; None when it carries no TCP payload to flip."""
    span = tcp_payload_span(packet)
    if span is None:
        return None
    start, end = span
    bit = rng.randrange((end - start) * 8)
    out = bytearray(packet)
    out[start + bit // 8] ^= 1 << (bit % 8)
    ihl = (packet[0] & 0x0F) * 4
    struct.pack_into("!H", out, ihl + 16, tcp_checksum(bytes(out)))
    return bytes(out)


class BindError(RuntimeError):
    pass


def open_queue(queue: int) -> socket.socket:
    """A netlink socket bound to the queue, or BindError with the kernel's reason."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.bind((0, 0))
    # A burst the reader falls behind on must not end the loop with ENOBUFS: the
    # kernel's queue (fail open) absorbs it.
    sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.send(bind_message(queue))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        for msg in parse_messages(sock.recv(RECV_BYTES)):
            if msg.kind == NLMSG_ERROR and msg.error:
                sock.close()
                raise BindError(f"queue {queue}: {os.strerror(-msg.error)}")
            if msg.kind == NLMSG_ERROR:
                return sock
    sock.close()
    raise BindError(f"queue {queue}: the kernel did not acknowledge the bind")


@dataclass
class Reader:
    """The loop's state. Not frozen: its counts and its held packets change with every
    packet it reads."""

    sock: socket.socket
    queue: int
    mode: str
    delay_s: float
    rng: random.Random
    counts: collections.Counter[str]
    held: collections.deque[tuple[float, int]]

    def tally(self) -> dict[str, int]:
        return {"queued": 0, "held": 0, "corrupted": 0} | dict(self.counts)

    def accept(self, packet_id: int, payload: bytes | None = None) -> None:
        try:
            self.sock.send(verdict_message(self.queue, packet_id, payload))
        except OSError:
            # The packet stays queued until the socket closes, then goes unbound:
            # counted, never fatal.
            self.counts["verdict_errors"] += 1

    def handle(self, msg: Message) -> None:
        pkt = queued(msg)
        if pkt is None:
            return
        self.counts["queued"] += 1
        try:
            if self.mode == "reorder":
                self.held.append((time.monotonic() + self.delay_s, pkt.packet_id))
                self.counts["held"] += 1
                return
            changed = corrupt(pkt.payload, self.rng) if pkt.whole else None
        except Exception:  # an odd packet goes as it came
            self.counts["errors"] += 1
            changed = None
        if changed is None:
            self.counts["unchanged"] += 1
        else:
            self.counts["corrupted"] += 1
        self.accept(pkt.packet_id, changed)

    def release(self, until: float) -> None:
        while self.held and self.held[0][0] <= until:
            self.accept(self.held.popleft()[1])

    def read(self) -> None:
        try:
            data = self.sock.recv(RECV_BYTES)
        except OSError as e:
            if e.errno not in (errno.ENOBUFS, errno.EAGAIN, errno.EINTR):
                raise
            self.counts["overruns"] += 1
            return
        for msg in parse_messages(data):
            self.handle(msg)


def serve(reader: Reader, signals: socket.socket) -> None:
    """Read and judge packets until SIGTERM or SIGINT (their numbers arrive on
    `signals`) or the parent's end, then let go of every held packet: one left queued
    would be dropped at close. SIGUSR1 prints the counts so far."""
    parent = os.getppid()
    try:
        while os.getppid() == parent:
            timeout = 1.0
            if reader.held:
                timeout = min(timeout, max(0.0, reader.held[0][0] - time.monotonic()))
            ready, _, _ = select.select([reader.sock, signals], [], [], timeout)
            if signals in ready:
                got = signals.recv(64)
                if signal.SIGUSR1 in got:
                    _say({"counts": reader.tally(), "queue": reader.queue})
                if signal.SIGTERM in got or signal.SIGINT in got:
                    break
            if reader.sock in ready:
                reader.read()
            reader.release(time.monotonic())
    finally:
        reader.release(float("inf"))


def _say(line: dict) -> None:
    with contextlib.suppress(OSError):  # the parent is gone: nobody reads the counts
        print(json.dumps(line, sort_keys=True), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nfqueue_helper", description=__doc__.split("\n")[0])
    ap.add_argument("--queue", type=int, required=True)
    ap.add_argument("--mode", choices=("reorder", "corrupt"), required=True)
    ap.add_argument("--delay-ms", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="", help="a marker for ps; not used")
    args = ap.parse_args(argv)
    # Signals only wake the loop (their numbers on a socket): a handler that acted
    # would run between any two bytecodes, amid a verdict.
    signals_r, signals_w = socket.socketpair()
    signals_w.setblocking(False)
    signal.set_wakeup_fd(signals_w.fileno())
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, lambda *_: None)
    try:
        sock = open_queue(args.queue)
    except (BindError, OSError) as e:
        print(f"nfqueue_helper: {e}", file=sys.stderr)
        return 1
    reader = Reader(
        sock,
        args.queue,
        args.mode,
        args.delay_ms / 1000,
        random.Random(args.seed),
        collections.Counter(),
        collections.deque(),
    )
    _say({"ready": True, "queue": args.queue, "mode": args.mode, "pid": os.getpid()})
    failed = None
    try:
        serve(reader, signals_r)
    except Exception as e:  # the socket itself failed: the rule's bypass lets packets pass
        failed = f"{type(e).__name__}: {e}"
    sock.close()
    _say({"counts": reader.tally(), "queue": args.queue, "mode": args.mode, "failed": failed})
    return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
