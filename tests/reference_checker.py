"""A second, deliberately plain implementation of the core checks, for differential tests.

Written from the definitions in checkers/anomalies.py (README's "Anomalies checked"),
not from the Spark job: dicts and loops over the history's op dicts, so that a
disagreement with spark_analysis points at a bug in one of the two. It derives the
same facts as spark_analysis/facts/derived.py, independently: which sends must have
committed, the version order, the drain's frontier, and each record's place.

Each check returns the set of keys it flags, in the shape `spark_keys` in
tests/unit/test_differential.py extracts from the Spark rows: a value for the
value-unit checks, (topic, partition, offset) for inconsistent-offsets, (process,
index) for torn-txn, and a tuple naming both members of the pair for the pair and
skip checks. Processes are strings, as the Spark frames read them.

Covered: lost-write, unseen, vanished-read, duplicate, inconsistent-offsets,
unexpected, aborted-read, reorder, int-nonmonotonic-send, int-send-skip,
client-reorder, torn-txn, nonmonotonic-poll, int-nonmonotonic-poll, poll-skip,
int-poll-skip, group-redelivered, eos-output-duplicate, and the application on
trial's app-output-lost, app-output-duplicate, app-output-unexpected and
app-output-reorder. The application's output drain (poll micro-ops of role
"app-output") is kept apart from every other read, as the Spark frames keep it.
Rebalances are not modelled (assign-mode consumers only): a history with rebalance
ops is out of scope. fenced-write, which reads the nemesis's takeovers, is
`fenced_write`, apart from `check` (see its section).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

Key = Any
TP = tuple[str, int]

CHECKED = (
    "lost-write",
    "unseen",
    "vanished-read",
    "duplicate",
    "inconsistent-offsets",
    "unexpected",
    "aborted-read",
    "reorder",
    "int-nonmonotonic-send",
    "int-send-skip",
    "client-reorder",
    "torn-txn",
    "nonmonotonic-poll",
    "int-nonmonotonic-poll",
    "poll-skip",
    "int-poll-skip",
    "group-redelivered",
    "eos-output-duplicate",
    "group-missed",
    "eos-output-lost",
    "app-output-lost",
    "app-output-duplicate",
    "app-output-unexpected",
    "app-output-reorder",
)
APP_OUTPUT = "app-output"  # the role of the application's output drain's polls


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
    f: str = "send"
    must_commit: bool = False  # acknowledged, or its transaction proven committed


@dataclass
class ReadRow:
    value: int | None
    process: str
    index: int
    topic: str
    partition: int
    offset: int
    role: str | None
    f: str = "poll"


@dataclass
class History:
    attempted: set[int] = field(default_factory=set)
    sends: list[SendRow] = field(default_factory=list)
    # Records of ok ops, in (op, micro-op, record) order: what counts as read.
    reads: list[ReadRow] = field(default_factory=list)
    # Every record any poll micro-op returned, whatever its op's outcome.
    polled: list[ReadRow] = field(default_factory=list)
    # (topic, partition) -> end offset the final drain read that partition to (from
    # drain_events, once parsed)
    drain_ends: dict[TP, int] = field(default_factory=dict)
    # (topic, partition) -> [(index, "end" or "held", offset)]: a drain poll found the
    # partition at its end, or its end held below the high watermark
    drain_events: dict[TP, list[tuple[int, str, int | None]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    app_events: dict[TP, list[tuple[int, str, int | None]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    processed: list[tuple[int, int, str]] = field(default_factory=list)  # value, index, process
    # (role, (topic, partition)) -> the committed offsets a consumers' group ("consumer")
    # or the copier's ("copier") recorded as its final ones
    group_offsets: dict[tuple[str, TP], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # The records the application's output drain returned (ok ops): the input ids the
    # outputs carry; where it read each output partition to its end; and the app
    # group's committed offsets, (topic, partition) -> offset.
    app_output: list[ReadRow] = field(default_factory=list)
    app_ends: dict[TP, int] = field(default_factory=dict)
    app_offsets: dict[TP, int] = field(default_factory=dict)


def _send_row(op: dict[str, Any], process: str, pos: int, m: dict[str, Any]) -> SendRow:
    # Inside a txn the op's type is the outcome of every send in it; an op that never
    # completed is unknown.
    if op["type"] == "invoke":
        outcome, offset = "info", None
    else:
        outcome = op["type"] if op["f"] == "txn" else (m.get("outcome") or op["type"])
        offset = m.get("offset")
    return SendRow(
        m["value"],
        process,
        op["index"],
        pos,
        m["topic"],
        m.get("partition"),
        offset,
        outcome,
        m.get("client"),
        m.get("seq"),
        op["f"],
    )


def _app_completion(h: History, op: dict[str, Any], process: str, m: dict[str, Any]) -> None:
    """An ok op's app-output poll or app group offsets; nothing else of the app's is read."""
    if op["type"] != "ok":
        return
    if m.get("op") == "poll" and op["f"] == "poll":
        for r in m.get("records") or []:
            row = ReadRow(
                r["value"],
                process,
                op["index"],
                r["topic"],
                r["partition"],
                r["offset"],
                APP_OUTPUT,
            )
            h.app_output.append(row)
        _end_events(h.app_events, op["index"], m)
    if op["f"] == "group-offsets":
        for o in m.get("offsets") or []:
            tp = (o["topic"], o["partition"])
            if o["offset"] is not None:
                h.app_offsets[tp] = max(h.app_offsets.get(tp, o["offset"]), o["offset"])


def _completion(h: History, op: dict[str, Any], process: str) -> None:
    for pos, m in enumerate(op.get("value") or []):
        if m.get("role") == APP_OUTPUT or (
            m.get("op") == "group-offsets" and m.get("role") == "app"
        ):
            _app_completion(h, op, process, m)
            continue
        if m.get("op") == "send" and op["f"] in ("send", "txn"):
            h.sends.append(_send_row(op, process, pos, m))
        if m.get("op") == "poll" and op["f"] in ("poll", "txn"):
            for r in m.get("records") or []:
                row = ReadRow(
                    r["value"],
                    process,
                    op["index"],
                    r["topic"],
                    r["partition"],
                    r["offset"],
                    m.get("role"),
                    op["f"],
                )
                h.polled.append(row)
                if op["type"] == "ok":
                    h.reads.append(row)
            if m.get("role") == "drain" and op["type"] == "ok":
                _end_events(h.drain_events, op["index"], m)
        if m.get("op") == "group-offsets" and op["f"] == "group-offsets" and op["type"] == "ok":
            role = m.get("role") or "consumer"
            for o in m.get("offsets") or []:
                if o["offset"] is not None:
                    h.group_offsets[(role, (o["topic"], o["partition"]))].append(o["offset"])
        if m.get("op") == "process" and op["f"] == "process" and op["type"] == "ok":
            h.processed += [(r["value"], op["index"], process) for r in m.get("records") or []]


def parse(ops: list[dict[str, Any]]) -> History:
    """The facts of a history's ops (in index order)."""
    h = History()
    open_invoke: dict[str, dict[str, Any]] = {}
    for op in sorted(ops, key=lambda o: o["index"]):
        process = str(op["process"])
        if process == "nemesis":
            continue
        if op["type"] == "invoke":
            open_invoke[process] = op
            for m in op.get("value") or []:
                if m.get("op") == "send":
                    h.attempted.add(m["value"])
            continue
        open_invoke.pop(process, None)
        _completion(h, op, process)
    # A send whose op never completed may or may not have happened.
    for process, op in open_invoke.items():
        for pos, m in enumerate(op.get("value") or []):
            if m.get("op") == "send" and op["f"] in ("send", "txn"):
                h.sends.append(_send_row(op, process, pos, m))
    # A transaction of unknown outcome of which the drain (read_committed) read a
    # value committed: all of it. Only a value no other op may have sent proves it.
    drained = {r.value for r in h.reads if r.role == "drain"}
    senders: dict[int, set[int]] = defaultdict(set)
    for s in h.sends:
        if s.outcome != "fail":
            senders[s.value].add(s.index)
    unknown = [s for s in h.sends if s.f == "txn" and s.outcome == "info"]
    proven = {s.index for s in unknown if s.value in drained and senders[s.value] == {s.index}}
    for s in h.sends:
        s.must_commit = s.outcome == "ok" or s.index in proven
    h.drain_ends, h.app_ends = _ends(h.drain_events), _ends(h.app_events)
    return h


