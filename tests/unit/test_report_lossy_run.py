"""The report of a lossy acks=1 run, read as a newcomer would (issue 25), from a run
directory made by hand: what a real run and its analysis write, without Spark.

The run: the fault phase starts 18 s into the history; broker 2, the leader of
partition 0, acknowledges values 100-108 at offsets 100-108 alone (acks=1) around
6 s, is isolated at 5 s (schedule.json's `at_s: 5`), and broker 3 takes over at 9 s;
the drain finds other values at those offsets. Value 300 at offset 300 is lost too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kafka_trial.checkers.results import Results
from kafka_trial.contracts.cluster_state import PartitionState, StateSample
from kafka_trial.harness.spec import RunSpec
from kafka_trial.report import svg_plots as sp
from kafka_trial.report.html import write_report
from kafka_trial.report.leaders import handover, sentence

from tests.results import made_results

S = 1_000_000_000
START = 18 * S  # the fault phase, on the history's clock


def at(t: float) -> int:
    """A history time (ns) from seconds into the fault phase."""
    return START + round(t * S)


ISOLATE = {
    "topology": "isolate-leader",
    "mode": "drop",
    "brokers": [1, 2, 3],
    "grudge": {"1": [2], "2": [1, 3], "3": [2]},
    "isolated": [2],
}


def _lost(value: int, offset: int) -> dict[str, Any]:
    return {
        "value": value,
        "topic": "trial",
        "partition": 0,
        "offset": offset,
        "max_read_offset": 400,
        "reason": "read past",
    }


LOST = [*(_lost(100 + i, 100 + i) for i in range(9)), _lost(300, 300)]


def _acked(i: int, ex: dict[str, Any]) -> float:
    return 6.0 + i * 0.05


def _witness_ops() -> dict[str, Any]:
    sends = [
        {
            **{k: ex[k] for k in ("value", "topic", "partition", "offset")},
            "process": 0,
            "index": 100 + 2 * i,
            "f": "send",
            "outcome": "ok",
            "time": at(_acked(i, ex)),
            "invoke_time": at(_acked(i, ex) - 0.002),
        }
        for i, ex in enumerate(LOST)
    ]
    drained = [
        {
            "value": 5000 + ex["offset"],
            "process": 9,
            "index": 900 + i,
            "f": "poll",
            "role": "drain",
            "topic": "trial",
            "partition": 0,
            "offset": ex["offset"],
            "time": at(25),
        }
        for i, ex in enumerate(LOST)
    ]
    return {"sends": sends, "reads": [], "at_position": drained, "past_position": []}


def _nemesis() -> list[dict[str, Any]]:
    def op(i: int, t: float, typ: str, f: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"index": i, "time": at(t), "type": typ, "f": f, "value": value}

    inv = {"topology": "isolate-leader", "mode": "drop"}
    return [
        op(50, 5.0, "invoke", "partition", inv),
        op(51, 5.1, "ok", "partition", ISOLATE),
        op(300, 15.0, "invoke", "heal", {"links": 8}),
        op(301, 15.2, "ok", "heal", {"links": 8, "brokers": [1, 2, 3]}),
    ]


def _report_data() -> dict[str, Any]:
    return {
        "t0": at(-0.1),
        "t1": at(22),
        "bucket_s": 1,
        "throughput": [{"bucket": b, "f": "send", "type": "ok", "n": 100} for b in range(22)],
        "latency_ms": [
            {"bucket": b, "f": "send", "p50": 2.0, "p99": 40.0, "max": 1500.0, "n": 100}
            for b in range(22)
        ],
        "offsets": [
            {"topic": "trial", "partition": 0, "bucket": b, "lo": 20 * b, "hi": 20 * b + 19}
            | {"n": 20, "kind": "acked"}
            for b in range(22)
        ],
        "client_events": [],
        "client_events_capped": False,
        "nemesis": _nemesis(),
        "witnesses": _witness_ops(),
    }


def _states() -> str:
    rows = []
    for t in range(22):
        p0 = (
            {"leader": 2, "isr": [1, 2, 3], "replicas": [1, 2, 3]}
            if t < 9
            else {"leader": 3, "isr": [1, 3], "replicas": [1, 2, 3]}
        )
        rows.append(
            {
                "time": at(t),
                "up": [1, 2, 3],
                "registered": [1, 2, 3],
                "controller": 1,
                "partitions": {"0": p0},
            }
        )
    return "".join(json.dumps(r) + "\n" for r in rows)


def _results() -> Results:
    made = made_results(True, {"lost-write": 87}, allowed=("lost-write",)).to_dict()
    made["anomalies"]["lost-write"]["examples"] = LOST
    made["stats"]["span_s"] = 22.1
    return Results.model_validate(made)


def acks1_run(run_dir: Path, fault_phase_start: bool = True, **spec: Any) -> Path:
    run_dir.mkdir(parents=True)
    full = {
        "name": "acks1",
        "duration_s": 20,
        "topic": {"min_insync_replicas": 1},
        "producer": {"acks": "1", "idempotence": False},
        "nemesis": {"faults": ["isolate-broker"]},
        **spec,
    }
    (run_dir / "spec.json").write_text(RunSpec.model_validate(full).to_json())
    run: dict[str, Any] = {"kafka_version": "4.1.1", "phases": {"fault_phase": 22.0}}
    if fault_phase_start:
        run["fault_phase_start_ns"] = START
    (run_dir / "run.json").write_text(json.dumps(run))
    steps = [
        {"at_s": 5, "action": "fault", "package": "isolate-broker", "pick": 7},
        {"at_s": 15, "action": "heal", "package": "isolate-broker", "pick": 0},
    ]
    (run_dir / "schedule.json").write_text(json.dumps(steps))
    (run_dir / "cluster-state.jsonl").write_text(_states())
    (run_dir / "report-data.json").write_text(json.dumps(_report_data()))
    (run_dir / "results.json").write_text(_results().to_json())
    return run_dir


def _section(html: str, name: str) -> str:
    part = html[html.index(f'id="a-{name}"') :]
    return part[: part.index("</section>")]


def test_the_lost_write_section_says_who_acknowledged_and_who_took_over(tmp_path: Path) -> None:
    html = write_report(acks1_run(tmp_path / "run")).read_text()
    section = _section(html, "lost-write")
    assert (
        "Leaders (cluster-state.jsonl): Partition 0: broker 2 led it, with ISR [1, 2, 3], "
        "when W1-W9, W10 were acknowledged (6.0-6.5s); broker 3 took over by 9.0s. "
        "With acks=1 a leader acknowledges alone, without waiting for any follower."
    ) in section


def test_alike_witnesses_at_consecutive_offsets_collapse_into_a_range(tmp_path: Path) -> None:
    html = write_report(acks1_run(tmp_path / "run")).read_text()
    section = _section(html, "lost-write")
    items = re.findall(r'<li class="witness" id="([^"]+)"><b>([^<]+)</b>', section)
    assert items == [("w-lost-write-1", "lost-write W1-W9"), ("w-lost-write-10", "lost-write W10")]
    assert "9 values at consecutive offsets 100-108 of partition 0" in section
    assert "values 100-108, acknowledged 6.000s to 6.400s" in section
    assert "Witnesses (showing 10 of 87)" in section  # the count is kept
    # The first of the run is explained in full: what the drain found at its offset.
    assert "At partition 0 offset 100, reads returned instead: value 5100" in section
    assert "not late: it is gone" in section
    # The run and the lone witness, a few pixels apart on the timeline, share a marker.
    marks = re.findall(r'<g class="witness-marker">.*?<text[^>]*>([^<]+)<', html)
    assert marks == ["lost-write W1-W10"]


def test_fault_bands_name_the_isolated_broker(tmp_path: Path) -> None:
    html = write_report(acks1_run(tmp_path / "run")).read_text()
    assert "partition isolate-leader drop: broker 2 isolated" in html
    assert "brokers [1, 2, 3]" not in html


def test_times_count_from_the_fault_phase_as_the_schedule_does(tmp_path: Path) -> None:
    html = write_report(acks1_run(tmp_path / "run")).read_text()
    # The band of the step scheduled at_s 5 starts at 5.0 s, and the axis at 0 s.
    assert "broker 2 isolated (5.0s to 15.2s)" in html
    assert ">0s</text>" in html and ">20s</text>" in html and ">40s</text>" not in html
    assert "invoked 5.998s, completed 6.000s" in html  # witness ops on the same clock
    assert "seconds from the start of the fault phase (run.json)" in html
    assert "time less 18.000s" in html
    # A run from before run.json said: the first fault op, less its at_s.
    old = write_report(acks1_run(tmp_path / "old", fault_phase_start=False)).read_text()
    assert "broker 2 isolated (5.0s to 15.2s)" in old
    assert "estimated: the first fault op less its at_s" in old


def _settings(html: str) -> str:
    part = html[html.index("Settings that matter") :]
    return part[: part.index("</table>")]


def test_settings_that_do_not_apply_are_left_out(tmp_path: Path) -> None:
    alone = _settings(write_report(acks1_run(tmp_path / "alone")).read_text())
    assert "<td>acks</td><td>1</td>" in alone
    assert "<td>consumers</td><td>none (only the final drain reads)</td>" in alone
    assert "isolation level" not in alone and "commit style" not in alone
    group = {"consumer": {"workers": 2, "mode": "subscribe", "commit": "before-process"}}
    grouped = _settings(write_report(acks1_run(tmp_path / "group", **group)).read_text())
    assert "<td>isolation level</td><td>read_committed</td>" in grouped
    assert "<td>commit style</td><td>before-process</td>" in grouped
    assigned = _settings(
        write_report(acks1_run(tmp_path / "assign", consumer={"workers": 1})).read_text()
    )
    assert "isolation level" in assigned and "commit style" not in assigned


def test_the_log_latency_axis_has_a_tick_per_decade(tmp_path: Path) -> None:
    html = write_report(acks1_run(tmp_path / "run")).read_text()
    chart = html[html.index("send latency per bucket") :]
    chart = chart[: chart.index("</svg>")]
    ticks = re.findall(r'<text x="\d+" y="[\d.]+" font-size="10" text-anchor="end">([^<]+)<', chart)
    assert ticks == ["1 ms", "10 ms", "100 ms", "1 s", "10 s"]


def _boxes(svg: str, cls: str, size: float) -> list[tuple[float, float, float]]:
    """(x0, x1, baseline y) of each label in elements of class `cls`."""
    out = []
    for g in re.findall(rf'<g class="{cls}">(.*?)</g>', svg):
        x, y, text = re.search(r'<text x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)<', g).groups()
        out.append((float(x), float(x) + sp.text_width(text, size), float(y)))
    return out


def _overlaps(boxes: list[tuple[float, float, float]]) -> list[Any]:
    return [
        (a, b)
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[2] == b[2] and a[0] < b[1] and b[0] < a[1]
    ]


def test_labels_on_the_fault_strip_do_not_overlap() -> None:
    axis = sp.Axis(0, 60)
    bands = [
        sp.Band(5, 5.5, "partition isolate-leader drop: broker 2 isolated"),
        sp.Band(7, 20, "kill leader: broker 3"),
        sp.Band(30, 31, "bounce random: broker 1"),
    ]
    markers = [(6.0, "lost-write W1-W10"), (6.8, "lost-write W11"), (7.5, "reorder W1-W3")]
    svg = sp.fault_strip(axis, bands, markers)
    assert len(_boxes(svg, "fault-band", 10)) == 3
    assert _overlaps(_boxes(svg, "fault-band", 10)) == []
    labels = _boxes(svg, "witness-marker", 9)
    assert len(labels) == 3 and _overlaps(labels) == []
    # No marker's tick runs through another marker's label.
    ticks = re.findall(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)"', svg)
    crossed = [
        (t, box)
        for t in ticks
        for box in labels
        if box[0] - 1 < float(t[0]) < box[1] and float(t[1]) < box[2] - 2 < float(t[2])
    ]
    assert crossed == []


def test_a_takeover_before_the_last_acknowledgement_is_said() -> None:
    """An isolated leader may go on acknowledging after the metadata names another."""

    def sample(t: float, leader: int, isr: list[int]) -> StateSample:
        part = PartitionState(leader, tuple(isr))
        return StateSample(time=round(t * S), partitions={"0": part})

    states = [sample(0, 2, [2]), sample(1, -1, []), sample(2, 3, [1, 3]), sample(3, 3, [1, 3])]
    h = handover(states, 0, 0.5)
    assert h is not None and (h.leader, h.successor, h.took_over) == (2, 3, 2.0)
    assert sentence(h, "W1-W4", 0.5, 2.4) == (
        "Partition 0: broker 2 led it, alone in the ISR, when W1-W4 were acknowledged "
        "(0.5-2.4s); broker 3 took over by 2.0s, before the last of them was acknowledged."
    )
    stays = handover(states, 0, 2.5)
    assert stays is not None and sentence(stays, "W1", 2.5, 2.5) == (
        "Partition 0: broker 3 led it, with ISR [1, 3], when W1 was acknowledged (at 2.5s); "
        "no other broker led it up to the last sample (3.0s)."
    )
    assert handover(states, 0, -1) is None  # acknowledged before any sample
    assert handover(states, 0, 1.5) is None  # the sample before names no leader


def test_normal_behaviour_gets_no_leader_sentence(tmp_path: Path) -> None:
    run = acks1_run(tmp_path / "run")
    made = _results().to_dict()
    made["anomalies"]["int-send-skip"] |= {"count": 1, "examples": [LOST[0]]}
    (run / "results.json").write_text(Results.model_validate(made).to_json())
    html = write_report(run).read_text()
    assert "Leaders (cluster-state.jsonl)" in _section(html, "lost-write")
    assert "Leaders" not in _section(html, "int-send-skip")


def test_long_evidence_lists_are_cut_to_their_ends(tmp_path: Path) -> None:
    run = acks1_run(tmp_path / "run")
    made = _results().to_dict()
    skip = {**LOST[0], "skipped_offsets": list(range(10, 117))}
    made["anomalies"]["int-send-skip"] |= {"count": 1, "examples": [skip]}
    (run / "results.json").write_text(Results.model_validate(made).to_json())
    section = _section(write_report(run).read_text(), "int-send-skip")
    assert "skipped_offsets=[10, 11, 12, 13, 14, ... 116] (107 items)" in section
    assert "15, 16" not in section


def test_a_cycle_witness_is_on_the_same_clock(tmp_path: Path) -> None:
    """A witness's own times (a cycle's steps) move to the page's clock too."""
    run = acks1_run(tmp_path / "run")
    made = _results().to_dict()
    step = {"kind": "realtime", "from_op": 3, "to_op": 9, "from_time": at(7.5), "to_time": at(8)}
    made["anomalies"]["G0"] |= {"count": 1, "examples": [{"steps": [step], "ops": 2}]}
    (run / "results.json").write_text(Results.model_validate(made).to_json())
    section = _section(write_report(run).read_text(), "G0")
    assert "(W1 at 7.5s on the timeline)" in section
