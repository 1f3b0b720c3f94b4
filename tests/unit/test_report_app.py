"""The application on trial in the report: its instances' lanes and the sentence that
names missing or doubled inputs and the fault each followed."""

from __future__ import annotations

from typing import Any

from kafka_trial.contracts.report_data import ReportData
from kafka_trial.report import svg_plots as sp
from kafka_trial.report.app_lanes import app_lanes, app_sentence

from tests.results import made_results

S = 1_000_000_000


def _op(t: float, process: str, f: str, type_: str, **value: object) -> dict[str, object]:
    op = {"index": int(t * 10), "time": int(t * S), "type": type_, "f": f, "value": value}
    return op if process == "nemesis" else {**op, "process": process}


# Value 7, acknowledged at 9.5 s.
_SENT = {"value": 7, "process": "0", "index": 95, "f": "send", "topic": "t", "partition": 0}
_SENT |= {"offset": 3, "outcome": "ok", "time": int(9.5 * S), "invoke_time": int(9.4 * S)}


def _data(**over: Any) -> ReportData:
    """report-data.json as the analysis writes it: the app's lifecycle, the faults on
    it, and the send of one input."""
    data: dict[str, Any] = {
        "t0": 0,
        "t1": 20 * S,
        "bucket_s": 1,
        "throughput": [],
        "latency_ms": [],
        "offsets": [],
        "client_events": [],
        "client_events_capped": False,
        "app_events": [
            _op(1, "app-0", "app-start", "ok", instance=0, pid=101),
            _op(1, "app-1", "app-start", "ok", instance=1, pid=102),
            _op(9, "app-0", "app-exit", "ok", instance=0, pid=101, exit_code=-9, by="app-kill"),
            _op(11, "app-0", "app-start", "ok", instance=0, pid=103),
        ],
        "nemesis": [
            _op(9, "nemesis", "app-kill", "ok", instance=0, pid=101),
            _op(14, "nemesis", "app-pause", "ok", instance=1, pid=102, state="T"),
            _op(18, "nemesis", "app-resume", "ok"),
        ],
        "witnesses": {"sends": [_SENT], "reads": [], "at_position": []},
    }
    return ReportData.model_validate({**data, **over})


def test_each_instance_gets_a_lane_with_its_runs_pauses_and_exits() -> None:
    svg = app_lanes(_data(), sp.Axis(0, 20), [])
    assert "app 0" in svg and "app 1" in svg
    # Who ended instance 0's first run, and its exit code, are in the hover text.
    assert "ended by app-kill, exit code -9" in svg
    assert "pid 103" in svg  # the restarted run
    assert "instance 1 paused 14.00-18.00s" in svg


def test_no_lanes_without_an_application() -> None:
    assert app_lanes(_data(app_events=[]), sp.Axis(0, 20), []) == ""


def test_the_sentence_names_the_inputs_and_the_fault_before_them() -> None:
    res = made_results(False, {"app-output-lost": 3})
    text = app_sentence(res, _data())
    assert "app-output-lost" in text and "(3)" in text
    # Acknowledged at 9.5 s: the nearest fault is the kill at 9.0 s, not the pause at 14.
    assert "input 7" in text and "acknowledged 0.5s after app-kill of instance 0 at 9.0s" in text
    assert "input 8" in text  # a witness without a known send time is still named


def test_no_sentence_when_the_output_is_whole() -> None:
    assert app_sentence(made_results(True, {}), _data()) == ""
