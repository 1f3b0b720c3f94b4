"""The HTML report: built from a real analysis of planted histories (a lost write
shows its witness, its clean twin shows none), and from broken run directories,
which still give a page that says what is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka_trial.contracts.report_data import NemesisOp
from kafka_trial.harness.cli import main
from kafka_trial.report.faults import faults
from kafka_trial.report.html import write_report
from kafka_trial.spark_analysis.job import analyze

from tests.histories import lossy
from tests.results import made_results

# A request would need a URL in an attribute that loads something; the SVG namespace
# (xmlns) is a name, not a request.
_LOADS = re.compile(r"""(?:src|href|action|url\()\s*=?\s*["']?\s*(?:https?:)?//""", re.I)


def test_a_lost_write_is_explained_with_its_witness_and_the_fault(spark, tmp_path: Path) -> None:
    run = lossy(tmp_path / "lossy")
    res = analyze(run, report=True)
    assert res.anomalies["lost-write"].count == 1
    html = write_report(run).read_text()
    section = html[html.index('id="a-lost-write"') :]
    section = section[: section.index("</section>")]
    # The witness: its value, its send op and its position, and the fault it fell into.
    assert "lost-write W1" in section
    assert "value=11" in section
    assert "partition 0 offset 1" in section
    assert "Sent by process 0" in section and "<b>ok</b>" in section
    assert "No read ever returned this value" in section
    assert "kill leader: broker 1" in section  # active between ack and reads
    # The reads that prove it lost, not late: the first ones past its offset.
    assert "Reads that went past offset 1 first: consumer process 1 read offset 2" in section
    # The fault band is on the timeline, with the witness marker.
    assert html.count('class="fault-band"') >= 2
    assert 'class="witness-marker"' in html
    assert html.startswith("<!DOCTYPE html>") and "INVALID" in html
    assert not _LOADS.search(html), _LOADS.search(html)
    assert len(html) < 300_000


def test_the_clean_twin_has_no_witness(spark, tmp_path: Path) -> None:
    run = lossy(tmp_path / "clean", lose=False, storage=True)
    res = analyze(run, report=True)
    assert res.valid is True
    html = write_report(run).read_text()
    # What each fault did, as its completion records it, and why one did nothing.
    did = html[html.index("What the faults did") :]
    assert "broker 2: lost 3 files, 1.8 MB never fsynced" in did
    assert "did not take effect, or not known to: nothing corrupted" in did
    assert 'id="a-lost-write"' not in html
    assert 'class="witness"' not in html and 'class="witness-marker"' not in html
    assert "No anomaly was found" in html
    assert "VALID: no anomaly this config forbids was found." in html
    # Checks with nothing to check say so, rather than 0.
    assert "not applicable" in html and "no consumer group in this run" in html


def test_the_report_command_analyzes_a_bare_run_dir_and_prints_witnesses(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = lossy(tmp_path / "lossy")
    code = main(["report", str(run)])
    out = capsys.readouterr().out
    assert code == 1  # invalid
    assert (run / "report.html").is_file() and f"report: {run / 'report.html'}" in out
    # 2-3 witnesses per anomaly in the text verdict.
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("lost-write"))
    after = out.splitlines()[out.splitlines().index(line) + 1]
    assert after.strip().startswith("e.g. value=11")


def test_a_cut_off_history_still_gives_a_report_that_says_so(spark, tmp_path: Path) -> None:
    run = lossy(tmp_path / "cut")
    with (run / "history.jsonl").open("a") as fh:
        fh.write('{"index": 99, "time": 1, "type": "invo')
    (run / "cluster-state.jsonl").write_text(
        '{"time":1,"up":[1,2,3],"registered":[1,2,3],"controller":1,'
        '"partitions":{"0":{"leader":1,"isr":[1,2,3],"replicas":[1,2,3]}}}\n{"time":2,"up'
    )
    analyze(run, report=True)
    html = write_report(run).read_text()
    assert "cluster-state.jsonl: 1 line(s) cut off or damaged, skipped" in html
    assert "partition 0" in html  # the lane from the sample that was whole
    assert "history last line</td><td>cut" in html


def test_an_empty_history_gives_a_report(spark, tmp_path: Path) -> None:
    run = tmp_path / "empty"
    run.mkdir()
    (run / "history.jsonl").write_text("")
    res = analyze(run, report=True)
    html = write_report(run).read_text()
    assert res.valid != True  # noqa: E712 -- nothing tested is not valid
    assert "UNKNOWN" in html and "nothing was tested" in html
    assert "no fault in this run" in html


def test_a_run_dir_without_analysis_or_files_gives_a_report(tmp_path: Path) -> None:
    run = tmp_path / "bare"
    run.mkdir()
    html = write_report(run).read_text()
    assert "No verdict: this run was never analyzed" in html
    for name in ("results.json", "report-data.json", "spec.json", "cluster-state.jsonl"):
        assert f"Not shown: {name} is missing" in html
    # A damaged results.json is named, not a traceback.
    (run / "results.json").write_text('{"valid": tr')
    html = write_report(run).read_text()
    assert "results.json cannot be read as results" in html
    assert f"judge the history again: kafka-trial analyze {run}" in html


def test_an_unknown_verdict_names_its_reason(tmp_path: Path) -> None:
    run = tmp_path / "unknown"
    run.mkdir()
    made = made_results("unknown", {"unseen": 3}, problems=("the final drain never ran",))
    (run / "results.json").write_text(made.to_json())
    html = write_report(run).read_text()
    assert "UNKNOWN: the history cannot decide the verdict (the final drain never ran)" in html


def test_fault_bands_pair_each_fault_with_its_own_heal() -> None:
    s = 1_000_000_000

    def op(i: int, t: float, typ: str, f: str, **v: object) -> NemesisOp:
        return NemesisOp.model_validate(
            {"index": i, "time": int(t * s), "type": typ, "f": f, "value": v}
        )

    nem = [
        op(1, 1, "invoke", "kill", target="leader"),
        op(2, 1.1, "ok", "kill", target="leader", brokers=[1]),
        op(3, 2, "invoke", "pause", target="random"),
        op(4, 2.1, "ok", "pause", target="random", brokers=[2]),
        op(5, 3, "invoke", "start", brokers=[1]),
        op(6, 3.2, "ok", "start", brokers=[1]),
        op(7, 5, "invoke", "partition", topology="halves"),
        op(8, 5.1, "info", "partition", topology="halves"),
        op(9, 9, "invoke", "heal-all"),
        op(10, 9.5, "ok", "heal-all"),
    ]
    bands = {f.f: f.band for f in faults(nem, t_end=20)}
    assert (bands["kill"].t0, bands["kill"].t1) == (1, 3.2)  # its own start, not pause's
    assert bands["pause"].t1 == 9.5  # no resume: heal-all ended it
    assert bands["partition"].unknown and "outcome unknown" in bands["partition"].label
    assert set(bands) == {"kill", "pause", "partition"}  # heals are not faults
    never = faults([op(1, 1, "invoke", "pause"), op(2, 1, "ok", "pause", brokers=[3])], 20)
    assert never[0].band.t1 == 20 and "never healed" in never[0].band.label


def test_fault_bands_name_their_real_targets() -> None:
    """A partition op records every broker its grudge touches; the band names the
    isolated one, else the sides of the split, else each cut link."""

    def label(value: dict[str, object], f: str = "partition") -> str:
        ops = [
            {"index": 1, "time": 1, "type": "invoke", "f": f, "value": {}},
            {"index": 2, "time": 2, "type": "ok", "f": f, "value": value},
        ]
        return faults([NemesisOp.model_validate(o) for o in ops], t_end=10)[0].band.label

    every = {"mode": "drop", "brokers": [1, 2, 3]}
    isolate = {"1": [2], "2": [1, 3], "3": [2]}
    assert (
        label({**every, "topology": "isolate-leader", "grudge": isolate, "isolated": [2]})
        == "partition isolate-leader drop: broker 2 isolated (never healed)"
    )
    halves = {**every, "topology": "halves", "grudge": {"1": [2, 3], "2": [1], "3": [1]}}
    assert label(halves).startswith("partition halves drop: brokers 1 | 2, 3 (")
    one_way = {"topology": "one-way", "mode": "drop", "brokers": [3], "grudge": {"3": [1]}}
    assert label(one_way).startswith("partition one-way drop: cut 1->3 (")
    ring = {"1": [3, 4], "2": [4, 5], "3": [5, 1], "4": [1, 2], "5": [2, 3]}
    assert "drop: cut 1-3, 1-4, 2-4, 2-5, 3-5 (" in label({**every, "grudge": ring})
    failover = {"topology": "followers-from-leader", "brokers": [3, 1], "leader": 2}
    assert "followers-from-leader: brokers 1, 3 from leader 2 (" in label(failover)
    assert label({"target": "leader", "brokers": [2]}, "kill").startswith("kill leader: broker 2")
