"""`Results`: what a judged history says, the one datum every output is made from.

The Spark job builds one and writes it as `results.json`; the text verdict, the HTML
report, JUnit, the campaign and the pytest plugin read it back with
`Results.from_json`. It is a public contract (docs/results.md): it grows only by
addition, no field changes meaning, and a reader ignores fields newer than itself,
so an older kafka-trial still reads a newer file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from kafka_trial.checkers.anomalies import ANOMALIES
from kafka_trial.checkers.verdict import Valid, exit_code
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.lenient import Lenient, StrictInt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

# Bumped only when a reader must tell two generations apart; additions do not bump it.
FORMAT = 1


class _Part(BaseModel):
    # Frozen like the spec and the ops; unknown fields are a newer writer's, not errors.
    model_config = ConfigDict(frozen=True, extra="ignore")


class AnomalyResult(_Part):
    """One anomaly type's finding."""

    count: int | None = Field(description="distinct instances found; None: the check crashed")
    unit: str = Field(description="what one instance is (values, offsets, pairs, txns, skips)")
    definition: str = Field("", description="the registry's definition, as judged")
    examples: tuple[dict[str, Any], ...] = Field(
        (), description="witnesses: up to 10 rows of the check, in key order"
    )
    undecided: str | None = Field(
        None, description="why a non-zero count proves nothing (the verdict is unknown)"
    )
    error: str | None = Field(None, description="the crash of a check whose count is None")
    skipped: str | None = Field(
        None,
        description="why the check did not run (its count is None): the verdict does not "
        "depend on it, and it proves nothing either way",
    )
    trace: str | None = Field(None, description="the end of that crash's traceback")

    def example_views(self) -> tuple[Example, ...]:
        """The examples as typed views (`Example`), in the same order."""
        return tuple(Example.of(e) for e in self.examples)


class CycleStep(_Part):
    """One edge of a cycle witness; a field the step does not hold is None."""

    kind: Lenient[str] = Field(None, description="wr, ww, process or realtime")
    from_op: Lenient[StrictInt] = None
    to_op: Lenient[StrictInt] = None
    from_process: Lenient[str] = None
    to_process: Lenient[str] = None
    topic: Lenient[str] = None
    partition: Lenient[StrictInt] = None
    value: Lenient[StrictInt] = None
    offset: Lenient[StrictInt] = None
    next_value: Lenient[StrictInt] = None
    next_offset: Lenient[StrictInt] = None
    from_done: Lenient[StrictInt] = None
    to_invoked: Lenient[StrictInt] = None
    from_time: Lenient[StrictInt] = None
    to_time: Lenient[StrictInt] = None


class Example(_Part):
    """A typed view of one witness (`AnomalyResult.example_views()`). Each check writes
    its own fields, so every typed one is None where the witness does not hold it in
    its type; `evidence` is the witness as the check wrote it."""

    evidence: dict[str, Any] = Field(description="the witness, in the check's key order")
    value: Lenient[StrictInt] = None
    topic: Lenient[str] = None
    partition: Lenient[StrictInt] = None
    offset: Lenient[StrictInt] = None
    first_op: Lenient[StrictInt] = None
    ops: Lenient[StrictInt] = None
    length: Lenient[StrictInt] = None
    shortest: Lenient[bool] = True
    steps: Lenient[tuple[CycleStep, ...]] = None

    @classmethod
    def of(cls, witness: Mapping[str, Any]) -> Example:
        typed = {k: v for k, v in witness.items() if k in cls.model_fields and k != "evidence"}
        return cls.model_validate({**typed, "evidence": dict(witness)})

    def shifted(self, by_ns: int) -> Example:
        """The witness with every history time in it (a cycle's steps) `by_ns` earlier."""
        return Example.of(_shifted(self.evidence, by_ns))


def _is_time(key: str) -> bool:
    return key in ("time", "t0", "t1") or key.endswith("_time")


