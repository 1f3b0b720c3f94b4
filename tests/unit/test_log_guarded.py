"""A worker thread's uncaught error: one log line that says what and where."""

from __future__ import annotations

import threading

import pytest
from kafka_trial.contracts.log import guarded


def _fails() -> None:
    raise RuntimeError("boom")


def test_a_dead_worker_says_where_it_died(capsys: pytest.CaptureFixture[str]) -> None:
    t = threading.Thread(target=guarded(_fails), name="producer-7")
    t.start()
    t.join()
    err = capsys.readouterr().err
    assert "producer-7 stopped: RuntimeError: boom (at " in err
    assert "test_log_guarded.py:" in err and " _fails)" in err
