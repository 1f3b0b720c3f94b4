"""report-data.json is a typed contract (docs/report-data.md): the analysis writes what
`ReportData` reads back, every field is documented, a file from an older version
loads, and one this version cannot read is one line naming what to re-run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.report_data import REPORT_DATA_FILE, OpFacts, ReportData
from kafka_trial.report.html import write_report
from kafka_trial.spark_analysis.job import analyze

from tests.histories import lossy
from tests.models import nested_models, undocumented

DOC = Path(__file__).resolve().parents[2] / "docs" / "report-data.md"
S = 1_000_000_000


def _written() -> dict[str, Any]:
    """A file as the analysis writes it, keys in its order."""
    send = {"value": 11, "process": "0", "index": 7, "f": "send", "topic": "t", "partition": 0}
    send |= {"offset": 1, "outcome": "ok", "time": 2 * S, "invoke_time": 2 * S - 5}
    read = {"value": 12, "process": "1", "index": 9, "f": "poll", "role": None, "topic": "t"}
    read |= {"partition": 0, "offset": 1, "time": 3 * S}
    past = {"p_topic": "t", "p_partition": 0, "p_offset": 1, "value": 13, "process": "1"}
    past |= {"index": 9, "role": "drain", "offset": 2, "time": 3 * S}
    kill = {"index": 5, "time": S, "type": "ok", "f": "kill", "value": {"brokers": [1]}}
    return {
        "t0": 0,
        "t1": 4 * S,
        "bucket_s": 1,
        "throughput": [{"bucket": 0, "f": "send", "type": "ok", "n": 3}],
        "latency_ms": [
            {"bucket": 0, "f": "send", "p50": 1.5, "p99": None, "max": 2.0, "n": 3},
        ],
        "offsets": [
            {"topic": "t", "partition": 0, "bucket": 0, "lo": 0, "hi": 2, "n": 3, "kind": "acked"}
        ],
        "client_events": [{"time": S, "process": "4", "f": "crash"}],
        "client_events_capped": False,
        "nemesis": [kill, {**kill, "index": 6, "type": "info", "value": None, "error": "gone"}],
        "app_events": [{**kill, "f": "app-start", "value": {"instance": 0}, "process": "app-0"}],
        "witnesses": {
            "sends": [send],
            "reads": [],
            "at_position": [read],
            "past_position": [past],
        },
        "history_uri": "/runs/x/history.jsonl",
    }


def test_every_field_is_documented() -> None:
    doc = DOC.read_text()
    assert undocumented(ReportData, doc) == []
    assert [f for f in OpFacts.model_fields if f"| `{f}` |" not in doc] == []
    assert len(nested_models(ReportData)) == 11  # the file and each kind of row


def test_what_is_written_reads_back_as_it_was() -> None:
    data = ReportData.model_validate(_written())
    assert data.to_json() == json.dumps(_written(), indent=2)
    # A key the writer left out (a nemesis op's error, past_position) stays out.
    older = _written()
    del older["witnesses"]["past_position"]
    assert "past_position" not in ReportData.model_validate(older).to_json()


def test_an_older_file_loads_and_newer_keys_are_ignored(tmp_path: Path) -> None:
    old = _written()
    for later in ("app_events", "history_uri"):
        del old[later]
    del old["witnesses"]["past_position"]
    old["nemesis"][1].pop("error")
    old["a_later_key"] = {"x": 1}
    old["witnesses"]["sends"][0]["a_later_field"] = 1
    (tmp_path / REPORT_DATA_FILE).write_text(json.dumps(old))
    data = ReportData.load(tmp_path / REPORT_DATA_FILE)
    assert data.app_events == () and data.witnesses.past_position == ()
    assert data.history_uri is None and data.nemesis[1].error is None
    assert data.witnesses.sends[0].offset == 1


def _renamed() -> str:
    d = _written()
    d["witnesses"]["sent"] = d["witnesses"].pop("sends")
    return json.dumps(d)


@pytest.mark.parametrize(
    "text",
    [
        '{"t0": 0, "t1"',  # cut off
        json.dumps({**_written(), "t0": "soon"}),
        _renamed(),  # a key every version wrote, renamed: never silently empty
    ],
)
def test_a_file_it_cannot_read_is_one_line_naming_the_rerun(tmp_path: Path, text: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / REPORT_DATA_FILE).write_text(text)
    with pytest.raises(TrialError) as e:
        ReportData.load(run / REPORT_DATA_FILE)
    assert REPORT_DATA_FILE in e.value.problem
    assert e.value.fix == f"build it again: kafka-trial report --reanalyze {run}"
    assert "\n" not in e.value.one_line()
    # The page says so where the timeline would be, and still renders.
    html = write_report(run).read_text()
    assert f"-- build it again: kafka-trial report --reanalyze {run}: no timeline" in html


def test_times_move_to_the_page_clock_and_values_stay() -> None:
    data = ReportData.model_validate(_written()).shifted(S)
    assert (data.t0, data.t1) == (-S, 3 * S)
    assert data.witnesses.sends[0].time == S and data.witnesses.sends[0].invoke_time == S - 5
    assert data.witnesses.past_position[0].time == 2 * S
    assert data.nemesis[0].time == 0 and data.nemesis[0].value == {"brokers": [1]}
    assert data.throughput[0].bucket == 0  # buckets count from t0


def test_an_op_value_is_read_for_what_the_report_needs() -> None:
    grudge = {"1": [2, 3], "2": [1], "x": [1], "3": "no"}
    facts = OpFacts.of({"brokers": [1, "2", 3], "grudge": grudge, "leader": "2", "mode": ""})
    assert facts.brokers == (1, 3) and facts.grudge == {1: frozenset({2, 3}), 2: frozenset({1})}
    assert facts.leader is None and facts.mode is None and facts.hit == (1, 3)
    assert OpFacts.of(["not", "a", "dict"]) == OpFacts()


def test_the_analysis_writes_a_file_the_contract_reads(spark, tmp_path: Path) -> None:
    run = lossy(tmp_path / "lossy")
    analyze(run, report=True)
    text = (run / REPORT_DATA_FILE).read_text()
    data = ReportData.load(run / REPORT_DATA_FILE)
    assert data.to_json() == text
    assert [s.value for s in data.witnesses.sends] == [11]
    assert {o.f for o in data.nemesis} == {"kill", "start"}
