"""A second, deliberately plain implementation of the core checks, for differential tests.

Written from the definitions in checkers/anomalies.py (README's "Anomalies checked"),
not from the Spark job: dicts and loops over the history's op dicts, so that a
disagreement with spark_analysis points at a bug in one of the two.

Each check returns the set of keys it flags, in the shape `spark_keys` in
tests/unit/test_differential.py extracts from the Spark rows: a value for the
value-unit checks, (topic, partition, offset) for inconsistent-offsets, and a tuple
naming both members of the pair for the pair checks. Processes are strings, as the
Spark frames read them.

Covered: lost-write, unseen, duplicate, inconsistent-offsets, unexpected,
aborted-read, reorder, int-nonmonotonic-send, client-reorder, nonmonotonic-poll,
int-nonmonotonic-poll. Rebalances are not modelled (assign-mode consumers only) and
transactions are not either: a history with txn or rebalance ops is out of scope.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

Key = Any

CHECKED = (
    "lost-write",
    "unseen",
    "duplicate",
    "inconsistent-offsets",
    "unexpected",
    "aborted-read",
    "reorder",
    "int-nonmonotonic-send",
    "client-reorder",
    "nonmonotonic-poll",
    "int-nonmonotonic-poll",
)


@dataclass
class SendRow:
    value: int
    process: str
    index: int  # the completing op's index (invocation order within a process)
    pos: int
    topic: str
    partition: int | None
    offset: int | None
    outcome: str
    client: int | None = None
    seq: int | None = None


@dataclass
class ReadRow:
    value: int | None
    process: str
    index: int
    topic: str
    partition: int
    offset: int
    role: str | None


@dataclass
class History:
    attempted: set[int] = field(default_factory=set)
    sends: list[SendRow] = field(default_factory=list)
    reads: list[ReadRow] = field(default_factory=list)  # in (index, record) order
    # (topic, partition) -> end offset the final drain read that partition to
    drain_ends: dict[tuple[str, int], int] = field(default_factory=dict)


def parse(ops: list[dict[str, Any]]) -> History:
    """The sends, reads and drain ends of a history's ops (in index order)."""
    h = History()
    open_invoke: dict[str, dict[str, Any]] = {}
    for op in sorted(ops, key=lambda o: o["index"]):
        process = str(op["process"])
        if process == "nemesis":
            continue
        micro = op.get("value") or []
        if op["type"] == "invoke":
            open_invoke[process] = op
            for m in micro:
                if m.get("op") == "send":
                    h.attempted.add(m["value"])
            continue
        open_invoke.pop(process, None)
        for pos, m in enumerate(micro):
            if m.get("op") == "send" and op["f"] in ("send", "txn"):
                # The op's type stands for a send that carries no outcome of its own.
                outcome = op["type"] if op["f"] == "txn" else (m.get("outcome") or op["type"])
                h.sends.append(
                    SendRow(
                        m["value"],
                        process,
                        op["index"],
                        pos,
                        m["topic"],
                        m.get("partition"),
                        m.get("offset"),
                        outcome,
                        m.get("client"),
                        m.get("seq"),
                    )
                )
            if m.get("op") == "poll" and op["type"] == "ok" and op["f"] in ("poll", "txn"):
                for r in m.get("records") or []:
                    h.reads.append(
                        ReadRow(
                            r["value"],
                            process,
                            op["index"],
                            r["topic"],
                            r["partition"],
                            r["offset"],
                            m.get("role"),
                        )
                    )
                if m.get("role") == "drain":
                    for e in m.get("at_end") or []:
                        tp = (e["topic"], e["partition"])
                        h.drain_ends[tp] = max(h.drain_ends.get(tp, e["offset"]), e["offset"])
    # A send whose op never completed may or may not have happened.
    for process, op in open_invoke.items():
        for pos, m in enumerate(op.get("value") or []):
            if m.get("op") == "send":
                h.sends.append(
                    SendRow(
                        m["value"],
                        process,
                        op["index"],
                        pos,
                        m["topic"],
                        m.get("partition"),
                        None,
                        "info",
                        m.get("client"),
                        m.get("seq"),
                    )
                )
    return h


def lost_and_unseen(h: History) -> tuple[set[Key], set[Key]]:
    read_values = {r.value for r in h.reads}
    max_read: dict[tuple[str, int], int] = {}
    for r in h.reads:
        tp = (r.topic, r.partition)
        max_read[tp] = max(max_read.get(tp, r.offset), r.offset)
    lost: set[Key] = set()
    never_read: set[Key] = set()
    for s in h.sends:
        if s.outcome != "ok" or s.value in read_values:
            continue
        never_read.add(s.value)
        tp = (s.topic, s.partition)
        read_past = s.offset is not None and tp in max_read and max_read[tp] >= s.offset
        # The drain read the partition to its end and did not find it: lost, whether
        # the end is below the offset (truncated) or no offset is known (acks=0).
        to_end = s.partition is not None and tp in h.drain_ends
        if read_past or to_end:
            lost.add(s.value)
    return lost, never_read - lost


def _observations(h: History) -> set[tuple[int | None, str, int, int]]:
    """(value, topic, partition, offset): every record read, and every acknowledged
    send whose offset is known."""
    obs = {(r.value, r.topic, r.partition, r.offset) for r in h.reads}
    for s in h.sends:
        if s.outcome == "ok" and s.offset is not None and s.partition is not None:
            obs.add((s.value, s.topic, s.partition, s.offset))
    return obs


