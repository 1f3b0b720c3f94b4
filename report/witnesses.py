"""A witness in words: its sends, its reads, what was read at its position instead,
what it proves (the anomaly registry's wording), and the faults in between.

The ops come from report-data.json (Spark's `report_data`), bounded per witness."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.checkers.results import Example
from kafka_trial.contracts.report_data import ReadPast, ReadValue, ReportData, SentValue
from kafka_trial.report.faults import Fault, active


def _e(v: Any) -> str:
    return escape(str(v))


def _s(t_ns: float | None) -> str:
    return f"{t_ns / 1e9:.3f}s" if t_ns is not None else "?"


def sends_of(data: ReportData | None, value: int | None) -> list[SentValue]:
    """Every send of `value` report-data.json holds."""
    if data is None or value is None:
        return []
    return [s for s in data.witnesses.sends if s.value == value]


def _reads_of(data: ReportData | None, value: int | None) -> list[ReadValue]:
    if data is None or value is None:
        return []
    return [r for r in data.witnesses.reads if r.value == value]


def reads_at(data: ReportData | None, topic: str, partition: int, offset: int) -> list[ReadValue]:
    """Every read at a position, whatever value it returned."""
    if data is None:
        return []
    return [
        r
        for r in data.witnesses.at_position
        if (r.topic, r.partition, r.offset) == (topic, partition, offset)
    ]


def _who(r: ReadValue | ReadPast) -> str:
    return f"{_e(r.role or 'consumer')} process {_e(r.process)}"


def _sends(sends: list[SentValue]) -> tuple[list[str], float | None]:
    parts: list[str] = []
    mark: float | None = None
    for s in sends[:4]:
        acked = s.outcome == "ok"
        where = f"partition {s.partition} offset {s.offset}"
        parts.append(
            f"Sent by process {_e(s.process)} in {_e(s.f)} op #{_e(s.index)}"
            f": invoked {_s(s.invoke_time)}, completed {_s(s.time)} "
            f"<b>{_e(s.outcome)}</b>" + (f" at {where}" if acked else "") + "."
        )
        if acked and mark is None and s.time is not None:
            mark = s.time / 1e9
    return parts, mark


def _reads(reads: list[ReadValue]) -> list[str]:
    if not reads:
        return ["No read ever returned this value."]
    parts = [
        f"Read by {_who(r)} (op #{_e(r.index)}, {_s(r.time)}) at partition "
        f"{_e(r.partition)} offset {_e(r.offset)}."
        for r in reads[:4]
    ]
    if len(reads) > 4:
        parts.append(f"... and {len(reads) - 4} more reads of it.")
    return parts


def _position(ex: Example, data: ReportData | None, reads: list[ReadValue]) -> list[str]:
    """What reads found at the witness's position instead, and the reads that went past it."""
    if ex.topic is None or ex.partition is None or ex.offset is None:
        return []
    pos = (ex.topic, ex.partition, ex.offset)
    parts: list[str] = []
    at = reads_at(data, *pos)
    others = [r for r in at if r.value != ex.value]
    if others:
        parts.append(
            f"At partition {pos[1]} offset {pos[2]}, reads returned instead: "
            + "; ".join(f"value {_e(r.value)} ({_who(r)}, {_s(r.time)})" for r in others[:4])
            + "."
        )
    elif ex.value is not None and data is not None and not at:
        parts.append(f"No read returned any record at partition {pos[1]} offset {pos[2]}.")
    if data is None:
        return parts
    past = [
        r for r in data.witnesses.past_position if (r.p_topic, r.p_partition, r.p_offset) == pos
    ]
    if past and not reads:
        parts.append(
            f"Reads that went past offset {pos[2]} first: "
            + "; ".join(
                f"{_who(r)} read offset {_e(r.offset)} (value {_e(r.value)}, op "
                f"#{_e(r.index)}, {_s(r.time)})"
                for r in past
            )
            + "."
        )
    return parts


def explain(
    name: str, ex: Example, data: ReportData | None, fs: list[Fault], t_end: float
) -> tuple[str, float | None]:
    """An example in words, from the history. Returns (html, time to mark)."""
    if ex.steps is not None:
        return cycle_story(ex)
    sends = sends_of(data, ex.value)
    reads = _reads_of(data, ex.value)
    parts, mark = _sends(sends)
    if ex.value is not None and data is not None:
        parts += _reads(reads)
    parts += _position(ex, data, reads)
    if (proves := ANOMALIES[name].explain(ex.evidence) if name in ANOMALIES else None) is not None:
        parts.append(_e(proves))
    if mark is not None:
        during = _during(mark, reads, fs, t_end)
        parts.append(
            "Faults active between the acknowledgement and the last read: "
            + (", ".join(_e(a) for a in during) if during else "none")
            + "."
        )
    fields = ", ".join(f"{_e(k)}={_e(_brief(v))}" for k, v in ex.evidence.items())
    parts.append(f'<span class="fields">evidence: {fields}</span>')
    return " ".join(parts), mark


