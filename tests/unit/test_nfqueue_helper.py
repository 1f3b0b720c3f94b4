"""The nfqueue helper's pure parts: the netlink messages it sends and reads, the bit
flip whose TCP checksum still holds, and how it judges each packet (a fake socket);
then, where this process may make a network namespace, the helper itself on real
packets (the cluster's namespaces: tests/integration/test_faults.py)."""

from __future__ import annotations

import json
import random
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections import Counter, deque

import pytest
from kafka_trial.cluster import nfqueue_helper as nfq
from kafka_trial.cluster.nfqueue_helper import (
    NF_ACCEPT,
    NFQA_CAP_LEN,
    NFQA_CFG_CMD,
    NFQA_CFG_PARAMS,
    NFQA_PACKET_HDR,
    NFQA_PAYLOAD,
    NFQA_VERDICT_HDR,
    Message,
    Reader,
)

PACKET = (3 << 8) | 0  # NFNL_SUBSYS_QUEUE, NFQNL_MSG_PACKET
VERDICT = (3 << 8) | 1
CONFIG = (3 << 8) | 2


def _fold(total: int) -> int:
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def _checksum_holds(packet: bytes) -> bool:
    """RFC 793, written apart from the helper's: the words of the pseudo-header and the
    segment, its checksum included, add up to all ones."""
    ihl = (packet[0] & 0x0F) * 4
    length = int.from_bytes(packet[2:4], "big")
    segment = packet[ihl:length]
    data = packet[12:20] + bytes([0, 6]) + len(segment).to_bytes(2, "big") + segment
    if len(data) % 2:
        data += b"\x00"
    words = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    return _fold(words) == 0xFFFF


def _ipv4_tcp(payload: bytes, flags: int = 0x18) -> bytes:
    """An IPv4/TCP packet 10.0.0.2:9092 -> 10.0.0.3:40000 with a valid checksum."""
    tcp = struct.pack("!HHIIBBHHH", 9092, 40000, 1000, 2000, 5 << 4, flags, 65535, 0, 0)
    total = 20 + len(tcp) + len(payload)
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, total, 1, 0x4000, 64, 6, 0, bytes([10, 0, 0, 2]),
        bytes([10, 0, 0, 3]),
    )  # fmt: skip
    raw = bytearray(ip + tcp + payload)
    data = raw[12:20] + bytes([0, 6]) + (total - 20).to_bytes(2, "big") + raw[20:]
    data += b"\x00" * (len(data) % 2)
    words = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    raw[36:38] = (~_fold(words) & 0xFFFF).to_bytes(2, "big")
    assert _checksum_holds(bytes(raw))
    return bytes(raw)


def _packet_message(queue: int, packet_id: int, payload: bytes, cap_len: bool = False) -> bytes:
    """A kernel's NFQNL_MSG_PACKET, built by hand: nlmsghdr, nfgenmsg, attributes."""

    def attr(kind: int, data: bytes) -> bytes:
        raw = struct.pack("=HH", 4 + len(data), kind) + data
        return raw + b"\x00" * (-len(raw) % 4)

    attrs = attr(NFQA_PACKET_HDR, struct.pack("!IHB", packet_id, 0x0800, 3))
    attrs += attr(4 | 0x4000, b"\x00" * 16)  # a timestamp, flagged network byte order
    attrs += attr(NFQA_PAYLOAD, payload)
    if cap_len:
        attrs += attr(NFQA_CAP_LEN, struct.pack("!I", len(payload) * 2))
    body = struct.pack("!BBH", socket.AF_INET, 0, queue) + attrs
    return struct.pack("=IHHII", 16 + len(body), PACKET, 0, 0, 0) + body


def test_a_verdict_is_built_as_the_kernel_reads_it_and_parses_back() -> None:
    raw = nfq.verdict_message(101, 42, b"xyz")
    length, kind, flags = struct.unpack_from("=IHH", raw)
    assert (length, kind, flags) == (len(raw), VERDICT, 1) and len(raw) % 4 == 0
    assert struct.unpack_from("!BBH", raw, 16) == (0, 0, 101)
    (msg,) = nfq.parse_messages(raw)
    assert msg.kind == VERDICT and msg.queue == 101
    assert struct.unpack("!II", msg.attrs[NFQA_VERDICT_HDR]) == (NF_ACCEPT, 42)
    assert msg.attrs[NFQA_PAYLOAD] == b"xyz"
    (plain,) = nfq.parse_messages(nfq.verdict_message(7, 1))
    assert NFQA_PAYLOAD not in plain.attrs  # ACCEPT as the packet came