def duplicate(h: History) -> set[Key]:
    positions: dict[int, set[tuple[str, int, int]]] = defaultdict(set)
    for v, t, p, o in _observations(h):
        if v is not None:
            positions[v].add((t, p, o))
    return {v for v, at in positions.items() if len(at) >= 2}


def inconsistent_offsets(h: History) -> set[Key]:
    values: dict[tuple[str, int, int], set[int]] = defaultdict(set)
    for v, t, p, o in _observations(h):
        if v is not None:
            values[(t, p, o)].add(v)
    return {k for k, vs in values.items() if len(vs) >= 2}


def unexpected(h: History) -> set[Key]:
    """Values no send attempted; a record whose value did not decode is one too, keyed
    by its position since it has no value."""
    out: set[Key] = set()
    for r in h.reads:
        if r.value is None:
            out.add(("undecodable", r.partition, r.offset))
        elif r.value not in h.attempted:
            out.add(r.value)
    return out


def aborted_read(h: History) -> set[Key]:
    # A value sent more than once was maybe written if any of its sends was not a fail.
    outcomes: dict[int, set[str]] = defaultdict(set)
    for s in h.sends:
        outcomes[s.value].add(s.outcome)
    failed = {v for v, o in outcomes.items() if o == {"fail"}}
    return {r.value for r in h.reads if r.value in failed}


def _backwards(groups: dict[Any, list[SendRow]]) -> list[tuple[SendRow, SendRow]]:
    """Adjacent (earlier, later) acknowledged sends of each group, later lower."""
    out = []
    for rows in groups.values():
        rows.sort(key=lambda s: (s.index, s.pos))
        for a, b in itertools.pairwise(rows):
            assert a.offset is not None and b.offset is not None
            if b.offset < a.offset:
                out.append((a, b))
    return out


def _acked_with_offset(h: History) -> list[SendRow]:
    return [s for s in h.sends if s.outcome == "ok" and s.offset is not None]


def reorder(h: History) -> set[Key]:
    groups: dict[Any, list[SendRow]] = defaultdict(list)
    for s in _acked_with_offset(h):
        groups[(s.process, s.topic, s.partition)].append(s)
    return {
        (b.process, b.topic, b.partition, a.value, a.offset, b.value, b.offset)
        for a, b in _backwards(groups)
    }


def int_nonmonotonic_send(h: History) -> set[Key]:
    groups: dict[Any, list[SendRow]] = defaultdict(list)
    for s in _acked_with_offset(h):
        groups[(s.index, s.topic, s.partition)].append(s)
    return {
        (b.index, b.process, b.topic, b.partition, a.value, a.offset, b.value, b.offset)
        for a, b in _backwards(groups)
    }


def client_reorder(h: History) -> set[Key]:
    """Adjacent in each client's produce() order (seq), per partition."""
    groups: dict[Any, list[SendRow]] = defaultdict(list)
    for s in _acked_with_offset(h):
        if s.client is not None:
            groups[(s.client, s.topic, s.partition)].append(s)
    out: set[Key] = set()
    for rows in groups.values():
        rows.sort(key=lambda s: s.seq if s.seq is not None else -1)
        for a, b in itertools.pairwise(rows):
            assert a.offset is not None and b.offset is not None
            if b.offset < a.offset:
                out.add((b.client, b.topic, b.partition, a.value, a.offset, b.value, b.offset))
    return out


def _consecutive_reads(h: History) -> list[tuple[ReadRow, ReadRow]]:
    """(previous, next) reads of the same process and partition, in history order.
    Only poll ops: no rebalances or transactions are modelled, so one assignment."""
    last: dict[tuple[str, str, int], ReadRow] = {}
    pairs = []
    for r in h.reads:
        k = (r.process, r.topic, r.partition)
        if k in last:
            pairs.append((last[k], r))
        last[k] = r
    return pairs


def nonmonotonic_poll(h: History) -> set[Key]:
    return {
        (b.process, b.topic, b.partition, a.index, a.offset, a.value, b.index, b.offset, b.value)
        for a, b in _consecutive_reads(h)
        if a.index != b.index and b.offset <= a.offset
    }


def int_nonmonotonic_poll(h: History) -> set[Key]:
    return {
        (b.index, b.process, b.topic, b.partition, a.offset, a.value, b.offset, b.value)
        for a, b in _consecutive_reads(h)
        if a.index == b.index and b.offset <= a.offset
    }


def check(ops: list[dict[str, Any]]) -> dict[str, set[Key]]:
    """Every covered check's flagged keys for one history's ops."""
    h = parse(ops)
    lost, unseen = lost_and_unseen(h)
    return {
        "lost-write": lost,
        "unseen": unseen,
        "duplicate": duplicate(h),
        "inconsistent-offsets": inconsistent_offsets(h),
        "unexpected": unexpected(h),
        "aborted-read": aborted_read(h),
        "reorder": reorder(h),
        "int-nonmonotonic-send": int_nonmonotonic_send(h),
        "client-reorder": client_reorder(h),
        "nonmonotonic-poll": nonmonotonic_poll(h),
        "int-nonmonotonic-poll": int_nonmonotonic_poll(h),
    }