def _brief(v: Any, keep: int = 6) -> str:
    """A field as JSON, a long list cut to its ends and its length: a hundred skipped
    offsets say no more than the first few, the last and how many."""
    if isinstance(v, list) and len(v) > keep:
        head = ", ".join(json.dumps(x) for x in v[: keep - 1])
        return f"[{head}, ... {json.dumps(v[-1])}] ({len(v)} items)"
    return json.dumps(v)


def _during(mark: float, reads: list[ReadValue], fs: list[Fault], t_end: float) -> list[str]:
    last_read = max((r.time / 1e9 for r in reads if r.time is not None), default=t_end)
    return active(fs, mark, last_read)


# Evidence fields that differ from one witness to the next of a run of them.
_OWN = ("value", "offset")


def _story(ex: Example, data: ReportData | None, fs: list[Fault], t_end: float) -> tuple[Any, ...]:
    """What a witness's explanation says apart from its value and position: its other
    evidence, how its sends ended, whether anyone read it, and the faults it fell into."""
    sends = sends_of(data, ex.value)
    reads = _reads_of(data, ex.value)
    mark = _sends(sends)[1]
    return (
        json.dumps({k: v for k, v in ex.evidence.items() if k not in _OWN}, sort_keys=True),
        tuple(s.outcome for s in sends),
        bool(reads),
        tuple(_during(mark, reads, fs, t_end)) if mark is not None else (),
    )


def runs(
    examples: Sequence[Example], data: ReportData | None, fs: list[Fault], t_end: float
) -> list[list[int]]:
    """The examples (by index) in runs: each next one at the next offset of the same
    partition with the same explanation joins the run before it."""
    out: list[list[int]] = []
    prev: tuple[Any, ...] | None = None
    for i, ex in enumerate(examples):
        story = _story(ex, data, fs, t_end)
        off = ex.offset
        if out and prev == story and off is not None and examples[out[-1][-1]].offset == off - 1:
            out[-1].append(i)
        else:
            out.append([i])
        prev = story
    return out


def ack_time(ex: Example, data: ReportData | None) -> float | None:
    """When the witness's value was first acknowledged, in seconds; None if never."""
    return _sends(sends_of(data, ex.value))[1]


def cycle_story(ex: Example) -> tuple[str, float | None]:
    """A dependency cycle (spark_analysis/cycles) step by step, each op linked to the
    timeline: "op #3 wrote 5 to t/0 at offset 17; op #8 read it; ...". The mark is
    when the first op ended."""

    def op(i: int | None, t: int | None) -> str:
        return f'<a href="#timeline" title="at {_s(t)}">op #{_e(i)}</a>'

    steps = ex.steps or ()
    said: list[str] = []
    for s in steps:
        a, b = op(s.from_op, s.from_time), op(s.to_op, s.to_time)
        where = f"{_e(s.topic)}/{_e(s.partition)}"
        if s.kind == "wr":
            said.append(
                f"{a} (process {_e(s.from_process)}) wrote {_e(s.value)} to "
                f"{where} at offset {_e(s.offset)}; {b} (process "
                f"{_e(s.to_process)}) read it"
            )
        elif s.kind == "ww":
            said.append(
                f"{a} wrote {_e(s.value)} to {where} at offset {_e(s.offset)}, "
                f"and {b} wrote the next value there, {_e(s.next_value)} at offset "
                f"{_e(s.next_offset)}"
            )
        elif s.kind == "process":
            said.append(f"process {_e(s.from_process)} ran {a} before {b}")
        else:
            said.append(
                f"{a} completed at {_s(s.from_time)} (line {_e(s.from_done)}), "
                f"before {b} was invoked at {_s(s.to_time)} (line "
                f"{_e(s.to_invoked)})"
            )
    n = len(steps)
    tail = (
        ""
        if ex.shortest
        else " (a short one: the component is too large to search for the shortest)"
    )
    text = (
        "; ".join(said)
        + f". So each op depends on itself: a cycle of {n} edges{tail}, in a strongly "
        f"connected component of {_e(ex.ops)} ops."
    )
    first = steps[0].from_time if n else None
    return text, first / 1e9 if first is not None else None