def _end_events(events: dict[TP, list[tuple[int, str, int | None]]], index: int, m: Any) -> None:
    for kind, key in (("end", "at_end"), ("held", "held")):
        for e in m.get(key) or []:
            events[(e["topic"], e["partition"])].append((index, kind, e["offset"]))


def _ends(events: dict[TP, list[tuple[int, str, int | None]]]) -> dict[TP, int]:
    """The furthest end per partition, unless the drain last found that partition's
    end held (a later poll, or the same one): records arrived past it behind an open
    transaction, so the end no longer proves the partition read."""
    out: dict[TP, int] = {}
    for tp, evs in events.items():
        ends = [(i, o) for i, k, o in evs if k == "end"]
        offsets = [o for _, o in ends if o is not None]
        held = [i for i, k, _ in evs if k == "held"]
        if offsets and (not held or max(i for i, _ in ends) > max(held)):
            out[tp] = max(offsets)
    return out


def drain_frontier(h: History) -> dict[TP, tuple[int | None, int | None]]:
    """(topic, partition) -> (the drain's end marker, the highest offset it returned)."""
    out: dict[TP, tuple[int | None, int | None]] = {tp: (e, None) for tp, e in h.drain_ends.items()}
    for r in h.reads:
        if r.role == "drain":
            tp = (r.topic, r.partition)
            end, top = out.get(tp, (None, None))
            out[tp] = (end, r.offset if top is None else max(top, r.offset))
    return out


