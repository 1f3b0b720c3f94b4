"""Progress lines on stderr, so stdout stays for the verdict."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def guarded(fn: Callable[[], None]) -> Callable[[], None]:
    """A thread's body that never prints a traceback over the verdict: the history
    has the truth, the log gets one line."""

    def inner() -> None:
        try:
            fn()
        except Exception as e:
            log(f"{threading.current_thread().name} stopped: {type(e).__name__}: {e}")

    return inner
