"""Progress on stderr, so stdout stays for the verdict: log lines, and one status
line for what is going on right now (a build, the fault phase, the analysis).

Every layer reports through `log` and `status`; how the status is shown is the
command line's business (harness/progress.py): a live line on a terminal, a
periodic log line in CI, nothing for a library caller that installed no sink."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

_T0 = time.monotonic()
_sink: Callable[[str | None], None] | None = None
_local = threading.local()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def set_status_sink(sink: Callable[[str | None], None] | None) -> None:
    global _sink
    _sink = sink


def status(text: str | None) -> None:
    """Replace the status line (None: nothing going on). Cheap enough to call often."""
    sink = _sink
    if sink is not None and not getattr(_local, "muted", False):
        sink(text)


@contextlib.contextmanager
def status_muted() -> Iterator[None]:
    """This thread's status calls show nothing: work in the background (a campaign
    judging the run before) must not overwrite the status of the work in front."""
    _local.muted = True
    try:
        yield
    finally:
        _local.muted = False


@contextlib.contextmanager
def activity(text: str) -> Iterator[None]:
    """`text` is the status while the block runs."""
    status(text)
    try:
        yield
    finally:
        status(None)


def guarded(fn: Callable[[], None]) -> Callable[[], None]:
    """A thread's body that never prints a traceback over the verdict: the history
    has the truth, the log gets one line."""

    def inner() -> None:
        try:
            fn()
        except Exception as e:
            # Where it was raised, so a worker that died of an error its op did not
            # catch can be traced from the log alone.
            frames = traceback.extract_tb(e.__traceback__)
            at = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames[-3:])
            log(f"{threading.current_thread().name} stopped: {type(e).__name__}: {e} (at {at})")

    return inner