def lost_and_unseen(h: History) -> tuple[set[Key], set[Key]]:
    read_values = {r.value for r in h.reads}
    max_read: dict[TP, int] = {}
    for r in h.reads:
        tp = (r.topic, r.partition)
        max_read[tp] = max(max_read.get(tp, r.offset), r.offset)
    frontier = drain_frontier(h)
    lost: set[Key] = set()
    never_read: set[Key] = set()
    for s in h.sends:
        if not s.must_commit or s.value in read_values:
            continue
        never_read.add(s.value)
        tp = (s.topic, s.partition)
        read_past = s.offset is not None and tp in max_read and max_read[tp] >= s.offset
        # The drain read the partition to its end and did not find it: lost, whether
        # the end lies above the offset, at or below it (truncated), or no offset is
        # known (acks=0).
        to_end = s.partition is not None and frontier.get(tp, (None, None))[0] is not None
        if read_past or to_end:
            lost.add(s.value)
    return lost, never_read - lost


def vanished_read(h: History) -> set[Key]:
    drained = {r.value for r in h.reads if r.role == "drain"}
    by_value: dict[int, list[SendRow]] = defaultdict(list)
    for s in h.sends:
        if s.f == "txn":
            by_value[s.value].append(s)
    uncommitted = {v for v, rows in by_value.items() if not any(s.must_commit for s in rows)}
    frontier = drain_frontier(h)
    out: set[Key] = set()
    for r in h.reads:
        if r.role == "drain" or r.value is None or r.value in drained | uncommitted:
            continue
        end, top = frontier.get((r.topic, r.partition), (None, None))
        if end is not None or (top is not None and r.offset <= top):
            out.add(r.value)
    return out


