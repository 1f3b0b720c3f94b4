"""The run directory's files as typed contracts (docs/run-directory.md): each loads
through its model, an older or partial file loads, a damaged or foreign one gives
one line naming what to re-run, and the document names every field."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_trial.contracts.cluster_state import PartitionState, StateSample, read_states
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.run_record import FinishedBy, RunRecord
from kafka_trial.contracts.schedule import Step, read_schedule, write_schedule
from kafka_trial.contracts.spec.reference import spec_table
from kafka_trial.harness.spec import RunSpec, build_spec, read_saved_spec
from kafka_trial.report.html import load_inputs, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-directory.md"


def test_the_spec_table_in_the_doc_is_the_models() -> None:
    text = DOC.read_text()
    between = re.search(r"<!-- spec-table:start -->\n(.*)\n<!-- spec-table:end -->", text, re.S)
    assert between is not None
    assert between.group(1) == spec_table()
    # Every key of every section, nested ones too, is a row.
    assert "| `producer.acks` |" in between.group(1)
    assert "| `nemesis.degrade.type` |" in between.group(1)


@pytest.mark.parametrize("model", [RunRecord, FinishedBy, Step, StateSample, PartitionState])
def test_the_doc_names_every_field(model: type) -> None:
    text = DOC.read_text()
    names = {f.name for f in dataclasses.fields(model)} - {"drain_summary", "unknown"}
    assert names, model
    missing = [n for n in names if f"`{n}`" not in text]
    assert not missing, f"docs/run-directory.md does not describe {model.__name__}.{missing}"


def _record() -> RunRecord:
    rec = RunRecord("4.1.1", "kafka:x", "toxiproxy:y", "c0ffee00", True)
    rec.phases.update(setup=1.5, cluster_ready=20.25)
    rec.drain_summary = {
        "drain": {"complete": True, "partitions": {"0": {"end": 3}}, "records": 3, "seconds": 1.0},
        "send_ops": 3,
        "values_acked": 2,
        "client_events": {"timeout": 1},
    }
    rec.faults, rec.fault_phase_start_ns = 2, 12_000_000_000
    return rec


def test_run_json_round_trips_and_keeps_keys_a_later_version_wrote(tmp_path: Path) -> None:
    rec = _record()
    rec.write(tmp_path)
    data = json.loads((tmp_path / "run.json").read_text())
    data["written_by_a_later_version"] = {"x": 1}
    (tmp_path / "run.json").write_text(json.dumps(data))
    back = RunRecord.read(tmp_path)
    assert back.drained and back.send_ops == 3 and back.warm_cluster
    assert back.phases == {"setup": 1.5, "cluster_ready": 20.25}
    assert back.to_dict() == data
    assert list(back.to_dict()) == list(data)


def test_run_json_of_a_run_that_failed_early_loads(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(RunRecord.failed_early("setup", ValueError("no image")))
    assert json.loads((tmp_path / "run.json").read_text()) == {
        "failed_phase": "setup",
        "error": "ValueError: no image",
    }
    rec = RunRecord.read(tmp_path)
    assert rec.failed_phase == "setup" and not rec.drained and rec.kafka_version == ""


@pytest.mark.parametrize(
    "text, said",
    [
        ('{"kafka_version": "4.1.1", "pha', "cannot be read"),
        ('["not", "a", "record"]', "does not load as a run record (not a mapping of keys)"),
        ('{"faults": "many"}', "does not load as a run record (1 problem(s); first: faults:"),
    ],
)
def test_a_damaged_run_json_is_one_line_naming_what_to_do(
    tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(TrialError) as e:
        RunRecord.read(tmp_path)
    assert said in e.value.problem and "\n" not in str(e.value)
    assert f"kafka-trial finish {tmp_path}" in e.value.fix


def test_spec_json_from_another_version_is_one_line(tmp_path: Path) -> None:
    data = json.loads(RunSpec().to_json())
    data["producer"]["acks_renamed"] = "all"
    (tmp_path / "spec.json").write_text(json.dumps(data))
    with pytest.raises(TrialError) as e:
        read_saved_spec(tmp_path)
    assert "does not load as this version's spec" in e.value.problem
    assert "producer.acks_renamed" in e.value.problem and "kafka-trial run --config" in e.value.fix


def test_spec_json_round_trips_and_a_partial_one_keeps_what_it_holds(tmp_path: Path) -> None:
    spec = build_spec({"producer": {"acks": "1", "idempotence": False}, "seed": 7})
    spec.write(tmp_path)
    assert read_saved_spec(tmp_path) == spec
    (tmp_path / "spec.json").write_text(json.dumps({"check": {"allowed": ["duplicate"]}}))
    partial = read_saved_spec(tmp_path)
    assert partial.check.allowed == ("duplicate",)
    assert partial.model_fields_set == {"check"}


def test_schedule_round_trips(tmp_path: Path) -> None:
    steps = [Step(6.0, "fault", "kill", 12345), Step(14.0, "heal", "kill")]
    write_schedule(tmp_path, steps)
    assert json.loads((tmp_path / "schedule.json").read_text())[0] == {
        "at_s": 6.0,
        "action": "fault",
        "package": "kill",
        "pick": 12345,
    }
    assert read_schedule(tmp_path) == steps
    (tmp_path / "schedule.json").write_text('[{"at_s": 1, "action": "explode", "package": "x"}]')
    with pytest.raises(TrialError, match="does not load as a list of schedule steps"):
        read_schedule(tmp_path)


def test_a_state_line_is_as_the_timeline_always_wrote_it(tmp_path: Path) -> None:
    sample = StateSample(
        time=18_000_000_000,
        up=(1, 2, 3),
        registered=(1, 2, 3),
        controller=1,
        partitions={"0": PartitionState(2, (1, 2, 3), (1, 2, 3))},
    )
    assert sample.line() == (
        '{"time":18000000000,"up":[1,2,3],"registered":[1,2,3],"controller":1,'
        '"partitions":{"0":{"leader":2,"isr":[1,2,3],"replicas":[1,2,3]}}}'
    )
    failed = StateSample(time=19_000_000_000, error="TimeoutError: metadata")
    assert failed.line() == '{"time":19000000000,"error":"TimeoutError: metadata"}'
    path = tmp_path / "cluster-state.jsonl"
    path.write_text(sample.line() + "\n" + failed.line() + "\n" + '{"time":2000000')
    timeline = read_states(path)
    assert timeline.samples == [sample, failed] and timeline.damaged == 1
    assert sample.partition(0).leading == 2 and sample.partition(7).leading is None
    assert PartitionState(-1).leading is None


def test_a_spec_built_before_its_owners_are_imported_is_refused() -> None:
    """Only contracts imported: the catalog's checks are not there, and a spec naming
    an unknown fault must not pass unchecked."""
    code = (
        "from kafka_trial.contracts.spec import RunSpec\n"
        "try:\n"
        "    RunSpec.model_validate({'nemesis': {'faults': ['no-such-fault']}})\n"
        "except Exception as e:\n"
        "    print(e)\n"
        "else:\n"
        "    print('PASSED UNCHECKED')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "PASSED UNCHECKED" not in out.stdout
    assert "needs the checks of kafka_trial.nemesis" in out.stdout
    with pytest.raises(TrialError, match="unknown nemesis no-such-fault"):
        build_spec({"nemesis": {"faults": ["no-such-fault"]}})


def test_the_report_says_which_file_does_not_load_and_what_to_rerun(tmp_path: Path) -> None:
    spec = json.loads(RunSpec().to_json())
    spec["producer"]["acks_renamed"] = "all"
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "run.json").write_text('{"phases": "not a mapping"}')
    inp = load_inputs(tmp_path)
    assert inp.spec is None and inp.run is None
    said = "\n".join(inp.missing)
    assert "spec.json does not load as this version's spec" in said
    assert "run.json does not load as a run record" in said and "kafka-trial finish" in said
    page = render(inp)
    assert "producer.acks_renamed" in page
