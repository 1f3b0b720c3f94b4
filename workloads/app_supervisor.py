"""The supervisor of the application on trial: starts its instances, records each
start and exit in the history, and starts an ended instance again, as an
orchestrator would, until the harness stops them.

It is not stopped with the load's workers (ctx.stop): the application must keep
running after the producers stop, through the final heal, until it has caught up.
Each instance is a process "app-<i>" of the history:

- app-start: invoke {"instance": i}; ok adds what describe() gives (pid or
  container); fail with `error` when it could not start.
- app-exit: invoke and ok {"instance": i, pid|container, "exit_code": c, "by": who,
  "stderr_tail": last stderr line}; `by` is "itself" unless a fault or the harness
  ended it (kill or terminate named it). `"crash_loop": true` when it is not started
  again: it exited by itself CRASH_LOOP_EXITS times in a row, each within
  CRASH_LOOP_WINDOW_S of its start.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_trial.contracts.app_contract import APPS, ManagedAppInstance
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.log import guarded, log

CRASH_LOOP_EXITS = 5
CRASH_LOOP_WINDOW_S = 10.0
TICK_S = 0.25

# Starts instance i (registering it wherever it must be found later); raises when
# it cannot.
Starter = Callable[[int], ManagedAppInstance]


@dataclass
class _Slot:
    index: int
    instance: ManagedAppInstance | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    quick_exits: int = 0  # exits by itself soon after their start, in a row
    gave_up: bool = False
    failed: Exception | None = None  # why its last start failed


@dataclass(frozen=True)
class EarlyExit:
    """An instance that ended (or never started) right after the first start."""

    index: int
    exit_code: int | None  # None: it did not start
    why: str  # its last stderr line, or the start's error
    error: Exception | None = None  # what its start raised


@dataclass
class AppSupervisor:
    history: HistoryWriter
    starter: Starter
    instances: int
    restart_delay_s: float
    abort: threading.Event = field(default_factory=threading.Event)
    on_exit: Callable[[ManagedAppInstance], None] = lambda _i: None
    starts: int = 0
    start_failures: int = 0
    exits: Counter[str] = field(default_factory=Counter)
    crash_looped: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.slots = [_Slot(i) for i in range(self.instances)]
        self._lock = threading.RLock()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    # --- recording ------------------------------------------------------------------

    def _start(self, slot: _Slot) -> None:
        i, proc = slot.index, f"app-{slot.index}"
        slot.restart_at = None
        self.history.invoke(proc, "app-start", {"instance": i})
        slot.started_at = time.monotonic()
        try:
            inst = self.starter(i)
        except Exception as e:  # the shell, the engine: whatever refused, it is recorded
            self.start_failures += 1
            slot.failed = e
            error = f"{type(e).__name__}: {e}"[:500]
            self.history.complete("fail", proc, "app-start", {"instance": i}, error)
            self._ended(slot, by="itself", why=error)
            return
        slot.instance = inst
        self.starts += 1
        APPS.register(inst)
        self.history.complete("ok", proc, "app-start", {"instance": i, **inst.describe()})

    def _record_exit(self, slot: _Slot, inst: ManagedAppInstance) -> None:
        by = inst.ended_by() or "itself"
        slot.instance = None
        value: dict[str, Any] = {
            **inst.describe(),
            "exit_code": inst.exit_code(),
            "by": by,
            "stderr_tail": inst.stderr_tail(),
        }
        # Whatever the shell left running in its group goes with it.
        inst.close()
        self.on_exit(inst)
        self._ended(slot, by, value=value)

    def _ended(
        self, slot: _Slot, by: str, value: dict[str, Any] | None = None, why: str = ""
    ) -> None:
        """Count the end of a start (a start that failed is one too) and decide on the
        restart; `value`: the app-exit op to record (None for a failed start)."""
        self.exits[by] += 1
        quick = by == "itself" and time.monotonic() - slot.started_at < CRASH_LOOP_WINDOW_S
        slot.quick_exits = slot.quick_exits + 1 if quick else 0
        restarting = not self._halt.is_set()
        if restarting and slot.quick_exits >= CRASH_LOOP_EXITS:
            slot.gave_up, restarting = True, False
            self.crash_looped.append(slot.index)
            log(
                f"app instance {slot.index} exited by itself {slot.quick_exits} times, each "
                f"within {CRASH_LOOP_WINDOW_S:g} s of its start; not starting it again"
                + (f" ({value.get('stderr_tail') or why})" if value else f" ({why})")
            )
        if value is not None:
            if slot.gave_up:
                value["crash_loop"] = True
            proc = f"app-{slot.index}"
            self.history.invoke(proc, "app-exit", value)
            self.history.complete("ok", proc, "app-exit", value)
        if restarting:
            slot.restart_at = time.monotonic() + self.restart_delay_s

    # --- the loop -------------------------------------------------------------------

    def start_all(self) -> None:
        with self._lock:
            for slot in self.slots:
                self._start(slot)

    def early_exit(self, wait_s: float) -> EarlyExit | None:
        """After the first start: the first instance that did not start or has already
        exited within `wait_s`, recorded; None when all run."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and all(
            s.instance is not None and s.instance.running() for s in self.slots
        ):
            time.sleep(0.05)
        with self._lock:
            for slot in self.slots:
                inst = slot.instance
                if inst is None:
                    e = slot.failed
                    return EarlyExit(slot.index, None, str(e) if e else "it did not start", e)
                if not inst.running():
                    code, tail = inst.exit_code(), inst.stderr_tail()
                    self._record_exit(slot, inst)
                    return EarlyExit(slot.index, code, tail)
        return None

    def tick(self) -> None:
        """Record every instance that ended, and start those whose delay is over."""
        with self._lock:
            if self._halt.is_set():
                return
            now = time.monotonic()
            for slot in self.slots:
                inst = slot.instance
                if inst is not None and not inst.running():
                    self._record_exit(slot, inst)
                if slot.instance is None and slot.restart_at is not None and now >= slot.restart_at:
                    self._start(slot)

    def _run(self) -> None:
        while not self._halt.wait(TICK_S):
            if self.abort.is_set():
                # The cluster is gone for good: nothing for the app to do any more.
                self.close()
                return
            self.tick()

    def supervise(self) -> None:
        self._thread = threading.Thread(
            target=guarded(self._run), name="app-supervisor", daemon=True
        )
        self._thread.start()

    def _halt_loop(self) -> None:
        self._halt.set()
        th = self._thread
        if th is not None and th is not threading.current_thread():
            th.join(10)

    # --- the end --------------------------------------------------------------------

    def stop(self, grace_s: float) -> None:
        """The final stop: SIGTERM (a graceful stop) to every instance, SIGKILL to those
        still running after `grace_s`; each exit recorded, none restarted."""
        self._halt_loop()
        with self._lock:
            running = [s for s in self.slots if s.instance is not None and s.instance.running()]
            for slot in running:
                assert slot.instance is not None
                with contextlib.suppress(Exception):  # it may end on its own meanwhile
                    slot.instance.terminate("harness")
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and any(
                s.instance is not None and s.instance.running() for s in running
            ):
                time.sleep(0.05)
            for slot in self.slots:
                inst = slot.instance
                if inst is None:
                    continue
                if inst.running():
                    with contextlib.suppress(Exception):
                        inst.kill("harness")
                    _await_end(inst, 5)
                self._record_exit(slot, inst)

    def close(self) -> None:
        """Every path's end: kill whatever runs, record it if the history is still
        open, and take every instance out of the registry. Never raises."""
        self._halt.set()
        with self._lock:
            for slot in self.slots:
                inst = slot.instance
                if inst is not None:
                    with contextlib.suppress(Exception):
                        inst.close()
                    # The history may already be closed (a teardown after its end).
                    with contextlib.suppress(Exception):
                        self._record_exit(slot, inst)
                    slot.instance = None
                APPS.unregister(slot.index)
        th = self._thread
        if th is not None and th is not threading.current_thread():
            th.join(10)

    def summary(self) -> dict[str, Any]:
        return {
            "instances": self.instances,
            "starts": self.starts,
            "start_failures": self.start_failures,
            "exits": dict(self.exits),
            "crash_looped": list(self.crash_looped),
        }


def _await_end(inst: ManagedAppInstance, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while inst.running() and time.monotonic() < deadline:
        time.sleep(0.02)