def _shifted(obj: Any, by_ns: int) -> Any:
    """A copy of JSON data with its history times moved. A `value` is what an op
    recorded, not a time of ours: left alone."""
    if isinstance(obj, list):
        return [_shifted(v, by_ns) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        if _is_time(k) and isinstance(v, int) and not isinstance(v, bool):
            out[k] = v - by_ns
        else:
            out[k] = v if k == "value" else _shifted(v, by_ns)
    return out


class Stats(_Part):
    """Counts over the whole history."""

    ops: int = Field(0, description="every line that is an op")
    client_ops: int = Field(0, description="ops of client processes (not the nemesis)")
    ops_by_type: dict[str, int] = Field(
        default_factory=dict, description="invoke, ok, fail, info -> ops"
    )
    sends_attempted: int = Field(0, description="values a send or txn op tried to write")
    send_outcomes: dict[str, int] = Field(
        default_factory=dict, description="ok, fail, info -> values"
    )
    records_read: int = Field(0, description="records returned by every read, the drain's too")
    nemesis_ops: int = Field(0, description="nemesis invokes")
    faults_injected: int = Field(
        0, description="nemesis fault ops that completed ok (heals and waits not counted)"
    )
    nemesis_done: dict[str, int] = Field(
        default_factory=dict, description="nemesis f -> ops completed ok"
    )
    client_events: dict[str, int] = Field(
        default_factory=dict, description="crash, leave, join, stall, assign, revoke, lost -> ops"
    )
    span_s: float = Field(0.0, description="seconds from the first op to the last")


class DamagedLine(_Part):
    index: int | None = Field(description="the op index the damaged line carries, if readable")
    line: str = Field(description="the start of the line")


class HistoryHealth(_Part):
    """What the history itself was like, before any check."""

    path: str = Field(description="the history judged: a local path or a URI")
    last_line: Literal["empty", "ok", "cut", "damaged"] = Field(
        description="cut: written half when the run died (tolerated); damaged: whole but no op"
    )
    damaged_lines: int = Field(0, description="lines that are no op, the cut last one included")
    damaged_examples: tuple[DamagedLine, ...] = Field((), description="the first few of them")
    open_invokes: int = Field(0, description="invokes with no completion")


class AnalysisFacts(_Part):
    """How the analysis ran (nothing here changes the verdict)."""

    spark_master: str = Field(description="local[*] or spark://HOST:PORT")
    session_s: float = Field(0.0, description="seconds to get a Spark session")
    session_started: str = Field(
        "",
        description="how the session's JVM came to be up: now (this analysis started it), "
        "early (the run started it as its final heal began), or reused (it was up already)",
    )
    cache: str = Field("", description="the columnar cache: what this analysis did with it")
    cache_found: str = Field("", description="the cache as this analysis found it")
    parser: str = Field(
        "",
        description="what parsed history.jsonl: native (Python, while Spark started), "
        "spark (Spark's JSON reader), or empty (the cache was current)",
    )
    native_parse_s: float = Field(
        0.0, description="seconds the cache check and native parse took, beside the session"
    )
    parsed_during_run: bool = Field(
        False,
        description="the native parse followed history.jsonl while the run wrote it "
        "(kafka-trial run), and its rows were of exactly the final file's bytes",
    )
    one_task: bool = Field(False, description="the history was judged in one Spark task")
    jit: str = Field(
        "",
        description="how the driver JVM compiles: long (C2, for a session that judges "
        "many histories) or one-shot (C1 only, a CLI command's JVM for one small history)",
    )
    stages_s: dict[str, float] = Field(
        default_factory=dict,
        description="seconds per stage, in order: session, wait_native_parse, frames "
        "(parse or cache read, and the shared frames), checks, stats, report_data",
    )
    total_s: float = Field(0.0, description="seconds from start to results written")
    results_file: str = Field("", description="where this results.json was written")


class Results(_Part):
    """A judged history. `valid` is the verdict: True, False or "unknown"."""

    format: int = Field(FORMAT, description="the contract's generation")
    valid: Valid = Field(description="False beats unknown beats True")
    anomalies: dict[str, AnomalyResult] = Field(
        description="every registered anomaly type, in the registry's order"
    )
    forbidden_seen: tuple[str, ...] = Field((), description="found, and not allowed: invalid")
    allowed_seen: tuple[str, ...] = Field((), description="found, and allowed by the config")
    allowed_not_seen: tuple[str, ...] = Field((), description="allowed, and not found")
    unknown: tuple[str, ...] = Field((), description="types whose check could not decide")
    problems: tuple[str, ...] = Field(
        (), description="why the history cannot decide the verdict; any makes it unknown"
    )
    allowed: tuple[str, ...] = Field((), description="the config's allowed types")
    stats: Stats = Field(default_factory=Stats)
    history: HistoryHealth
    analysis: AnalysisFacts

    # ------------------------------------------------------------ loading

    @classmethod
    def from_json(cls, source: str | Path) -> Results:
        """From results.json (a path) or its text. A file this version cannot read
        (damaged, or written before results.json had a type) is a TrialError whose fix
        is to judge the history again."""
        where = str(source) if isinstance(source, Path) else "results.json"
        try:
            text = source.read_text() if isinstance(source, Path) else source
            return cls.model_validate(json.loads(text))
        except FileNotFoundError:
            raise TrialError(
                f"{where} is missing", f"run `kafka-trial analyze {Path(where).parent}` first"
            ) from None
        except (ValueError, ValidationError, OSError) as e:
            first = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
            raise TrialError(
                f"{where} cannot be read as results ({first})",
                f"judge the history again: kafka-trial analyze {Path(where).parent}",
            ) from None

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def __getitem__(self, key: str) -> Any:
        """`results["valid"]`, as analyze() returned a dict before Results had a type:
        users' tests written that way keep working (docs/api.md)."""
        if key not in type(self).model_fields:
            raise KeyError(key)
        return self.to_dict()[key]

    # ------------------------------------------------------------ questions

    @property
    def exit_code(self) -> int:
        return exit_code(self.valid)

    @property
    def word(self) -> str:
        return {True: "VALID", False: "INVALID"}.get(self.valid, "UNKNOWN")  # type: ignore[call-overload]

    def count(self, name: str) -> int | None:
        a = self.anomalies.get(name)
        return None if a is None else a.count

    def seen(self) -> dict[str, int]:
        """Every anomaly type found, with its count, in the registry's order."""
        return {n: a.count for n, a in self.anomalies.items() if a.count}

    def forbidden(self) -> dict[str, int]:
        return {n: c for n, c in self.seen().items() if n not in self.allowed}

    def permitted(self) -> dict[str, int]:
        """Found and allowed by the config."""
        return {n: c for n, c in self.seen().items() if n in self.allowed}

    def judged(self, name: str) -> str:
        """How the verdict treats this type's finding, in a few words."""
        a = self.anomalies[name]
        if a.count is None and a.skipped:
            return "not checked"
        if a.count is None:
            return "could not be decided"
        if not a.count:
            return "not found"
        if a.undecided and name not in self.allowed:
            return "undecided"
        return "allowed by this config" if name in self.allowed else "forbidden by this config"

    def definition(self, name: str) -> str:
        """As judged; the registry's, for a type this file predates."""
        a = self.anomalies.get(name)
        if a is not None and a.definition:
            return a.definition
        return ANOMALIES[name].definition if name in ANOMALIES else ""
