"""Every fault and heal is a nemesis op in the same history as the client ops."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.log import log


@dataclass
class NemesisRecorder:
    history: HistoryWriter
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def said(self, f: str, value: dict[str, Any], why: str) -> None:
        """An op that did nothing, and why: its invoke and, at once, its `info`."""
        with self._lock:
            self.history.invoke("nemesis", f, value)
            self.history.complete("info", "nemesis", f, value, why[:500])
            self.history.flush()
        log(f"nemesis {f} {value}: {why}")

    def do(
        self, f: str, value: dict[str, Any], action: Callable[[], dict[str, Any] | None]
    ) -> bool:
        """Invoke, act, complete: `ok` with what was hit, or `info` if the action raised
        (a half-applied fault is unknown, never `fail`)."""
        with self._lock:
            # Faults are rare and are the history's account of what was done to the
            # cluster: each is on disk before it acts and once it acted, so a crash
            # right after a fault cannot leave the fault in place and out of the file.
            self.history.invoke("nemesis", f, value)
            self.history.flush()
            try:
                result = action() or {}
            except Exception as e:  # the run must go on and heal; the history says what broke
                log(f"nemesis {f} failed: {e}")
                self.history.complete("info", "nemesis", f, value, f"{type(e).__name__}: {e}"[:500])
                self.history.flush()
                if not isinstance(e, (RuntimeError, OSError, ValueError)):
                    traceback.print_exc()
                return False
            self.history.complete("ok", "nemesis", f, {**value, **result})
            self.history.flush()
            log(f"nemesis {f} {dict(value, **result)}")
            return True
