"""A broker's execs and its pause never overlap, and nothing is exec'd into a paused
broker: an exec that joins a freezing cgroup sleeps there, and the engine then hangs
every later call on the container, its unpause included (seen on a real run)."""

from __future__ import annotations

import threading
import time

import pytest
from docker.models.containers import ExecResult
from kafka_trial.cluster.brokers import Broker
from kafka_trial.contracts.errors import TrialError


class _Container:
    name = "kafka-1"
    id = "c1"

    def __init__(self) -> None:
        self.status = "running"
        self.events: list[str] = []
        self.in_exec = threading.Event()
        self.release = threading.Event()

    def reload(self) -> None:
        pass

    def exec_run(self, cmd: list[str]) -> ExecResult:
        self.events.append(f"exec {cmd[0]} while {self.status}")
        self.in_exec.set()
        assert self.release.wait(5)
        self.events.append("exec done")
        return ExecResult(0, b"{}")

    def pause(self) -> None:
        self.events.append("pause")
        self.status = "paused"


def _broker(c: _Container) -> Broker:
    return Broker(1, c, None, None, (9092,))  # type: ignore[arg-type]


def test_a_pause_waits_for_an_exec_under_way() -> None:
    c = _Container()
    b = _broker(c)
    reader = threading.Thread(target=b.exec_running, args=(["cat", "quorum-state"],))
    reader.start()
    assert c.in_exec.wait(5)
    pauser = threading.Thread(target=b.pause)
    pauser.start()
    time.sleep(0.3)
    assert c.events == ["exec cat while running"]  # the pause has not landed mid-exec
    c.release.set()
    reader.join(5)
    pauser.join(5)
    assert c.events == ["exec cat while running", "exec done", "pause"]


def test_nothing_is_execd_into_a_paused_broker() -> None:
    c = _Container()
    b = _broker(c)
    c.release.set()
    b.pause()
    assert b.exec_running(["cat", "quorum-state"]) is None  # the observer skips it
    with pytest.raises(TrialError, match="broker 1 is paused"):
        b._exec(["bash", "-c", "true"])  # a fault's verb is refused, not hung
    assert c.events == ["pause"]