def torn_txn(h: History) -> set[Key]:
    read_values = {r.value for r in h.reads}
    lost, _ = lost_and_unseen(h)
    txns: dict[tuple[str, int], list[SendRow]] = defaultdict(list)
    for s in h.sends:
        if s.f == "txn" and s.must_commit:
            txns[(s.process, s.index)].append(s)
    return {
        k
        for k, rows in txns.items()
        if any(s.value in read_values for s in rows) and any(s.value in lost for s in rows)
    }


def _observations(h: History) -> set[tuple[int | None, str, int, int]]:
    """The version order, (value, topic, partition, offset): every record any poll
    returned, and every send that must have committed whose offset is known."""
    obs = {(r.value, r.topic, r.partition, r.offset) for r in h.polled}
    for s in h.sends:
        if s.must_commit and s.offset is not None and s.partition is not None:
            obs.add((s.value, s.topic, s.partition, s.offset))
    return obs


def duplicate(h: History) -> set[Key]:
    positions: dict[int, set[tuple[str, int, int]]] = defaultdict(set)
    for v, t, p, o in _observations(h):
        if v is not None:
            positions[v].add((t, p, o))
    return {v for v, at in positions.items() if len(at) >= 2}


def eos_output_duplicate(h: History) -> set[Key]:
    """Output values are -(v + 1): each input value's output at two or more positions."""
    return {-v - 1 for v in duplicate(h) if v < 0}


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


def _never_written(h: History) -> set[int]:
    # A value sent more than once was maybe written if any of its sends was not a fail.
    outcomes: dict[int, set[str]] = defaultdict(set)
    for s in h.sends:
        outcomes[s.value].add(s.outcome)
    return {v for v, o in outcomes.items() if o == {"fail"}}


def aborted_read(h: History) -> set[Key]:
    failed = _never_written(h)
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


def _adjacent_sends(h: History) -> list[tuple[SendRow, int, SendRow, int]]:
    """(send, where it sits, the op's next send to that partition, where that sits):
    a send sits at its offset if it must have committed and the offset is known,
    else at the lowest offset the version order holds its value at in that partition."""
    found: dict[tuple[int | None, str, int], int] = {}
    for v, t, p, o in _observations(h):
        found[(v, t, p)] = min(found.get((v, t, p), o), o)
    groups: dict[Any, list[tuple[int, SendRow, int]]] = defaultdict(list)
    for s in h.sends:
        if s.partition is None:
            continue
        own = s.offset if s.must_commit and s.offset is not None else None
        at = own if own is not None else found.get((s.value, s.topic, s.partition))
        if at is not None:
            groups[(s.index, s.topic, s.partition)].append((s.pos, s, at))
    out = []
    for rows in groups.values():
        rows.sort(key=lambda x: x[0])
        for (_, a, ao), (_, b, bo) in itertools.pairwise(rows):
            out.append((a, ao, b, bo))
    return out


def int_nonmonotonic_send(h: History) -> set[Key]:
    return {
        (b.index, b.process, b.topic, b.partition, a.value, ao, b.value, bo)
        for a, ao, b, bo in _adjacent_sends(h)
        if bo < ao
    }


def int_send_skip(h: History) -> set[Key]:
    """Adjacent sends of one op with a third record of the version order between."""
    held: dict[TP, list[tuple[int, int | None]]] = defaultdict(list)
    for v, t, p, o in _observations(h):
        held[(t, p)].append((o, v))
    out: set[Key] = set()
    for a, ao, b, bo in _adjacent_sends(h):
        ends = (a.value, b.value)
        if any(ao < o < bo and v not in ends for o, v in held[(b.topic, b.partition)]):
            out.add((b.index, b.process, b.topic, b.partition, a.value, ao, b.value, bo))
    return out


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
    """(previous, next) reads of the same process and partition, in history order (op,
    micro-op, record). Only poll ops: a transaction's reads make no position promise.
    No rebalances are modelled, so one assignment."""
    last: dict[tuple[str, str, int], ReadRow] = {}
    pairs = []
    for r in h.reads:
        if r.f != "poll":
            continue
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


