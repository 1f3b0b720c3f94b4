"""The op record and the typed micro-ops inside it: the one definition of the history.

Recorders build these records; the history writer encodes them; the Spark reader
derives its schema from `micro_op_fields()`. docs/history.md describes the same
format in prose.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

OpType = Literal["invoke", "ok", "fail", "info"]
Outcome = Literal["ok", "fail", "info"]
# A client worker's number, the nemesis, or "app-<i>": instance i of the application
# on trial (its starts and exits).
Process = int | str
# The nemesis op a takeover of a transactional.id records, under either package name
# (hijack-txn, fence-txn-id): the analysis finds the sessions it fenced by it.
TXN_FENCE_OP = "hijack-txn"
COMPLETIONS: tuple[Outcome, ...] = ("ok", "fail", "info")


@dataclass(frozen=True)
class Op:
    index: int
    time: int
    type: OpType
    process: Process
    f: str
    value: Any = None
    error: str | None = None

    def to_json(self) -> str:
        d: dict[str, Any] = {
            "index": self.index,
            "time": self.time,
            "type": self.type,
            "process": self.process,
            "f": self.f,
            "value": self.value,
        }
        if self.error is not None:
            d["error"] = self.error
        v = self.value
        if isinstance(v, list) and v and all(type(m) is Send for m in v):
            # The producers' ops, thousands a second: the same text, built directly.
            head = json.dumps(
                {k: d[k] for k in ("index", "time", "type", "process", "f")},
                separators=(",", ":"),
            )
            sends = ",".join([m.json_text() for m in v])
            tail = "" if self.error is None else f',"error":{json.dumps(self.error)}'
            return f'{head[:-1]},"value":[{sends}]{tail}}}'
        return json.dumps(d, separators=(",", ":"), default=encode)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Op:
        return Op(
            index=d["index"],
            time=d["time"],
            type=d["type"],
            process=d["process"],
            f=d["f"],
            value=d.get("value"),
            error=d.get("error"),
        )


@functools.lru_cache(maxsize=4096)
def _json_str(s: str) -> str:
    return json.dumps(s)


def _json_int(n: int | None) -> str:
    # int() keeps a bool from becoming `True` (json.dumps writes true, but bools are
    # not values of this format); anything else not an int fails as json.dumps would.
    return "null" if n is None else json.dumps(n) if type(n) is not int else str(n)


# --- the pieces micro-ops are made of -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One record a consumer returned."""

    topic: str
    partition: int
    offset: int
    value: int | None  # null: not one of our decimal integers (the checker: unexpected)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "value": self.value,
        }


@dataclass(frozen=True, slots=True)
class TopicOffset:
    topic: str
    partition: int
    offset: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}


def _dicts(items: tuple[Any, ...] | None) -> list[dict[str, Any]] | None:
    return None if items is None else [i.to_dict() for i in items]


# --- micro-ops ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """One value sent. On completion it gains its offset (null when none is known,
    as with acks=0) and its outcome."""

    op: ClassVar[str] = "send"
    topic: str
    partition: int | None  # null until the report when the partitioner chooses
    value: int
    offset: int | None = None
    outcome: Outcome | None = None
    resend: bool = False  # an application re-send of a value an earlier op left info
    # The producer client (one librdkafka instance, one session) that sent it, and
    # the order in which that client's produce() calls were made: several processes
    # share a client, so only (client, seq) says what the client was asked to keep
    # in order.
    client: int | None = None
    seq: int | None = None

    def done(self, outcome: Outcome, offset: int | None, partition: int | None) -> Send:
        return Send(
            self.topic,
            partition,
            self.value,
            offset,
            outcome,
            self.resend,
            self.client,
            self.seq,
        )

    def json_text(self) -> str:
        """json.dumps(self.to_dict(), separators=(",", ":")), faster."""
        text = (
            f'{{"op":"send","topic":{_json_str(self.topic)},'
            f'"partition":{_json_int(self.partition)},"value":{_json_int(self.value)}'
        )
        if self.resend:
            text += ',"resend":true'
        if self.client is not None:
            text += f',"client":{_json_int(self.client)},"seq":{_json_int(self.seq)}'
        if self.outcome is not None:
            text += f',"offset":{_json_int(self.offset)},"outcome":{_json_str(self.outcome)}'
        return text + "}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "op": "send",
            "topic": self.topic,
            "partition": self.partition,
            "value": self.value,
        }
        if self.resend:
            d["resend"] = True
        if self.client is not None:
            d["client"] = self.client
            d["seq"] = self.seq
        if self.outcome is not None:
            d["offset"] = self.offset
            d["outcome"] = self.outcome
        return d


@dataclass(frozen=True, slots=True)
class Poll:
    """A poll: no records on invoke; on completion the records it returned. The final
    drain's polls carry role "drain", `at_end` where a partition was read to its end,
    and `held` where its read_committed end sat below the high watermark (an open
    transaction holds the rest back; `offset` is that high watermark)."""

    op: ClassVar[str] = "poll"
    records: tuple[Record, ...] | None = None
    role: str | None = None
    at_end: tuple[TopicOffset, ...] | None = None
    held: tuple[TopicOffset, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": "poll"}
        if self.role is not None:
            d["role"] = self.role
        if self.records is not None:
            d["records"] = _dicts(self.records)
        if self.at_end is not None:
            d["at_end"] = _dicts(self.at_end)
        if self.held is not None:
            d["held"] = _dicts(self.held)
        return d


@dataclass(frozen=True, slots=True)
class Processed:
    """The records a group member's application handled (its side effect)."""

    op: ClassVar[str] = "process"
    records: tuple[Record, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"op": "process", "records": _dicts(self.records)}


