"""results.json is a typed, public contract (docs/results.md): it round-trips through
`Results`, every field is documented, and a file this version cannot read says how
to get one it can."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path

import pytest
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.spark_analysis.job import analyze
from pydantic import BaseModel

from tests.histories import lossy
from tests.results import made_results

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def _models(model: type[BaseModel], seen: set[type] | None = None) -> list[type[BaseModel]]:
    """The model and every model inside its fields, however nested (dicts, tuples)."""
    seen = seen if seen is not None else set()
    if model in seen:
        return []
    seen.add(model)
    out = [model]
    for f in model.model_fields.values():
        stack = [f.annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                out += _models(t, seen)
            stack += [a for a in typing.get_args(t) if a is not Ellipsis]
            if isinstance(t, types.UnionType):
                stack += list(t.__args__)
    return out


def test_every_field_of_results_is_documented() -> None:
    doc = DOC.read_text()
    missing = [
        f"{m.__name__}.{name}"
        for m in _models(Results)
        for name in m.model_fields
        if f"| `{name}` |" not in doc
    ]
    assert missing == []
    assert len(_models(Results)) >= 6  # Results, anomaly, stats, history, damaged line, facts


def test_a_judged_history_round_trips_through_results(spark, tmp_path: Path) -> None:
    run = lossy(tmp_path / "lossy")
    got = analyze(run)
    written = json.loads((run / "results.json").read_text())
    loaded = Results.from_json(run / "results.json")
    assert loaded == got
    assert loaded.to_dict() == written
    assert Results.from_json(loaded.to_json()) == loaded
    # What the file says, in the types readers use.
    assert loaded.valid is False and loaded.forbidden()["lost-write"] == 1
    assert loaded.anomalies["lost-write"].examples[0]["value"] == 11
    assert loaded.history.last_line == "ok" and loaded.format == 1
    # analyze() returned a dict before: results["key"] still reads as it did.
    assert got["valid"] is False and got["anomalies"]["lost-write"]["count"] == 1


def test_a_file_from_before_the_type_loads_and_a_newer_field_is_ignored(tmp_path: Path) -> None:
    old = made_results(False, {"lost-write": 2}).to_dict()
    del old["format"]  # results.json had no format before it had a type
    old["anomalies"]["lost-write"]["some_later_field"] = [1, 2]
    old["later_section"] = {"x": 1}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(old))
    res = Results.from_json(path)
    assert res.format == 1 and res.count("lost-write") == 2 and res.exit_code == 1


@pytest.mark.parametrize(
    "text", ["{not json", json.dumps({"valid": True}), json.dumps({"valid": "maybe"})]
)
def test_a_file_it_cannot_read_names_the_fix(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run" / "results.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(TrialError) as e:
        Results.from_json(path)
    assert "cannot be read as results" in e.value.problem
    assert e.value.fix == f"judge the history again: kafka-trial analyze {path.parent}"
    assert "\n" not in e.value.one_line()
