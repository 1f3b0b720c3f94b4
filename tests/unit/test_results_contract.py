"""results.json is a typed, public contract (docs/results.md): it round-trips through
`Results`, every field is documented, and a file this version cannot read says how
to get one it can."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_trial.checkers.results import Example, Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.spark_analysis.job import analyze

from tests.histories import lossy
from tests.models import nested_models, undocumented
from tests.results import made_results

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def test_every_field_of_results_is_documented() -> None:
    assert undocumented(Results, DOC.read_text()) == []
    assert len(nested_models(Results)) >= 6  # Results, anomaly, stats, history, damaged line, facts


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


def test_witnesses_read_as_typed_views_and_as_the_objects_they_were() -> None:
    """`examples` keep the check's objects; `example_views()` types what the report
    reads, a field in another type (or missing) being None, never an error."""
    step = {"kind": "wr", "from_op": 3, "to_op": "8", "from_time": 1500, "value": 5}
    made = made_results(False, {"lost-write": 1, "G1c": 1}).to_dict()
    made["anomalies"]["lost-write"]["examples"] = [{"value": 11, "topic": "t", "offset": "1"}]
    made["anomalies"]["G1c"]["examples"] = [{"first_op": 3, "ops": 2, "steps": [step]}]
    res = Results.model_validate(made)
    lost = res.anomalies["lost-write"]
    (view,) = lost.example_views()
    assert lost.examples[0]["value"] == 11 and view.evidence == lost.examples[0]
    assert (view.value, view.topic, view.partition, view.offset) == (11, "t", None, None)
    assert view.steps is None and view.shortest is True
    (cycle,) = res.anomalies["G1c"].example_views()
    assert cycle.steps is not None and (cycle.steps[0].from_op, cycle.steps[0].to_op) == (3, None)
    moved = cycle.shifted(1000)
    assert moved.steps is not None and moved.steps[0].from_time == 500
    assert moved.steps[0].value == 5 and moved.evidence["steps"][0]["from_time"] == 500
    assert Example.of({"value": True}).value is None  # a bool is no value
