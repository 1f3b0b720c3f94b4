"""Notices the Docker engine going away during a run.

Without it, a run whose engine died waits out every client's delivery timeout, then
the heal's and the drain's (minutes in silence), then ends in tracebacks. With it, the
load and the drain stop within seconds and the runner names what happened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol

from kafka_trial.contracts.log import log


class _Engine(Protocol):
    def engine_alive(self) -> bool: ...


class EngineWatch:
    """Pings the engine every `every_s`; after `misses` failed pings in a row, sets
    every event in `stops` and records when."""

    def __init__(
        self,
        cluster: _Engine,
        stops: Sequence[threading.Event],
        every_s: float = 1.0,
        misses: int = 2,
    ) -> None:
        self._cluster = cluster
        self._stops = tuple(stops)
        self._every_s = every_s
        self._misses = misses
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self.lost_after_s: float | None = None

    @property
    def lost(self) -> bool:
        return self.lost_after_s is not None

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="engine-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        missed = 0
        while not self._done.wait(self._every_s):
            # One failed ping under a loaded engine is not a death; two in a row is.
            missed = 0 if self._cluster.engine_alive() else missed + 1
            if missed >= self._misses:
                self.lost_after_s = time.monotonic() - self._t0
                log(f"the Docker engine stopped answering ({self.lost_after_s:.0f} s in)")
                for e in self._stops:
                    e.set()
                return