def _skips(h: History, within_op: bool) -> set[Key]:
    """Consecutive reads that jumped over an offset known to hold a record: a write's
    that must have committed, or a record an ok read returned whose value some send
    could have committed (read_committed readers skip the rest)."""
    never = _never_written(h)
    known: dict[TP, set[int]] = defaultdict(set)
    for s in h.sends:
        if s.must_commit and s.offset is not None and s.partition is not None:
            known[(s.topic, s.partition)].add(s.offset)
    for r in h.reads:
        if r.value not in never:
            known[(r.topic, r.partition)].add(r.offset)
    out: set[Key] = set()
    for a, b in _consecutive_reads(h):
        if (a.index == b.index) != within_op or b.offset <= a.offset + 1:
            continue
        if any(a.offset < o < b.offset for o in known[(b.topic, b.partition)]):
            key = (b.index, b.process, b.topic, b.partition, a.offset, b.offset)
            out.add(key if within_op else (a.index, *key))
    return out


def group_redelivered(h: History) -> set[Key]:
    times: dict[int, int] = defaultdict(int)
    for v, _, _ in h.processed:
        times[v] += 1
    return {v for v, n in times.items() if n > 1}


def _below(h: History, s: SendRow, role: str) -> bool:
    """The send lies below a final committed offset the `role` group recorded."""
    committed = h.group_offsets.get((role, (s.topic, s.partition)), [])
    return s.offset is not None and any(s.offset < c for c in committed)


def group_missed(h: History) -> set[Key]:
    """Values that must have committed, below the consumers' group's final committed
    offset of their partition, that no process op handled."""
    handled = {v for v, _, _ in h.processed}
    return {
        s.value
        for s in h.sends
        if s.must_commit and _below(h, s, "consumer") and s.value not in handled
    }


def eos_output_lost(h: History) -> set[Key]:
    """Input values that must have committed, below the copier's final committed offset
    of their partition, whose output -(v + 1) no read returned."""
    read = {r.value for r in h.reads}
    return {
        s.value
        for s in h.sends
        if s.must_commit
        and s.value is not None
        and s.value >= 0
        and _below(h, s, "copier")
        and -s.value - 1 not in read
    }


def _app_ids(h: History) -> list[ReadRow]:
    """Output records that carry an id (one without is undecided, never judged)."""
    return [r for r in h.app_output if r.value is not None]


def app_output_lost(h: History) -> set[Key]:
    """Inputs that must have committed, below the app group's committed offset of their
    partition, that no output record carries."""
    carried = {r.value for r in _app_ids(h)}
    out: set[Key] = set()
    for s in h.sends:
        if not s.must_commit or s.offset is None or s.value in carried:
            continue
        committed = h.app_offsets.get((s.topic, s.partition))  # type: ignore[arg-type]
        if committed is not None and s.offset < committed:
            out.add(s.value)
    return out


def app_output_duplicate(h: History) -> set[Key]:
    """Input values (attempted) the output carries at two or more positions."""
    positions: dict[int, set[tuple[str, int, int]]] = defaultdict(set)
    for r in _app_ids(h):
        if r.value in h.attempted:
            positions[r.value].add((r.topic, r.partition, r.offset))  # type: ignore[index]
    return {v for v, at in positions.items() if len(at) >= 2}


def app_output_unexpected(h: History) -> set[Key]:
    return {r.value for r in _app_ids(h) if r.value not in h.attempted}


