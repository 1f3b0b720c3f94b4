"""A witness in words: its sends, its reads, what was read at its position instead,
what it proves (the anomaly registry's wording), and the faults in between.

The ops come from report-data.json (Spark's `report_data`), bounded per witness."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.report.faults import Fault, active


def _e(v: Any) -> str:
    return escape(str(v))


def _s(t_ns: Any) -> str:
    return f"{t_ns / 1e9:.3f}s" if isinstance(t_ns, (int, float)) else "?"


def ops_of(data: dict[str, Any] | None, kind: str, **match: Any) -> list[dict[str, Any]]:
    rows = ((data or {}).get("witnesses") or {}).get(kind) or []
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def _who(r: dict[str, Any]) -> str:
    return f"{_e(r.get('role') or 'consumer')} process {_e(r.get('process'))}"


def _sends(sends: list[dict[str, Any]]) -> tuple[list[str], float | None]:
    parts: list[str] = []
    mark: float | None = None
    for s in sends[:4]:
        acked = s.get("outcome") == "ok"
        where = f"partition {s.get('partition')} offset {s.get('offset')}"
        parts.append(
            f"Sent by process {_e(s.get('process'))} in {_e(s.get('f'))} op #{_e(s.get('index'))}"
            f": invoked {_s(s.get('invoke_time'))}, completed {_s(s.get('time'))} "
            f"<b>{_e(s.get('outcome'))}</b>" + (f" at {where}" if acked else "") + "."
        )
        if acked and mark is None and isinstance(s.get("time"), int):
            mark = s["time"] / 1e9
    return parts, mark


def _reads(reads: list[dict[str, Any]]) -> list[str]:
    if not reads:
        return ["No read ever returned this value."]
    parts = [
        f"Read by {_who(r)} (op #{_e(r.get('index'))}, {_s(r.get('time'))}) at partition "
        f"{_e(r.get('partition'))} offset {_e(r.get('offset'))}."
        for r in reads[:4]
    ]
    if len(reads) > 4:
        parts.append(f"... and {len(reads) - 4} more reads of it.")
    return parts


def _position(
    ex: dict[str, Any], data: dict[str, Any] | None, reads: list[dict[str, Any]]
) -> list[str]:
    """What reads found at the witness's position instead, and the reads that went past it."""
    value = ex.get("value")
    pos = (ex.get("topic"), ex.get("partition"), ex.get("offset"))
    if None in pos:
        return []
    parts: list[str] = []
    at = ops_of(data, "at_position", topic=pos[0], partition=pos[1], offset=pos[2])
    others = [r for r in at if r.get("value") != value]
    if others:
        parts.append(
            f"At partition {pos[1]} offset {pos[2]}, reads returned instead: "
            + "; ".join(
                f"value {_e(r.get('value'))} ({_who(r)}, {_s(r.get('time'))})" for r in others[:4]
            )
            + "."
        )
    elif value is not None and data is not None and not at:
        parts.append(f"No read returned any record at partition {pos[1]} offset {pos[2]}.")
    if data is None:
        return parts
    past = [
        r
        for r in ops_of(data, "past_position")
        if (r.get("p_topic"), r.get("p_partition"), r.get("p_offset")) == pos
    ]
    if past and not reads:
        parts.append(
            f"Reads that went past offset {pos[2]} first: "
            + "; ".join(
                f"{_who(r)} read offset {_e(r.get('offset'))} (value {_e(r.get('value'))}, op "
                f"#{_e(r.get('index'))}, {_s(r.get('time'))})"
                for r in past
            )
            + "."
        )
    return parts


def explain(
    name: str, ex: dict[str, Any], data: dict[str, Any] | None, fs: list[Fault], t_end: float
) -> tuple[str, float | None]:
    """An example in words, from the history. Returns (html, time to mark)."""
    if ex.get("steps") is not None:
        return cycle_story(ex)
    value = ex.get("value")
    sends = ops_of(data, "sends", value=value) if value is not None else []
    reads = ops_of(data, "reads", value=value) if value is not None else []
    parts, mark = _sends(sends)
    if value is not None and data is not None:
        parts += _reads(reads)
    parts += _position(ex, data, reads)
    if (proves := ANOMALIES[name].explain(ex) if name in ANOMALIES else None) is not None:
        parts.append(_e(proves))
    if mark is not None:
        during = _during(mark, reads, fs, t_end)
        parts.append(
            "Faults active between the acknowledgement and the last read: "
            + (", ".join(_e(a) for a in during) if during else "none")
            + "."
        )
    fields = ", ".join(f"{_e(k)}={_e(_brief(v))}" for k, v in ex.items())
    parts.append(f'<span class="fields">evidence: {fields}</span>')
    return " ".join(parts), mark


