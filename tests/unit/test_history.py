from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter, read_history


def test_indexes_and_times_increase(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "h.jsonl")
    h.invoke(0, "send", [{"op": "send", "topic": "t", "partition": 0, "value": 1}])
    h.invoke("nemesis", "kill", {"target": "leader"})
    h.complete("ok", "nemesis", "kill", {"brokers": [1]})
    h.complete("info", 0, "send", [], "_MSG_TIMED_OUT")
    h.close()
    ops = read_history(tmp_path / "h.jsonl").ops
    assert [o.index for o in ops] == [0, 1, 2, 3]
    assert all(a.time <= b.time for a, b in itertools.pairwise(ops))
    assert ops[3].error == "_MSG_TIMED_OUT"
    assert "error" not in json.loads((tmp_path / "h.jsonl").read_text().splitlines()[0])


def test_write_through_puts_every_line_on_disk_before_returning(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "h.jsonl", flush_s=0)
    h.invoke(0, "poll", [{"op": "poll"}])
    # Not closed: a crash now must still leave the line readable.
    assert len((tmp_path / "h.jsonl").read_text().splitlines()) == 1
    h.close()


def test_buffered_lines_reach_the_disk_within_the_flush_interval(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "h.jsonl", flush_s=0.05)
    h.invoke(0, "poll", [{"op": "poll"}])
    deadline = time.monotonic() + 5
    lines: list[str] = []
    while time.monotonic() < deadline and not lines:
        time.sleep(0.01)
        lines = (tmp_path / "h.jsonl").read_text().splitlines()
    # Written by the writer's own thread, with nobody calling flush or close.
    assert len(lines) == 1 and json.loads(lines[0])["f"] == "poll"
    h.close()


_KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from kafka_trial.contracts.history import HistoryWriter
h = HistoryWriter(Path(sys.argv[1]), flush_s=0.02)
for i in range(200_000):
    h.invoke(i % 50, "send", [{"op": "send", "topic": "t", "partition": 0, "value": i}])
    h.complete("ok", i % 50, "send", [{"op": "send", "topic": "t", "partition": 0,
               "value": i, "offset": i, "outcome": "ok"}])
    if i == 20_000:
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_writer_loses_only_a_suffix_of_the_history(tmp_path: Path) -> None:
    """SIGKILL while recording at full speed: what is on disk is the history's first
    lines in index order (the last one possibly cut), so nothing lost can turn into
    an outcome: a completion lost leaves its invoke open (unknown)."""
    path = tmp_path / "h.jsonl"
    r = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(path)], timeout=120)
    assert r.returncode == -signal.SIGKILL
    raw = path.read_text()
    lines = raw.splitlines()
    whole = lines if raw.endswith("\n") else lines[:-1]
    indexes = [json.loads(x)["index"] for x in whole]
    assert indexes == list(range(len(indexes)))
    # Something was written while it ran, and the last interval's ops were lost.
    assert 0 < len(indexes) < 40_002
    ops = [json.loads(x) for x in whole]
    open_invokes: set[int] = set()
    for op in ops:
        if op["type"] == "invoke":
            open_invokes.add(op["process"])
        else:
            assert op["process"] in open_invokes  # no completion without its invoke
            open_invokes.remove(op["process"])


def test_one_outstanding_op_per_process(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "h.jsonl")
    h.invoke(0, "send", [])
    with pytest.raises(RuntimeError):
        h.invoke(0, "send", [])
    with pytest.raises(RuntimeError):
        h.complete("ok", 0, "poll", [])
    with pytest.raises(RuntimeError):
        h.complete("ok", 1, "send", [])
    with pytest.raises(ValueError):
        h.complete("invoke", 0, "send", [])  # type: ignore[arg-type]


def test_abandon_open_completes_as_info(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "h.jsonl")
    h.invoke(3, "send", [{"op": "send", "topic": "t", "partition": 0, "value": 9}])
    h.invoke("nemesis", "kill", {})
    assert h.abandon_open("stopped") == 2
    h.close()
    ops = read_history(tmp_path / "h.jsonl").ops
    done = {o.process: o for o in ops if o.type != "invoke"}
    assert done[3].type == "info" and done[3].error == "stopped"
    assert done[3].value[0] == {
        "op": "send",
        "topic": "t",
        "partition": 0,
        "value": 9,
        "offset": None,
        "outcome": "info",
    }
    assert done["nemesis"].type == "info"


def test_history_cut_off_mid_line_keeps_every_complete_line(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    h = HistoryWriter(p)
    h.invoke(0, "send", [])
    h.complete("ok", 0, "send", [])
    h.close()
    with p.open("a") as fh:
        fh.write('{"index":2,"time":5,"ty')
    loaded = read_history(p)
    assert len(loaded.ops) == 2
    assert loaded.truncated_line == 3


def test_damage_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text(
        '{"index":0,"time":0,"type":"invoke","process":0,"f":"send","value":[]}\n'
        "garbage\n"
        '{"index":1,"time":1,"type":"ok","process":0,"f":"send","value":[]}\n'
    )
    with pytest.raises(TrialError, match="line 2"):
        read_history(p)


def test_refuses_to_overwrite_a_history(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text("{}\n")
    with pytest.raises(TrialError):
        HistoryWriter(p)


def _interrupted(path: Path) -> None:
    """A history as a killed run leaves it: a send and a fault never completed."""
    h = HistoryWriter(path)
    h.invoke(0, "send", [{"op": "send", "topic": "t", "partition": 0, "value": 1}])
    h.complete("ok", 0, "send", [{"op": "send", "topic": "t", "partition": 0, "value": 1,
                                  "offset": 0, "outcome": "ok"}])  # fmt: skip
    h.invoke(7, "send", [{"op": "send", "topic": "t", "partition": 1, "value": 2}])
    h.invoke("nemesis", "kill", {"target": "leader"})
    h.flush()  # what had reached the disk when the process was killed: no close


def test_a_resumed_history_continues_where_the_killed_run_stopped(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    _interrupted(path)
    h = HistoryWriter(path, resume=True)
    assert h.resumed is not None and h.resumed.max_process == 7
    assert set(h.resumed.open_ops) == {7, "nemesis"}
    assert h.abandon_open("cut off") == 2
    h.invoke(8, "poll", [{"op": "poll", "role": "drain"}])
    h.complete("ok", 8, "poll", [{"op": "poll", "role": "drain", "records": []}])
    h.close()
    ops = read_history(path).ops
    assert [o.index for o in ops] == list(range(len(ops)))
    assert all(a.time < b.time for a, b in itertools.pairwise(ops[3:]))
    assert ops[2].time < ops[4].time  # the appended ops come after the old ones
    info = [o for o in ops if o.type == "info"]
    assert {o.process for o in info} == {7, "nemesis"}
    send = next(o for o in info if o.process == 7)
    assert send.value[0]["outcome"] == "info" and send.error == "cut off"


def test_resuming_after_a_cut_off_line_keeps_it_and_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    _interrupted(path)
    with path.open("a") as fh:
        fh.write('{"index": 4, "time": 9, "type": "ok", "pro')
    h = HistoryWriter(path, resume=True)
    assert h.resumed is not None and h.resumed.cut_line == 5
    h.abandon_open("cut off")
    h.close()
    lines = path.read_text().splitlines()
    assert lines[4] == '{"index": 4, "time": 9, "type": "ok", "pro'  # kept, byte for byte
    assert [json.loads(x)["index"] for x in lines[5:]] == [4, 5]


def test_resuming_needs_a_history(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match="not found"):
        HistoryWriter(tmp_path / "none.jsonl", resume=True)
