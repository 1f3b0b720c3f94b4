"""Many planted histories judged in ONE analysis: Spark costs seconds per analysis,
and a suite of planted cases, each with its clean twin, would cost minutes.

Case n writes through `Case`, a tests.histories.Builder whose ops land in one shared
history with topic t renamed c{n} (t-out: c{n}-out), process p as 100n + p and value
v as shift(v, n), so cases share no partition, process or value. Each check's
rows are computed exactly as run_checks computes them (checks/runner._tagged), all of
them, and go back to the case whose topic (or process) they name. What only the
verdict decides (unknown, allowed, the drain never ran) cannot be batched: those
histories are judged alone, with `analyze`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kafka_trial.contracts.history import HistoryWriter

from tests.histories import TOPIC, Builder

VALUE_BASE = 10_000
PROCESS_BASE = 100


def shift(v: int, n: int) -> int:
    """Value v of case n. A copier's output of input v is -v - 1 (workloads/copier.py),
    so negative values move down: that relation holds between shifted values too."""
    return v + VALUE_BASE * n if v >= 0 else v - VALUE_BASE * n


class _Shifted:
    """The writer case n's Builder writes through."""

    def __init__(self, h: HistoryWriter, n: int) -> None:
        self.h, self.n = h, n

    def _p(self, p: Any) -> Any:
        return PROCESS_BASE * self.n + p if isinstance(p, int) else p

    def _v(self, x: Any, key: str = "") -> Any:
        if isinstance(x, dict):
            return {k: self._v(v, k) for k, v in x.items()}
        if isinstance(x, list):
            return [self._v(v, key) for v in x]
        if key == "topic" and isinstance(x, str) and x.startswith(TOPIC):
            return f"c{self.n}{x[len(TOPIC) :]}"
        if key == "value" and isinstance(x, int):
            return shift(x, self.n)
        if key == "client" and isinstance(x, int):
            return self._p(x)
        return x

    def invoke(self, process: Any, f: str, value: Any = None) -> Any:
        return self.h.invoke(self._p(process), f, self._v(value))

    def complete(
        self, type_: str, process: Any, f: str, value: Any = None, error: str | None = None
    ) -> Any:
        return self.h.complete(type_, self._p(process), f, self._v(value), error)


class Case(Builder):
    """A Builder for case n of a batch (its `done` is the batch's)."""

    def __init__(self, h: HistoryWriter, n: int) -> None:
        self.run_dir = Path()
        self.h = _Shifted(h, n)  # type: ignore[assignment]
        self._seqs = {}
        self.n = n

    def v(self, x: int) -> int:
        """Value x of this case as the history holds it."""
        return shift(x, self.n)

    def p(self, x: int) -> str:
        """Process x of this case as rows name it."""
        return str(PROCESS_BASE * self.n + x)

    def done(self) -> Path:
        raise TypeError("a batched case is judged with its batch")


@dataclass
class Judged:
    case: Case
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # check -> rows
    keys: dict[str, set[str]] = field(default_factory=dict)  # check -> distinct keys

    def count(self, name: str) -> int:
        """As results.json counts: the distinct keys of the check's unit."""
        return len(self.keys.get(name, ()))

    def examples(self, name: str) -> list[dict[str, Any]]:
        return self.rows.get(name, [])

    def seen(self) -> dict[str, int]:
        """Every anomaly with a row, and its count: {} for a clean twin."""
        return {k: self.count(k) for k in sorted(self.rows)}


def _scalars(x: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every (key, scalar) of a row, a list's items under the list's key."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _scalars(v, k)
    elif isinstance(x, list):
        for v in x:
            yield from _scalars(v, key)
    else:
        yield key, x


def _which(row: dict[str, Any]) -> int:
    """The case a row belongs to: the first topic it names, else its first process,
    else its first value."""
    procs, values = [], []
    for k, v in _scalars(row):
        if k == "topic" and isinstance(v, str) and v.startswith("c"):
            return int(v[1:].split("-")[0])
        if k in ("process", "processes", "from_process") and v is not None:
            procs.append(int(v))
        if k == "value" and isinstance(v, int):
            values.append(v)
    if procs:
        return procs[0] // PROCESS_BASE
    if values:
        return (abs(values[0]) + VALUE_BASE // 2) // VALUE_BASE
    raise AssertionError(f"a row that names no case: {row}")


class Cases(dict[str, Callable[[Case], Any]]):
    """A module's batched cases, by name: `@cases.add(name)` registers a builder."""

    def add(self, name: str) -> Callable[[Callable[[Case], Any]], Callable[[Case], Any]]:
        def register(fn: Callable[[Case], Any]) -> Callable[[Case], Any]:
            self[name] = fn
            return fn

        return register


def write_cases(path: Path, cases: dict[str, Callable[[Case], Any]]) -> dict[str, Case]:
    """Every case, one after another, into one history at `path`."""
    h = HistoryWriter(path)
    made: dict[str, Case] = {}
    for n, (name, build) in enumerate(cases.items(), start=1):
        made[name] = Case(h, n)
        build(made[name])
    h.close()
    return made


def judge(spark: Any, path: Path, cases: dict[str, Callable[[Case], Any]]) -> dict[str, Judged]:
    """Write every case into `path` and judge them in one pass of every check."""
    from kafka_trial.spark_analysis.checks.runner import CHECKS, _union_all, tagged_checks
    from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
    from kafka_trial.spark_analysis.read.history_frames import load

    made = write_cases(path, cases)
    by_n = {c.n: Judged(c) for c in made.values()}
    plan = AnalysisFrames(load(spark, str(path)))
    try:
        for r in _union_all(tagged_checks(plan, CHECKS)).collect():
            row = json.loads(r["detail"])
            j = by_n[_which(row)]
            j.rows.setdefault(r["type"], []).append(row)
            j.keys.setdefault(r["type"], set()).add(r["key"])
    finally:
        plan.release()
    return {name: by_n[c.n] for name, c in made.items()}


T = TypeVar("T")
C = TypeVar("C")


def judged_fixture(
    cases: C, folder: str, judge: Callable[[Any, Path, C], T] = judge
) -> Callable[..., T]:
    """A module's `judged` fixture, in one line: `judged = judged_fixture(CASES, "x")`.
    Its planted `cases` are written into one history (history.jsonl in a temporary
    folder named `folder`) and judged once for the whole module, by `judge`: this
    module's, or another with the same arguments (spark, path, cases)."""

    @pytest.fixture(scope="module", name="judged")
    def judged(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> T:
        return judge(spark, tmp_path_factory.mktemp(folder) / "history.jsonl", cases)

    return judged