def test_the_bind_asks_for_whole_packets_and_an_acknowledgement() -> None:
    raw = nfq.bind_message(103)
    assert struct.unpack_from("=H", raw, 6)[0] == 0x1 | 0x4  # request, ack
    (msg,) = nfq.parse_messages(raw)
    assert msg.kind == CONFIG and msg.queue == 103
    assert struct.unpack("!BxH", msg.attrs[NFQA_CFG_CMD]) == (1, socket.AF_INET)  # bind
    assert struct.unpack("!IB", msg.attrs[NFQA_CFG_PARAMS]) == (0xFFFF, 2)  # copy packet


def test_a_kernel_packet_message_parses_and_batches_split() -> None:
    data = _ipv4_tcp(b"hello")
    raw = _packet_message(101, 7, data) + _packet_message(101, 8, data[:30], cap_len=True)
    first, second = nfq.parse_messages(raw)
    assert first.queue == 101
    assert nfq.queued(first) == nfq.Queued(7, data, whole=True)
    assert nfq.queued(second) == nfq.Queued(8, data[:30], whole=False)
    assert 4 in first.attrs  # the byte-order flag is not part of the type
    ack = struct.pack("=IHHII", 36, 2, 0, 1, 0) + struct.pack("=i", -16) + b"\x00" * 16
    assert list(nfq.parse_messages(ack)) == [Message(2, -1, {}, -16)]  # EBUSY
    assert list(nfq.parse_messages(raw[:-3])) == [first]  # a torn tail is left alone


def test_a_corrupted_packet_has_one_payload_bit_flipped_and_a_valid_checksum() -> None:
    for payload in (b"\x00\x00\x00\x2a" + b"record batch" * 20, b"odd", b"x"):
        before = _ipv4_tcp(payload)
        assert _checksum_holds(before) and nfq.tcp_checksum(before) == int.from_bytes(
            before[36:38], "big"
        )
        after = nfq.corrupt(before, random.Random(5))
        assert after is not None and len(after) == len(before)
        flipped = [
            (i, bin(a ^ b).count("1"))
            for i, (a, b) in enumerate(zip(before, after, strict=True))
            if a != b
        ]
        bits = [(i, n) for i, n in flipped if i not in (36, 37)]  # the checksum's bytes aside
        assert len(bits) == 1 and bits[0][1] == 1 and bits[0][0] >= 40, flipped
        assert _checksum_holds(after)  # TCP takes it: the bit reaches Kafka
    assert nfq.corrupt(before, random.Random(5)) == nfq.corrupt(before, random.Random(5))


def test_packets_without_a_tcp_payload_are_left_alone() -> None:
    rng = random.Random(1)
    ack = _ipv4_tcp(b"", flags=0x10)
    assert nfq.corrupt(ack, rng) is None
    udp = bytearray(_ipv4_tcp(b"data"))
    udp[9] = 17
    assert nfq.corrupt(bytes(udp), rng) is None
    fragment = bytearray(_ipv4_tcp(b"data"))
    fragment[6:8] = b"\x20\x00"  # more fragments
    assert nfq.corrupt(bytes(fragment), rng) is None
    assert nfq.corrupt(b"\x60" + b"\x00" * 60, rng) is None  # IPv6
    for _ in range(2000):  # whatever the bytes, an answer and no exception
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(70)))
        nfq.corrupt(b"\x45" + junk, rng)


class _Sent:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, raw: bytes) -> int:
        self.sent.append(raw)
        return len(raw)


def _reader(mode: str, delay_s: float = 0.0) -> tuple[Reader, _Sent]:
    sock = _Sent()
    return Reader(sock, 101, mode, delay_s, random.Random(3), Counter(), deque()), sock  # type: ignore[arg-type]


def _verdicts(sock: _Sent) -> list[tuple[int, bytes | None]]:
    out = []
    for raw in sock.sent:
        (msg,) = nfq.parse_messages(raw)
        verdict, packet_id = struct.unpack("!II", msg.attrs[NFQA_VERDICT_HDR])
        assert verdict == NF_ACCEPT  # never a drop
        out.append((packet_id, msg.attrs.get(NFQA_PAYLOAD)))
    return out