@dataclass(frozen=True, slots=True)
class Commit:
    op: ClassVar[str] = "commit"
    offsets: tuple[TopicOffset, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"op": "commit", "offsets": _dicts(self.offsets)}


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """A group's committed offsets after the fault phase (role: consumer or copier)."""

    op: ClassVar[str] = "group-offsets"
    role: str
    group: str
    offsets: tuple[TopicOffset, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": "group-offsets", "role": self.role, "group": self.group}
        if self.offsets is not None:
            d["offsets"] = _dicts(self.offsets)
        return d


@dataclass(frozen=True, slots=True)
class Rebalance:
    """assign, revoke or lost: partitions moved to or from a group member."""

    kind: Literal["assign", "revoke", "lost"]
    partitions: tuple[int, ...]

    @property
    def op(self) -> str:
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.kind, "partitions": list(self.partitions)}


@dataclass(frozen=True, slots=True)
class MemberEvent:
    """What a group member did to itself: crash (at `point`), leave, join, or stall
    (for `ms`, past max.poll.interval.ms)."""

    kind: Literal["crash", "leave", "join", "stall"]
    point: str | None = None
    ms: int | None = None

    @property
    def op(self) -> str:
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.kind}
        if self.point is not None:
            d["point"] = self.point
        if self.ms is not None:
            d["ms"] = self.ms
        return d


MicroOp = Send | Poll | Processed | Commit | GroupOffsets | Rebalance | MemberEvent
MICRO_OPS: tuple[type, ...] = (Send, Poll, Processed, Commit, GroupOffsets, Rebalance, MemberEvent)


def encode(o: Any) -> Any:
    """json.dumps hook: micro-ops and their parts become their documented dicts."""
    to_dict = getattr(o, "to_dict", None)
    if to_dict is None:
        raise TypeError(f"{type(o).__name__} is not part of the history format")
    return to_dict()


# --- the schema, for readers that need one (Spark) -------------------------------------

FieldKind = Literal["string", "long", "bool", "records", "offsets", "longs"]

_KINDS: dict[str, FieldKind] = {
    "str": "string",
    "str | None": "string",
    "Outcome | None": "string",
    "Literal['assign', 'revoke', 'lost']": "string",
    "Literal['crash', 'leave', 'join', 'stall']": "string",
    "int": "long",
    "int | None": "long",
    "bool": "bool",
    "tuple[Record, ...]": "records",
    "tuple[Record, ...] | None": "records",
    "tuple[TopicOffset, ...]": "offsets",
    "tuple[TopicOffset, ...] | None": "offsets",
    "tuple[int, ...]": "longs",
}
# The written name of a field whose attribute name differs (`kind` is written as op).
_WRITTEN_AS = {"kind": "op"}


def micro_op_fields() -> dict[str, FieldKind]:
    """Every key any micro-op can carry, with its kind: the union over MICRO_OPS."""
    out: dict[str, FieldKind] = {"op": "string"}
    for cls in MICRO_OPS:
        for f in dataclasses.fields(cls):
            name = _WRITTEN_AS.get(f.name, f.name)
            kind = _KINDS[str(f.type)]
            if out.setdefault(name, kind) != kind:
                raise TypeError(f"micro-op key {name} has two kinds: {out[name]} and {kind}")
    return out


def _plain_fields(cls: type) -> dict[str, FieldKind]:
    return {f.name: _KINDS[str(f.type)] for f in dataclasses.fields(cls)}


RECORD_FIELDS: dict[str, FieldKind] = _plain_fields(Record)
OFFSET_FIELDS: dict[str, FieldKind] = _plain_fields(TopicOffset)
