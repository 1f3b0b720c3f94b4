"""The status line: live on a terminal (a real pty), periodic log lines elsewhere,
and what the fault phase puts on it."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.log import set_status_sink, status
from kafka_trial.harness.progress import shown
from kafka_trial.harness.runner import _fault_phase
from kafka_trial.nemesis.core import Applied, Nemesis

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_terminal_the_status_is_a_log_line_at_most_every_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with shown(live=False, every_s=0.3):
        status("fault phase: 1/9s")
        status("fault phase: 2/9s")  # too soon: not printed
        time.sleep(0.35)
        status("fault phase: 3/9s")
        status(None)
    err = capsys.readouterr().err
    assert "fault phase: 1/9s" in err and "fault phase: 3/9s" in err
    assert "2/9s" not in err and "\x1b[" not in err
    status("after the command")  # no sink any more: nowhere to go, no error
    assert capsys.readouterr().err == ""


def test_on_a_terminal_the_status_is_a_live_line_under_the_log() -> None:
    script = (
        "import time\n"
        "from kafka_trial.contracts.log import log, status\n"
        "from kafka_trial.harness.progress import shown\n"
        "with shown():\n"
        "    status('final drain: reading every partition')\n"
        "    time.sleep(0.6)\n"
        "    log('a log line')\n"
        "    time.sleep(0.6)\n"
        "    status(None)\n"
        "    print('the verdict')\n"
        "    print('results: here')\n"
    )
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdin=follower, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(120)
    os.close(leader)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
    assert "final drain: reading every partition" in text
    assert "a log line" in text
    assert "\x1b[" in text  # drawn and redrawn in place, not appended line by line
    # Once the activity is over, the lines printed next carry no stale status.
    assert "final drain" not in text.split("the verdict", 1)[1]


def _nemesis_with_faults_in_force(tmp_path: Path) -> Nemesis:
    """A real Nemesis (no cluster: nothing is applied) holding two outstanding faults."""
    nemesis = Nemesis(None, HistoryWriter(tmp_path / "history.jsonl"))  # type: ignore[arg-type]
    nemesis._outstanding.extend(
        [Applied("pause", ({"brokers": [2]},), None), Applied("degrade", (None,), None)]
    )
    return nemesis


class _History:
    def __init__(self) -> None:
        self.lines_written = 0


def test_the_fault_phase_shows_time_rate_ops_and_the_faults_in_force(tmp_path: Path) -> None:
    seen: list[str | None] = []
    set_status_sink(seen.append)
    history = _History()
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            history.lines_written += 50
            time.sleep(0.05)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        faults = _nemesis_with_faults_in_force(tmp_path)
        _fault_phase(threading.Event(), 2.5, history, faults)  # type: ignore[arg-type]
    finally:
        stop.set()
        writer.join()
        set_status_sink(None)
    lines = [s for s in seen if s]
    # Once a second (a loaded machine may wake late and fit only one in).
    assert 1 <= len(lines) <= 2, lines
    assert re.match(r"fault phase: [12]/2\.5s, [\d,]+ ops/s, [\d,]+ ops recorded, ", lines[0])
    assert "faults now: pause 2, degrade" in lines[-1]
    rate = int(lines[-1].split(", ")[1].split()[0].replace(",", ""))
    assert 0 < rate <= 1500, lines  # at most ~1,000 ops/s were written