def test_corrupt_accepts_every_packet_and_changes_only_those_with_a_payload() -> None:
    reader, sock = _reader("corrupt")
    data = _ipv4_tcp(b"payload")
    for packet_id, payload, cap in ((1, data, False), (2, _ipv4_tcp(b""), False)):
        (msg,) = nfq.parse_messages(_packet_message(101, packet_id, payload, cap))
        reader.handle(msg)
    (cut,) = nfq.parse_messages(_packet_message(101, 3, data[:45], cap_len=True))
    reader.handle(cut)  # the kernel copied part of it: it goes as it came
    (odd,) = nfq.parse_messages(_packet_message(101, 4, b"\x45\xff", False))
    reader.handle(odd)
    reader.handle(Message(PACKET, 101, {NFQA_PAYLOAD: data}))  # no header: no id to answer
    (one, two, three, four) = _verdicts(sock)
    assert one[0] == 1 and one[1] is not None and one[1] != data and _checksum_holds(one[1])
    assert (two, three, four) == ((2, None), (3, None), (4, None))
    assert reader.counts == Counter(queued=4, corrupted=1, unchanged=3)


def test_reorder_holds_each_packet_for_its_delay_then_accepts_it_unchanged() -> None:
    reader, sock = _reader("reorder", delay_s=0.05)
    data = _ipv4_tcp(b"p")
    for packet_id in (1, 2):
        (msg,) = nfq.parse_messages(_packet_message(101, packet_id, data, False))
        reader.handle(msg)
    reader.release(time.monotonic())
    assert sock.sent == []  # held
    reader.release(time.monotonic() + 0.06)
    assert _verdicts(sock) == [(1, None), (2, None)]
    assert reader.counts == Counter(queued=2, held=2)


def _can_make_a_namespace() -> bool:
    if not (shutil.which("unshare") and shutil.which("iptables") and shutil.which("ip")):
        return False
    probe = subprocess.run(
        ["unshare", "-n", "iptables", "-w", "-L", "OUTPUT"], capture_output=True, timeout=30
    )
    return probe.returncode == 0


NAMESPACE_SCRIPT = """
set -e
ip link set lo up
iptables -w -A OUTPUT -o lo -p tcp --dport 5555 -j NFQUEUE --queue-num 7 --queue-bypass
exec "$@"
"""


@pytest.mark.skipif(not _can_make_a_namespace(), reason="needs root, unshare and iptables")
def test_the_helper_corrupts_real_packets_past_tcp_and_counts_them_on_sigterm() -> None:
    """In a private namespace (its loopback only): every packet to port 5555 queued, the
    bytes arrive with bits flipped, and SIGTERM ends the helper with its counts."""
    helper = subprocess.Popen(
        ["unshare", "-n", "sh", "-c", NAMESPACE_SCRIPT, "sh", sys.executable, "-c", _IN_NS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = helper.communicate(timeout=60)
    finally:
        helper.kill()
    said = [json.loads(line) for line in out.splitlines()]
    assert said[0]["ready"] is True, (out, err)
    sent, got, counts = said[-1]["sent"], said[-1]["got"], said[-1]["counts"]
    assert said[-1]["rc"] == 0 and len(got) == len(sent), err
    assert counts["queued"] > 0 and counts["corrupted"] > 0, counts
    differing = sum(
        bin(a ^ b).count("1") for a, b in zip(sent.encode(), got.encode("latin-1"), strict=True)
    )
    assert 0 < differing <= counts["corrupted"], (differing, counts)


# Runs inside the namespace: the helper, a TCP stream through its queue, SIGTERM.
_IN_NS = """
import json, select, signal, socket, subprocess, sys, threading
h = subprocess.Popen([sys.executable, "-m", "kafka_trial.cluster.nfqueue_helper", "--queue",
    "7", "--mode", "corrupt", "--seed", "1"], stdout=subprocess.PIPE, text=True)
ready, _, _ = select.select([h.stdout], [], [], 20)
print(h.stdout.readline().strip() if ready else "{}", flush=True)
srv = socket.create_server(("127.0.0.1", 5555))
got = bytearray()
def serve():
    c, _ = srv.accept()
    while d := c.recv(65536):
        got.extend(d)
t = threading.Thread(target=serve)
t.start()
sent = "".join(f"{i:06d}" for i in range(500))
c = socket.create_connection(("127.0.0.1", 5555))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for i in range(0, len(sent), 60):
    c.sendall(sent[i:i + 60].encode())
c.close()
t.join()
h.send_signal(signal.SIGTERM)
out, _ = h.communicate(timeout=10)
counts = json.loads(out.splitlines()[-1])["counts"]
print(json.dumps({"sent": sent, "got": got.decode("latin-1"), "counts": counts,
    "rc": h.returncode}))
"""
