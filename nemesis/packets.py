"""`packet`: lose, duplicate, reorder, corrupt or rate-limit what the targeted brokers
send, below TCP. TCP hides loss, duplicates and reordering as retransmissions and
latency; what is left to find is in the retransmission and timeout paths. Corruption
is made past TCP (the checksum is recomputed), so it reaches Kafka's framing and its
record batch CRCs. The completion records what the kernel shows was added (and, for
reorder and corrupt, that the userspace helper is bound); the heal, how many packets
the rules matched and what the helper did, so a fault that touched no packet says
so.

With `nemesis.packet.scope: link` each targeted broker's fault is on one link: only
what it sends to one peer broker, drawn from the schedule's pick among its peers, so a
replay draws the same link. The completion records each link (`links`) and the rule
or filter read back with the peer's address in its destination match."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka_trial.cluster.control import ClusterControl
from kafka_trial.contracts.spec.nemesis import PacketSpec
from kafka_trial.nemesis.steps import Done, Heal, Step, Undo
from kafka_trial.nemesis.targets import aim


def draw_links(targets: list[int], nodes: list[int], pick: int) -> dict[int, int]:
    """Each target's peer, the pick's choice among the other brokers. A stream of its
    own (not Random(pick), which drew the target): the peer does not follow from which
    target the same draw chose."""
    rng = random.Random(f"packet-link:{pick}")
    links = {}
    for b in targets:
        peers = sorted(n for n in nodes if n != b)
        if not peers:
            raise RuntimeError(f"broker {b} has no peer broker to aim a link at")
        links[b] = rng.choice(peers)
    return links


@dataclass(frozen=True)
class PacketFault:
    topic: str
    partition: int
    roles: tuple[str, ...]
    packet: PacketSpec
    name: str = "packet"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        role = self.roles[pick % len(self.roles)]
        p = self.packet
        kind = p.kind_for(pick)
        what: dict[str, Any] = {"kind": kind}
        what |= {"kbit": p.kbit} if kind == "rate" else {"probability": p.probability}
        what |= {"delay_ms": p.delay_ms} if kind == "reorder" else {}
        value = {"target": role, "topic": self.topic, "partition": self.partition} | what
        # Which broker is targeted is known only when the fault acts (a leader is looked
        # up then), so the invoke says the scope and the completion the links.
        value |= {"scope": "link"} if p.scope == "link" else {}

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            links = draw_links(targets, ctl.node_ids, pick) if p.scope == "link" else {}
            made: dict[str, Any] = {}
            for b in targets:
                # The corrupt helper's bit flips follow the schedule's pick: a replay
                # draws the same sequence (which packets get them is the kernel's).
                made[str(b)] = ctl.add_packet_fault(
                    b, kind, p.probability, p.kbit, p.delay_ms, pick * 1000 + b, links.get(b)
                )
            heal = Heal(
                "packet-heal",
                {"brokers": list(targets)},
                {},
                tuple(Undo("clear-packets", node=b) for b in targets),
            )
            result = {"brokers": targets, **a.record(), "made": made}
            if links:
                result["links"] = [{"from": b, "to": peer} for b, peer in links.items()]
            return Done(result, heal if targets else None)

        yield Step("packet", value, act)
