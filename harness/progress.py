"""How the status line (contracts/log.status) reaches the user.

On a terminal: a live line at the bottom, with a spinner and the time the current
activity has taken, under the scrolling log lines. Anywhere else (CI logs, a pipe):
the status as an ordinary log line, at most every `every_s` seconds and only when
it changed, so a 10-minute soak leaves a readable trace and no escape codes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO

from kafka_trial.contracts.log import log, set_status_sink
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text


class _Live:
    def __init__(self, stream: IO[str]) -> None:
        self._text: str | None = None
        self._since = time.monotonic()
        self._lock = threading.Lock()
        self.console = Console(file=stream, stderr=stream is sys.stderr)
        self.live = Live(
            get_renderable=self._render,
            console=self.console,
            refresh_per_second=8,
            transient=True,
            # Log lines (stderr) print above the status line; so does stdout when it is
            # the same terminal, or the verdict would be drawn over. A redirected
            # stdout is left alone: it is the verdict's.
            redirect_stdout=sys.stdout.isatty(),
            redirect_stderr=True,
        )

    def __call__(self, text: str | None) -> None:
        with self._lock:
            # The clock restarts only when the activity changes, not its numbers.
            if (text or "").split(":")[0] != (self._text or "").split(":")[0]:
                self._since = time.monotonic()
            self._text = text
        # Now, not at the next tick: lines printed before it would carry the old
        # status under them (the verdict under "analysis: ..." when it is over).
        if self.live.is_started:
            self.live.refresh()

    def _render(self) -> RenderableType:
        with self._lock:
            text, since = self._text, self._since
        if not text:
            return Group()
        took = Text(f"  {time.monotonic() - since:5.0f}s", style="dim")
        return Spinner("dots", Text(text, style="bold") + took)


class _Plain:
    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._last_at = float("-inf")
        self._last: str | None = None

    def __call__(self, text: str | None) -> None:
        now = time.monotonic()
        if text and text != self._last and now - self._last_at >= self.every_s:
            self._last_at, self._last = now, text
            log(text)


@contextlib.contextmanager
def shown(live: bool | None = None, every_s: float = 10.0) -> Iterator[None]:
    """Show the status line for the duration of a command. `live` None: live on a
    terminal, plain otherwise."""
    stream = sys.stderr
    if live is None:
        live = stream.isatty()
    if not live:
        set_status_sink(_Plain(every_s))
        try:
            yield
        finally:
            set_status_sink(None)
        return
    sink = _Live(stream)
    set_status_sink(sink)
    try:
        with sink.live:
            yield
    finally:
        set_status_sink(None)
