"""`packet`: lose, duplicate, reorder, corrupt or rate-limit what the targeted brokers
send, below TCP. TCP hides loss, duplicates and reordering as retransmissions and
latency; what is left to find is in the retransmission and timeout paths. Corruption
is made past TCP (the checksum is recomputed), so it reaches Kafka's framing and its
record batch CRCs. The completion records what the kernel shows was added (and, for
reorder and corrupt, that the userspace helper is bound); the heal, how many packets
the rules matched and what the helper did, so a fault that touched no packet says
so."""

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
        kind = p.kind_for(pick)
        what: dict[str, Any] = {"kind": kind}
        what |= {"kbit": p.kbit} if kind == "rate" else {"probability": p.probability}
        what |= {"delay_ms": p.delay_ms} if kind == "reorder" else {}
        value = {"target": role, "topic": self.topic, "partition": self.partition} | what

        def act() -> Done:
            a = aim(role, ctl, self.topic, self.partition, pick)
            targets = a.brokers
            made: dict[str, Any] = {}
            for b in targets:
                # The corrupt helper's bit flips follow the schedule's pick: a replay
                # draws the same sequence (which packets get them is the kernel's).
                made[str(b)] = ctl.add_packet_fault(
                    b, kind, p.probability, p.kbit, p.delay_ms, seed=pick * 1000 + b
                )
            heal = Heal(
                "packet-heal",
                {"brokers": list(targets)},
                {},
                tuple(Undo("clear-packets", node=b) for b in targets),
            )
            result = {"brokers": targets, **a.record(), "made": made}
            return Done(result, heal if targets else None)

        yield Step("packet", value, act)