def app_output_reorder(h: History) -> set[Key]:
    """Per output partition and key (the input's partition, from its lowest position in
    the version order), each input's first output in output order: adjacent pairs
    whose input offsets run backwards."""
    inputs: dict[int, tuple[str, int, int]] = {}
    for v, t, p, o in _observations(h):
        if v is not None:
            inputs[v] = min(inputs.get(v, (t, p, o)), (t, p, o))
    firsts: dict[tuple[int, str, int], int] = {}
    for r in _app_ids(h):
        k = (r.value, r.topic, r.partition)  # type: ignore[assignment]
        firsts[k] = min(firsts.get(k, r.offset), r.offset)  # type: ignore[index]
    groups: dict[Any, list[tuple[int, int, int]]] = defaultdict(list)
    for (v, t, p), o in firsts.items():
        if v in inputs:
            kt, kp, ko = inputs[v]
            groups[(t, p, kt, kp)].append((o, v, ko))
    out: set[Key] = set()
    for (t, p, _, _), rows in groups.items():
        rows.sort()
        for (ao, av, ai), (bo, bv, bi) in itertools.pairwise(rows):
            if ai > bi:
                out.add((t, p, av, ao, bv, bo))
    return out


def check(ops: list[dict[str, Any]]) -> dict[str, set[Key]]:
    """Every covered check's flagged keys for one history's ops."""
    h = parse(ops)
    lost, unseen = lost_and_unseen(h)
    return {
        "lost-write": lost,
        "unseen": unseen,
        "vanished-read": vanished_read(h),
        "duplicate": duplicate(h),
        "inconsistent-offsets": inconsistent_offsets(h),
        "unexpected": unexpected(h),
        "aborted-read": aborted_read(h),
        "reorder": reorder(h),
        "int-nonmonotonic-send": int_nonmonotonic_send(h),
        "int-send-skip": int_send_skip(h),
        "client-reorder": client_reorder(h),
        "torn-txn": torn_txn(h),
        "nonmonotonic-poll": nonmonotonic_poll(h),
        "int-nonmonotonic-poll": int_nonmonotonic_poll(h),
        "poll-skip": _skips(h, within_op=False),
        "int-poll-skip": _skips(h, within_op=True),
        "group-redelivered": group_redelivered(h),
        "eos-output-duplicate": eos_output_duplicate(h),
        "group-missed": group_missed(h),
        "eos-output-lost": eos_output_lost(h),
        "app-output-lost": app_output_lost(h),
        "app-output-duplicate": app_output_duplicate(h),
        "app-output-unexpected": app_output_unexpected(h),
        "app-output-reorder": app_output_reorder(h),
    }


# ---------------------------------------------------------------- fenced sessions
#
# fenced-write (checkers/anomalies.py) needs the nemesis's ops, which `parse` skips,
# and is kept out of CHECKED and `check`: the differential test's histories share one
# file with no nemesis, and tests/unit/test_differential_fenced.py compares it apart.

FENCE_OP = "hijack-txn"  # the op a takeover of a transactional.id records