def _brief(v: Any, keep: int = 6) -> str:
    """A field as JSON, a long list cut to its ends and its length: a hundred skipped
    offsets say no more than the first few, the last and how many."""
    if isinstance(v, list) and len(v) > keep:
        head = ", ".join(json.dumps(x) for x in v[: keep - 1])
        return f"[{head}, ... {json.dumps(v[-1])}] ({len(v)} items)"
    return json.dumps(v)


def _during(mark: float, reads: list[dict[str, Any]], fs: list[Fault], t_end: float) -> list[str]:
    last_read = max(
        (r["time"] / 1e9 for r in reads if isinstance(r.get("time"), int)), default=t_end
    )
    return active(fs, mark, last_read)


# Evidence fields that differ from one witness to the next of a run of them.
_OWN = ("value", "offset")


def _story(
    ex: dict[str, Any], data: dict[str, Any] | None, fs: list[Fault], t_end: float
) -> tuple[Any, ...]:
    """What a witness's explanation says apart from its value and position: its other
    evidence, how its sends ended, whether anyone read it, and the faults it fell into."""
    value = ex.get("value")
    sends = ops_of(data, "sends", value=value) if value is not None else []
    reads = ops_of(data, "reads", value=value) if value is not None else []
    mark = _sends(sends)[1]
    return (
        json.dumps({k: v for k, v in ex.items() if k not in _OWN}, sort_keys=True),
        tuple(s.get("outcome") for s in sends),
        bool(reads),
        tuple(_during(mark, reads, fs, t_end)) if mark is not None else (),
    )


def runs(
    examples: Sequence[dict[str, Any]], data: dict[str, Any] | None, fs: list[Fault], t_end: float
) -> list[list[int]]:
    """The examples (by index) in runs: each next one at the next offset of the same
    partition with the same explanation joins the run before it."""
    out: list[list[int]] = []
    prev: tuple[Any, ...] | None = None
    for i, ex in enumerate(examples):
        story = _story(ex, data, fs, t_end)
        off = ex.get("offset")
        if (
            out
            and prev == story
            and isinstance(off, int)
            and examples[out[-1][-1]].get("offset") == off - 1
        ):
            out[-1].append(i)
        else:
            out.append([i])
        prev = story
    return out


def ack_time(ex: dict[str, Any], data: dict[str, Any] | None) -> float | None:
    """When the witness's value was first acknowledged, in seconds; None if never."""
    value = ex.get("value")
    return _sends(ops_of(data, "sends", value=value))[1] if value is not None else None


def cycle_story(ex: dict[str, Any]) -> tuple[str, float | None]:
    """A dependency cycle (checks_cycles.py) step by step, each op linked to the
    timeline: "op #3 wrote 5 to t/0 at offset 17; op #8 read it; ...". The mark is
    when the first op ended."""

    def op(i: Any, t: Any) -> str:
        return f'<a href="#timeline" title="at {_s(t)}">op #{_e(i)}</a>'

    said: list[str] = []
    for s in ex["steps"]:
        a, b = op(s.get("from_op"), s.get("from_time")), op(s.get("to_op"), s.get("to_time"))
        where = f"{_e(s.get('topic'))}/{_e(s.get('partition'))}"
        kind = s.get("kind")
        if kind == "wr":
            said.append(
                f"{a} (process {_e(s.get('from_process'))}) wrote {_e(s.get('value'))} to "
                f"{where} at offset {_e(s.get('offset'))}; {b} (process "
                f"{_e(s.get('to_process'))}) read it"
            )
        elif kind == "ww":
            said.append(
                f"{a} wrote {_e(s.get('value'))} to {where} at offset {_e(s.get('offset'))}, "
                f"and {b} wrote the next value there, {_e(s.get('next_value'))} at offset "
                f"{_e(s.get('next_offset'))}"
            )
        elif kind == "process":
            said.append(f"process {_e(s.get('from_process'))} ran {a} before {b}")
        else:
            said.append(
                f"{a} completed at {_s(s.get('from_time'))} (line {_e(s.get('from_done'))}), "
                f"before {b} was invoked at {_s(s.get('to_time'))} (line "
                f"{_e(s.get('to_invoked'))})"
            )
    n = len(ex["steps"])
    tail = (
        ""
        if ex.get("shortest", True)
        else " (a short one: the component is too large to search for the shortest)"
    )
    text = (
        "; ".join(said)
        + f". So each op depends on itself: a cycle of {n} edges{tail}, in a strongly "
        f"connected component of {_e(ex.get('ops'))} ops."
    )
    first = ex["steps"][0].get("from_time") if n else None
    return text, first / 1e9 if isinstance(first, int) else None
