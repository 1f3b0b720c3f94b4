"""Outside events marked on a run's timeline (`kafka-trial mark`): the command appends
to marks.jsonl, the run's MarkWatcher records each mark in the history as a nemesis
`mark` op (invoke, then info), and the analysis and report count it as no fault."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.harness.cli import main
from kafka_trial.harness.marks import MARK_REASON, MARKS, MARKS_CLOSED, MarkWatcher, add_mark
from kafka_trial.nemesis.catalog import MARK_OPS, is_fault
from kafka_trial.nemesis.recorder import NemesisRecorder

from tests.histories import Builder


def live_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text("")
    return run


def wait_for(cond: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def marks_of(run: Path) -> list[dict]:
    return [json.loads(ln) for ln in (run / MARKS).read_text().splitlines()]


def test_a_mark_on_a_live_run_is_one_line(tmp_path: Path) -> None:
    run = live_run(tmp_path)
    before = time.time()
    mark = add_mark(run, "rolling upgrade: broker 2")
    second = add_mark(run, "maintenance window ends")
    assert (
        mark["text"] == "rolling upgrade: broker 2" and before - 0.001 <= mark["at"] <= time.time()
    )
    assert marks_of(run) == [mark, second]


@pytest.mark.parametrize(
    ("setup", "text", "problem"),
    [
        ("finished", "x", "has finished (run.json is written); a mark must come while the run"),
        ("ending", "x", "is ending (its history takes no more marks)"),
        ("missing", "x", "is not a directory"),
        ("no-history", "x", "holds no history.jsonl, so no run is going there"),
        ("live", "  ", "the mark's text is empty"),
        ("live", "x" * 501, "the mark's text is 501 characters long, more than 500"),
    ],
)
def test_a_mark_is_refused_with_one_line(
    tmp_path: Path, setup: str, text: str, problem: str
) -> None:
    run = tmp_path / "gone" if setup == "missing" else live_run(tmp_path)
    if setup == "finished":
        (run / "run.json").write_text("{}")
    elif setup == "ending":
        (run / MARKS_CLOSED).touch()
    elif setup == "no-history":
        (run / "history.jsonl").unlink()
    with pytest.raises(TrialError) as e:
        add_mark(run, text)
    assert problem in e.value.problem
    assert "\n" not in e.value.one_line()
    assert not (run / MARKS).exists()


def test_the_watcher_records_each_mark_as_a_nemesis_info_op(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = live_run(tmp_path)
    (run / "history.jsonl").unlink()
    history = HistoryWriter(run / "history.jsonl")
    add_mark(run, "upgrade starts")
    add_mark(run, "broker 1 restarted")
    stop = threading.Event()
    # A long poll: the third mark can only come in through the last read on stop.
    w = MarkWatcher(run, history, stop, poll_s=30)
    th = threading.Thread(target=w.run)
    th.start()
    wait_for(lambda: w.marks_recorded == 2)
    history.invoke(0, "poll", [{"op": "poll"}])  # a client op between marks
    history.complete("ok", 0, "poll", [{"op": "poll", "records": []}])
    with (run / MARKS).open("a") as fh:
        fh.write('{"text": 5}\nnot json\n')
    add_mark(run, "upgrade done")
    stop.set()
    th.join(5)
    assert not th.is_alive() and w.marks_recorded == 3
    assert (run / MARKS_CLOSED).exists()
    history.close()
    assert "skipped a line" in capsys.readouterr().err

    ops = read_history(run / "history.jsonl").ops  # the project's reader parses every line
    marks = [o for o in ops if o.f == "mark"]
    assert [o.index for o in ops] == list(range(len(ops)))
    assert [(o.type, o.process) for o in marks] == [("invoke", "nemesis"), ("info", "nemesis")] * 3
    texts = ["upgrade starts", "broker 1 restarted", "upgrade done"]
    assert [o.value["text"] for o in marks] == [t for t in texts for _ in (0, 1)]
    for inv, done in zip(marks[::2], marks[1::2], strict=True):
        assert done.index == inv.index + 1  # the completion right after its invoke
        assert done.value == inv.value and inv.value["by"] == "user"
        assert isinstance(inv.value["at"], float) and done.error == MARK_REASON
    assert marks[1].index < ops[4].index < marks[4].index  # the poll sits between
    with pytest.raises(TrialError, match="is ending"):
        add_mark(run, "too late")


def test_a_line_still_being_written_waits_until_it_is_whole(tmp_path: Path) -> None:
    run = live_run(tmp_path)
    (run / "history.jsonl").unlink()
    history = HistoryWriter(run / "history.jsonl", flush_s=0)
    stop = threading.Event()
    w = MarkWatcher(run, history, stop, poll_s=0.01)
    th = threading.Thread(target=w.run)
    th.start()
    with (run / MARKS).open("a") as fh:
        fh.write('{"text": "half way", "at": 1700000000.5')
        fh.flush()
        time.sleep(0.2)  # many polls
        assert w.marks_recorded == 0
        fh.write("}\n")
    wait_for(lambda: w.marks_recorded == 1)
    stop.set()
    th.join(5)
    history.close()
    ops = read_history(run / "history.jsonl").ops
    assert [(o.type, o.f) for o in ops] == [("invoke", "mark"), ("info", "mark")]
    assert ops[0].value == {"text": "half way", "at": 1700000000.5, "by": "user"}


def test_a_mark_waits_for_the_fault_op_in_progress(tmp_path: Path) -> None:
    """Process "nemesis" has one op open at a time: a mark never lands inside a fault."""
    run = live_run(tmp_path)
    (run / "history.jsonl").unlink()
    rec = NemesisRecorder(HistoryWriter(run / "history.jsonl", flush_s=0))
    acting, release = threading.Event(), threading.Event()

    def kill() -> dict:
        acting.set()
        release.wait(5)
        return {"brokers": [1]}

    fault = threading.Thread(target=rec.do, args=("kill", {"target": "leader"}, kill))
    fault.start()
    acting.wait(5)
    stop = threading.Event()
    w = MarkWatcher(run, rec, stop, poll_s=0.01)
    th = threading.Thread(target=w.run)
    th.start()
    add_mark(run, "someone else's chaos tool")
    time.sleep(0.2)
    assert w.marks_recorded == 0
    release.set()
    fault.join(5)
    wait_for(lambda: w.marks_recorded == 1)
    stop.set()
    th.join(5)
    rec.history.close()
    ops = read_history(run / "history.jsonl").ops
    assert [(o.type, o.f) for o in ops] == [
        ("invoke", "kill"),
        ("ok", "kill"),
        ("invoke", "mark"),
        ("info", "mark"),
    ]


def test_the_mark_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = live_run(tmp_path)
    assert main(["mark", str(run), "broker 3 replaced"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("marked at ")
    assert out[0].endswith(": broker 3 replaced")
    assert [m["text"] for m in marks_of(run)] == ["broker 3 replaced"]
    (run / "run.json").write_text("{}")
    assert main(["mark", str(run), "x"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has finished (run.json is written)" in err[0]


def test_a_mark_is_neither_fault_nor_heal() -> None:
    assert "mark" in MARK_OPS
    assert not is_fault("mark")
    assert is_fault("kill") and is_fault("some-future-fault")


def test_marks_alone_are_no_fault_injected_and_the_report_shows_their_text(
    spark, tmp_path: Path
) -> None:
    from kafka_trial.report.html import write_report
    from kafka_trial.spark_analysis.job import analyze

    b = Builder(tmp_path / "run", faults=("kill-leader",))
    b.sends(0, [(1, 0, 0, "ok")])
    add_mark(b.run_dir, "rolling upgrade of broker 2")
    stop = threading.Event()
    stop.set()  # the watcher's last read alone records it
    w = MarkWatcher(b.run_dir, b.h, stop, poll_s=0.01)
    w.run()
    assert w.marks_recorded == 1
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    res = analyze(b.done(), report=True)
    assert res.valid == "unknown" and res.stats.faults_injected == 0
    assert any(p.startswith("no fault was injected") for p in res.problems)
    html = write_report(b.run_dir).read_text()
    assert "mark: rolling upgrade of broker 2" in html
    assert "no fault in this run" in html and "What the faults did" not in html