def _fences(ops: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """client -> (time, index) of the first ok takeover that named it."""
    out: dict[int, tuple[int, int]] = {}
    for op in ops:
        v = op.get("value")
        if op["process"] != "nemesis" or op["f"] != FENCE_OP or op["type"] != "ok":
            continue
        if not isinstance(v, dict) or type(v.get("client")) is not int:
            continue
        out[v["client"]] = min(
            out.get(v["client"], (op["time"], op["index"])), (op["time"], op["index"])
        )
    return out


def _invoke_times(ops: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """(process, op index) -> when the op was invoked: a completion's invoke is its
    process's op just before it; an invoke never completed is its own."""
    out: dict[tuple[str, int], int] = {}
    last: dict[str, dict[str, Any]] = {}
    for op in sorted(ops, key=lambda o: o["index"]):
        process = str(op["process"])
        if process == "nemesis":
            continue
        if op["type"] == "invoke":
            out[(process, op["index"])] = op["time"]
        elif process in last and last[process]["type"] == "invoke":
            out[(process, op["index"])] = last[process]["time"]
        last[process] = op
    return out


def fenced_write(ops: list[dict[str, Any]]) -> set[Key]:
    """Values of transactions a fenced client invoked after its fence that ended ok,
    or that the drain read while no other op's send, not failed, carried them."""
    fences = _fences(ops)
    h = parse(ops)
    invoked = _invoke_times(ops)
    drained = {r.value for r in h.reads if r.role == "drain"}
    senders: dict[int, set[int]] = defaultdict(set)
    for s in h.sends:
        if s.outcome != "fail":
            senders[s.value].add(s.index)
    out: set[Key] = set()
    for s in h.sends:
        if s.f != "txn" or s.client not in fences:
            continue
        at = invoked.get((s.process, s.index))
        if at is None or at <= fences[s.client][0]:
            continue
        if s.outcome == "ok" or (s.value in drained and not senders[s.value] - {s.index}):
            out.add(s.value)
    return out


# ---------------------------------------------------------------- dependency cycles
#
# G0, G1c, G1c-process and G1c-realtime (checkers/anomalies.py), from the definitions
# there and in spark_analysis/facts/derived.py, by dicts and a plain recursive Tarjan: every
# realtime pair is an edge here (the Spark job chains them through events), and the
# shortest cycle is a breadth-first search from every op of a component.

CYCLE_CHECKED = ("G0", "G1c", "G1c-process", "G1c-realtime")


@dataclass
class CycleOp:
    op: int  # the completion's index (the invoke's if it never completed)
    process: str
    f: str
    type: str
    inv: int
    done: int | None


@dataclass
class CycleGraph:
    ops: dict[int, CycleOp]
    # (from op, to op) -> the kinds of edge between them: ww, wr, process, realtime
    edges: dict[tuple[int, int], set[str]]


def _cycle_ops(ops: list[dict[str, Any]]) -> dict[int, CycleOp]:
    out: dict[int, CycleOp] = {}
    pending: dict[str, dict[str, Any]] = {}
    for op in sorted(ops, key=lambda o: o["index"]):
        process = str(op["process"])
        if process == "nemesis":
            continue
        if op["type"] == "invoke":
            pending[process] = op
            continue
        inv = pending.pop(process)
        if op["f"] in ("send", "txn", "poll"):
            out[op["index"]] = CycleOp(
                op["index"], process, op["f"], op["type"], inv["index"], op["index"]
            )
    for process, inv in pending.items():
        if inv["f"] in ("send", "txn", "poll"):
            out[inv["index"]] = CycleOp(inv["index"], process, inv["f"], "info", inv["index"], None)
    return out


def _writers(ops: list[dict[str, Any]]) -> dict[int, int]:
    """value -> the op whose send of it must have committed (`parse`'s must_commit),
    where every other op's send of it failed."""
    maybe: dict[int, set[int]] = defaultdict(set)
    committed: set[tuple[int, int]] = set()
    for s in parse(ops).sends:
        if s.outcome != "fail":
            maybe[s.value].add(s.index)
        if s.must_commit:
            committed.add((s.value, s.index))
    return {v: min(w) for v, w in maybe.items() if len(w) == 1 and (v, min(w)) in committed}


def _positions(ops: list[dict[str, Any]], writer: dict[int, int]) -> list[tuple[Any, ...]]:
    """(topic, partition, offset, value) the version order holds: every record any
    poll returned (whatever its op's type) and every committed send's own offset."""
    out: set[tuple[Any, ...]] = set()
    for op in ops:
        if op["type"] == "invoke" or op.get("process") == "nemesis":
            continue
        for m in op.get("value") or []:
            if m.get("op") == "poll" and m.get("role") != APP_OUTPUT:
                out |= {(r["topic"], r["partition"], r["offset"], r["value"]) for r in m["records"]}
    for s in parse(ops).sends:
        if writer.get(s.value) == s.index and None not in (s.partition, s.offset):
            out.add((s.topic, s.partition, s.offset, s.value))
    return [p for p in out if None not in p]


def _ww(ops: list[dict[str, Any]], writer: dict[int, int]) -> list[tuple[int, int]]:
    positions = _positions(ops, writer)
    held: dict[tuple[str, int, int], set[int]] = defaultdict(set)
    for t, p, o, v in positions:
        held[(t, p, o)].add(v)
    first: dict[tuple[str, int, int], int] = {}
    for t, p, o, v in positions:
        if len(held[(t, p, o)]) == 1 and v in writer:
            first[(t, p, v)] = min(o, first.get((t, p, v), o))
    logs: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for (t, p, v), o in first.items():
        logs[(t, p)].append((o, writer[v]))
    out = []
    for log in logs.values():
        log.sort()
        out += [(a, b) for (_, a), (_, b) in itertools.pairwise(log) if a != b]
    return out


def cycle_graph(ops: list[dict[str, Any]]) -> CycleGraph:
    h = parse(ops)
    table = _cycle_ops(ops)
    writer = _writers(ops)
    edges: dict[tuple[int, int], set[str]] = defaultdict(set)
    for a, b in _ww(ops, writer):
        edges[(a, b)].add("ww")
    for r in h.reads:
        if r.value in writer and writer[r.value] != r.index:
            edges[(writer[r.value], r.index)].add("wr")
    wr = [e for e, kinds in edges.items() if "wr" in kinds]
    readers = {b for _, b in wr if table[b].type == "ok"}
    writers = {a for a, _ in wr}
    by_process: dict[str, list[int]] = defaultdict(list)
    for o in sorted(readers | {w for w in writers if table[w].type == "ok"}):
        by_process[table[o].process].append(o)
    for chain in by_process.values():
        for a, b in itertools.pairwise(chain):
            edges[(a, b)].add("process")
    for a in readers:
        for b in writers:
            done = table[a].done
            if done is not None and done < table[b].inv:
                edges[(a, b)].add("realtime")
    return CycleGraph(table, dict(edges))


_CYCLE_KINDS = {
    "G0": ({"ww"}, None),
    "G1c": ({"wr"}, None),
    "G1c-process": ({"wr", "process"}, "process"),
    "G1c-realtime": ({"wr", "realtime"}, "realtime"),
}


def tarjan(succ: dict[int, list[int]]) -> list[list[int]]:
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    out: list[list[int]] = []

    def visit(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            out.append(scc)

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(
    g: CycleGraph, scc: set[int], kinds: set[str], required: str | None
) -> int | None:
    """The fewest edges of a cycle inside `scc` of those kinds that takes `required`."""
    best: int | None = None
    for s in scc:
        seen = {(s, required is None)}
        frontier = [(s, required is None)]
        depth = 0
        while frontier and (best is None or depth + 1 < best):
            depth += 1
            nxt = []
            for v, taken in frontier:
                for (a, b), ks in g.edges.items():
                    if a != v or b not in scc:
                        continue
                    for k in ks & kinds:
                        t = taken or k == required
                        if b == s and t:
                            best = depth if best is None else min(best, depth)
                        elif (b, t) not in seen:
                            seen.add((b, t))
                            nxt.append((b, t))
            frontier = nxt
    return best


def cycles(ops: list[dict[str, Any]]) -> dict[str, dict[int, tuple[int, int]]]:
    """type -> first op of each component holding such a cycle -> (ops in it, the
    length of its shortest such cycle)."""
    return cycles_of(cycle_graph(ops))


def cycles_of(g: CycleGraph) -> dict[str, dict[int, tuple[int, int]]]:
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for name, (kinds, required) in _CYCLE_KINDS.items():
        succ: dict[int, list[int]] = defaultdict(list)
        for (a, b), ks in g.edges.items():
            if ks & kinds:
                succ[a].append(b)
                succ.setdefault(b, [])
        found: dict[int, tuple[int, int]] = {}
        for scc in tarjan(succ):
            members = set(scc)
            inside = [ks for (a, b), ks in g.edges.items() if a in members and b in members]
            if len(scc) < 2 or (required and not any(required in ks for ks in inside)):
                continue
            length = shortest_cycle(g, members, kinds, required)
            assert length is not None
            found[min(scc)] = (len(scc), length)
        out[name] = found
    return out
