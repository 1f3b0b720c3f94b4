"""The faults on the application on trial (app-kill, app-pause, app-restart,
app-partition) against stand-ins of its instances, registered as the app workload
registers the real ones: what each fault picks, what it records, and that an effect
not seen ends the op `info` with nothing left behind. A process instance is a real
process group (`sleep`), so the kernel states recorded are the kernel's."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.contracts.app_contract import APPS
from kafka_trial.contracts.client_processes import process_state
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.nemesis import packages
from kafka_trial.nemesis.catalog import (
    APP_PACKAGES,
    FAULT_OPS,
    HEAL_OPS,
    PACKAGES,
    WAIT_OPS,
    heals,
    is_fault,
    is_instant,
)
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.runner import NemesisRunner
from kafka_trial.nemesis.schedule import Step
from kafka_trial.nemesis.settings import NemesisSpec

from tests.fakes import FakeCluster

FAST = NemesisSpec(fault_s=0.01, quiet_s=0.01, faults=tuple(sorted(APP_PACKAGES)))


class ProcApp:
    """An instance as a process group of its own, as the command instances are; with
    `stops=False` its pause sends nothing (an instance whose pause does not take)."""

    def __init__(self, index: int, stops: bool = True) -> None:
        self.index = index
        self.stops = stops
        self.proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
        self.calls: list[str] = []
        self.ended_by: str | None = None

    def _signal(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)

    def describe(self) -> dict[str, Any]:
        return {"instance": self.index, "pid": self.proc.pid}

    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self, by: str) -> dict[str, Any]:
        self.ended_by = by
        self._signal(signal.SIGKILL)
        return {}

    def terminate(self, by: str) -> dict[str, Any]:
        self.ended_by = by
        self._signal(signal.SIGTERM)
        return {}

    def pause(self) -> dict[str, Any]:
        self.calls.append("pause")
        if self.stops:
            self._signal(signal.SIGSTOP)
        return {}

    def resume(self) -> dict[str, Any]:
        self.calls.append("resume")
        self._signal(signal.SIGCONT)
        return {"state": process_state(self.proc.pid)}

    def cut(self) -> dict[str, Any]:
        self.calls.append("cut")
        return {"lane": self.index + 1, "brokers": [1, 2, 3], "mode": "reject"}

    def uncut(self) -> dict[str, Any]:
        self.calls.append("uncut")
        return {"lane": self.index + 1, "brokers": [1, 2, 3]}

    def close(self) -> None:
        if self.running():
            self._signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


@dataclass
class BoxApp:
    """An instance as a container, its engine state in memory; the flags play an
    engine that did not do what it was asked."""

    index: int
    state: str = "running"
    pause_takes: bool = True
    kill_takes: bool = True
    cut_fails: bool = False
    calls: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {"instance": self.index, "container": f"c0ffee{self.index}"}

    def running(self) -> bool:
        return self.state in ("running", "paused")

    def kill(self, by: str) -> dict[str, Any]:
        before = self.state
        if self.kill_takes:
            self.state = "exited"
        return {"state": before, "after": self.state, "exit_code": 137}

    def terminate(self, by: str) -> dict[str, Any]:
        before, self.state = self.state, "exited"
        return {"state": before, "after": self.state, "exit_code": 143}

    def pause(self) -> dict[str, Any]:
        self.calls.append("pause")
        if self.pause_takes:
            self.state = "paused"
        return {"was": "running", "state": self.state}

    def resume(self) -> dict[str, Any]:
        self.calls.append("resume")
        self.state = "running"
        return {"state": self.state}

    def cut(self) -> dict[str, Any]:
        self.calls.append("cut")
        if self.cut_fails:
            raise RuntimeError("client lane 2 still passes to brokers [3]")
        return {"lane": 2, "brokers": [1, 2, 3], "mode": "reject"}

    def uncut(self) -> dict[str, Any]:
        self.calls.append("uncut")
        return {"lane": 2, "brokers": [1, 2, 3]}


@pytest.fixture
def apps() -> Iterator[list[Any]]:
    """Instances registered for a test, unregistered (and their processes ended) after."""
    made: list[Any] = []
    yield made
    for a in made:
        APPS.unregister(a.index)
        if isinstance(a, ProcApp):
            a.close()


def register(made: list[Any], *instances: Any) -> None:
    for a in instances:
        made.append(a)
        APPS.register(a)


def make(tmp_path: Path) -> tuple[Nemesis, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)  # read while open
    return Nemesis(FakeCluster(), history, FAST, "trial"), history


def test_the_catalog_pairs_each_app_fault_with_its_heal() -> None:
    assert sorted(APP_PACKAGES) == ["app-kill", "app-partition", "app-pause", "app-restart"]
    assert not APP_PACKAGES - set(PACKAGES) and not APP_PACKAGES - set(packages.BUILDERS)
    assert is_instant("app-kill") and is_instant("app-restart")
    assert heals("app-pause", "app-resume") and heals("app-partition", "app-heal")
    assert not heals("app-pause", "app-heal") and heals("app-pause", "heal-all")
    assert {"app-resume", "app-heal"} <= HEAL_OPS
    assert all(is_fault(f) for f in APP_PACKAGES)
    for name in APP_PACKAGES:
        assert packages.build_package(name, FAST, "trial").name == name


def test_app_kill_picks_by_the_pick_and_records_the_kernel_s_states(
    tmp_path: Path, apps: list[Any]
) -> None:
    register(apps, ProcApp(0), ProcApp(1), ProcApp(2))
    pick = 7
    chosen = random.Random(pick).choice(apps)
    nem, history = make(tmp_path)
    applied = nem.apply("app-kill", pick)
    assert applied.ok and applied.heal is None
    assert not chosen.running() and chosen.ended_by == "app-kill"
    assert all(a.running() for a in apps if a is not chosen)
    invoke, done = read_history(history.path).ops
    assert (invoke.f, invoke.value, done.type) == ("app-kill", {"target": "app"}, "ok")
    assert done.value["instance"] == chosen.index and done.value["pid"] == chosen.proc.pid
    assert done.value["state"] in ("S", "R") and done.value["after"] == "gone"
    assert done.value["killed"] is True
    assert f"app instance {chosen.index} (pid {chosen.proc.pid}) killed" in effect(
        done.f, done.type, done.value
    )


def test_the_pick_decides_which_instance(tmp_path: Path, apps: list[Any]) -> None:
    register(apps, *(BoxApp(i) for i in range(4)))
    nem, _ = make(tmp_path)
    hit = set()
    for pick in range(12):
        before = [a for a in apps if a.state == "paused"]
        live = [a for a in apps if a.running()]
        want = random.Random(pick).choice(live)
        nem.apply("app-pause", pick)
        assert [a for a in apps if a.state == "paused"] == sorted(
            [*before, want], key=lambda a: a.index
        )
        hit.add(want.index)
        nem.heal()
    assert len(hit) > 1, "the pick must matter"


def test_no_instance_running_completes_info(tmp_path: Path, apps: list[Any]) -> None:
    register(apps, BoxApp(0, state="exited"))
    nem, history = make(tmp_path)
    for name in sorted(APP_PACKAGES):
        assert not nem.apply(name, 3).ok
    assert nem.outstanding == ()
    got = read_history(history.path).ops
    assert [o.type for o in got] == ["invoke", "info"] * 4
    assert all("no instance of the application on trial" in (o.error or "") for o in got[1::2])


def test_a_kill_that_leaves_it_running_completes_info(
    tmp_path: Path, apps: list[Any], monkeypatch
) -> None:
    monkeypatch.setattr(packages, "APP_GONE_S", 0.1)
    register(apps, BoxApp(0, kill_takes=False))
    nem, history = make(tmp_path)
    assert not nem.apply("app-kill").ok
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "still runs" in (last.error or "")


def test_app_pause_freezes_the_process_group_and_its_heal_wakes_it(
    tmp_path: Path, apps: list[Any]
) -> None:
    app = ProcApp(0)
    register(apps, app)
    nem, history = make(tmp_path)
    assert nem.apply("app-pause").ok
    assert process_state(app.proc.pid) == "T"
    nem.heal("app-pause")
    assert process_state(app.proc.pid) in ("S", "R")
    fault, done, heal, healed = read_history(history.path).ops
    assert (fault.f, done.type, heal.f, healed.type) == ("app-pause", "ok", "app-resume", "ok")
    assert done.value["state"] == "T" and done.value["was"] in ("S", "R")
    assert (done.value["instance"], done.value["pid"]) == (0, app.proc.pid)
    assert heal.value == {"instances": [0]}
    assert "0" in healed.value["apps"]
    assert "frozen, state T" in effect(done.f, done.type, done.value)
    assert "app instance 0 resumed" in effect(healed.f, healed.type, healed.value)
    assert APPS.heal_all() == {"resumed": [], "restored": []}, "its heal was the registry's"


@pytest.mark.parametrize("app", [ProcApp, BoxApp], ids=["process", "container"])
def test_a_pause_that_did_not_take_completes_info_and_is_undone(
    tmp_path: Path, apps: list[Any], app: type
) -> None:
    inst = ProcApp(0, stops=False) if app is ProcApp else BoxApp(0, pause_takes=False)
    register(apps, inst)
    nem, history = make(tmp_path)
    assert not nem.apply("app-pause").ok
    last = read_history(history.path).ops[-1]
    assert last.type == "info" and "did not stop" in (last.error or "")
    assert inst.calls == ["pause", "resume"]
    assert nem.outstanding == ()
    assert APPS.heal_all() == {"resumed": [], "restored": []}


def test_app_pause_skips_an_instance_already_stopped(tmp_path: Path, apps: list[Any]) -> None:
    stopped, other = ProcApp(0), ProcApp(1)
    register(apps, stopped, other)
    os.killpg(stopped.proc.pid, signal.SIGSTOP)
    packages.wait_until(lambda: process_state(stopped.proc.pid) == "T", 2, 0.01)
    nem, history = make(tmp_path)
    for pick in range(4):
        assert nem.apply("app-pause", pick).ok
        assert read_history(history.path).ops[-1].value["instance"] == 1
        nem.heal()


def test_app_restart_sends_sigterm_and_records_it(tmp_path: Path, apps: list[Any]) -> None:
    app = ProcApp(0)
    register(apps, app)
    nem, history = make(tmp_path)
    applied = nem.apply("app-restart")
    assert applied.ok and applied.heal is None
    assert app.proc.wait(5) == -signal.SIGTERM and app.ended_by == "app-restart"
    done = read_history(history.path).ops[-1]
    assert done.value["terminated"] is True and done.value["state"] in ("S", "R")
    assert "sent SIGTERM" in effect(done.f, done.type, done.value)


def test_app_partition_cuts_its_lane_and_the_heal_restores_it(
    tmp_path: Path, apps: list[Any]
) -> None:
    app = BoxApp(0)
    register(apps, app)
    nem, history = make(tmp_path)
    assert nem.apply("app-partition").ok
    nem.heal()
    assert app.calls == ["cut", "uncut"]
    fault, done, heal, healed = read_history(history.path).ops
    assert (fault.f, done.f, heal.f, healed.f) == (
        "app-partition",
        "app-partition",
        "app-heal",
        "app-heal",
    )
    assert done.value["lane"] == 2 and done.value["container"] == "c0ffee0"
    assert healed.value["apps"] == {"0": {"lane": 2, "brokers": [1, 2, 3]}}
    assert "cut off the brokers (client lane 2)" in effect(done.f, done.type, done.value)
    assert "reconnected (client lane 2)" in effect(healed.f, healed.type, healed.value)


def test_a_partition_that_failed_half_way_is_undone_and_info(
    tmp_path: Path, apps: list[Any]
) -> None:
    app = BoxApp(0, cut_fails=True)
    register(apps, app)
    nem, history = make(tmp_path)
    assert not nem.apply("app-partition").ok
    assert app.calls == ["cut", "uncut"] and nem.outstanding == ()
    assert read_history(history.path).ops[-1].type == "info"


def test_the_heal_of_an_instance_that_is_gone_says_so(tmp_path: Path, apps: list[Any]) -> None:
    app = BoxApp(0)
    register(apps, app)
    nem, history = make(tmp_path)
    assert nem.apply("app-pause").ok
    APPS.unregister(0)  # killed and not started again before the heal
    assert nem.heal() == 1
    healed = read_history(history.path).ops[-1]
    assert healed.type == "ok" and healed.value["apps"] == {"0": "gone"}


def test_heal_all_wakes_and_reconnects_what_no_heal_of_its_own_undid(
    tmp_path: Path, apps: list[Any]
) -> None:
    frozen, cut = ProcApp(0), BoxApp(1)
    register(apps, frozen, cut)
    APPS.pause(frozen)  # a fault whose own heal never ran
    APPS.cut(cut)
    assert packages.wait_until(lambda: process_state(frozen.proc.pid) == "T", 2, 0.01)
    nem, history = make(tmp_path)
    assert nem.heal_all()
    assert process_state(frozen.proc.pid) in ("S", "R")
    assert cut.calls == ["cut", "uncut"]
    done = read_history(history.path).ops[-1]
    assert done.f == "heal-all" and done.value["apps_healed"] == {"resumed": [0], "restored": [1]}
    assert "app instances resumed [0]" in effect(done.f, done.type, done.value)


def test_heal_all_heals_the_app_even_when_a_broker_s_heal_fails(
    tmp_path: Path, apps: list[Any]
) -> None:
    app = BoxApp(0)
    register(apps, app)
    APPS.pause(app)
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    nem = Nemesis(FakeCluster(), history, FAST, "trial")

    def failing_heal_all() -> None:
        raise RuntimeError("proxy 2: refused")

    nem.cluster.heal_all = failing_heal_all  # type: ignore[method-assign]
    assert not nem.heal_all()
    assert app.state == "running" and app.calls == ["pause", "resume"]


@pytest.mark.parametrize("name", sorted(APP_PACKAGES))
def test_every_op_an_app_fault_records_is_in_the_catalog(
    tmp_path: Path, apps: list[Any], name: str
) -> None:
    register(apps, BoxApp(0), BoxApp(1))
    nem, history = make(tmp_path)
    assert nem.apply(name, pick=5).ok
    nem.heal()
    nem.heal_all()
    done = [o for o in read_history(history.path).ops if o.type == "ok"]
    assert {o.f for o in done} <= {*FAULT_OPS, *HEAL_OPS, *WAIT_OPS}
    for i, o in enumerate(done):
        if is_fault(o.f) and FAULT_OPS[o.f] is not None:
            own = [later.f for later in done[i + 1 :] if heals(o.f, later.f)]
            assert own and own[0] == FAULT_OPS[o.f], (o.f, [d.f for d in done])


def test_the_runner_heals_an_app_fault_the_schedule_left_on(
    tmp_path: Path, apps: list[Any]
) -> None:
    app = BoxApp(0)
    register(apps, app)
    nem, history = make(tmp_path)
    runner = NemesisRunner(nem, [Step(0.0, "fault", "app-pause", 1)], threading.Event())
    runner.run()
    assert runner.faults_done == 1 and app.state == "paused"
    runner.final_heal("trial", 1)
    assert app.state == "running" and nem.outstanding == ()
    fs = [o.f for o in read_history(history.path).ops if o.type == "ok"]
    assert fs == ["app-pause", "app-resume", "heal-all", "await-healthy"]
