"""`packet`: lose, duplicate or rate-limit what the targeted brokers send, below TCP.
TCP hides most of it as retransmissions and latency; what is left to find is in the
retransmission and timeout paths. The completion records what the kernel shows was
added; the heal, how many packets the rules matched, so a fault that touched no
packet says so."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka_trial.cluster.control import ClusterControl
from kafka_trial.contracts.spec.nemesis import PacketSpec
from kafka_trial.nemesis.steps import Done, Heal, Step, Undo
from kafka_trial.nemesis.targets import aim


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
        what: dict[str, Any] = {"kind": p.kind}
        what |= {"kbit": p.kbit} if p.kind == "rate" else {"probability": p.probability}
        value = {"target": role, "topic": self.topic, "partition": self.partition} | what

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            made: dict[str, Any] = {}
            for b in targets:
                made[str(b)] = ctl.add_packet_fault(b, p.kind, p.probability, p.kbit)
            heal = Heal(
                "packet-heal",
                {"brokers": list(targets)},
                {},
                tuple(Undo("clear-packets", node=b) for b in targets),
            )
            result = {"brokers": targets, **a.record(), "made": made}
            return Done(result, heal if targets else None)

        yield Step("packet", value, act)
