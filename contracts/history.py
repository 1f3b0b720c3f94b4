"""The history: one JSON object per line, the public contract in docs/history.md.

The writer assigns each op its index and time under one lock, as the op happens,
and a background thread encodes and writes the lines in index order every
`flush_s` (0.1 s by default): clients recording thousands of ops per second never
wait on JSON or a write(). A crash therefore loses at most the last flush
interval's lines, and always a suffix of the history: a lost completion leaves its
invoke open, which the analysis reads as `info` (unknown), never as an outcome that
did not happen. `flush_s=0` writes every line before returning. The reader tolerates
a cut-off last line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.ops import COMPLETIONS, Op, OpType, Process, Send


@dataclass
class HistoryWriter:
    """Thread-safe append-only writer; index and time are assigned under one lock."""

    path: Path
    # Append to an existing history (`kafka-trial finish`) instead of starting one.
    resume: bool = False
    # How long a recorded op may wait before its line is written (0: at once).
    flush_s: float = 0.1
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    # Held while lines are written, so a flush from any thread keeps index order.
    _io: threading.Lock = field(default_factory=threading.Lock, init=False)
    # Ops recorded, not yet written, in index order: appended under `_lock`, taken by
    # the writing thread without it (a thread waiting on a lock that busy recorders
    # keep taking would starve: CPython's locks are not fair).
    _pending: deque[Op] = field(default_factory=deque, init=False)
    _next: int = field(default=0, init=False)
    _t0: int = field(default_factory=time.monotonic_ns, init=False)
    _open: dict[Process, tuple[str, Any]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.resumed: ResumePoint | None = None
        if self.resume:
            self.resumed = _resume_point(self.path)
            self._next = self.resumed.next_index
            # Times keep increasing across the gap; how long the gap was is unknown.
            self._t0 = time.monotonic_ns() - self.resumed.last_time - 1
            self._open = dict(self.resumed.open_ops)
        elif self.path.exists() and self.path.stat().st_size > 0:
            raise TrialError(f"{self.path} already holds a history", "use a fresh run directory")
        self._fh = self.path.open("a", encoding="utf-8")
        if self.resumed is not None and self.resumed.ends_mid_line:
            # The cut-off line stays as it is; what follows starts on a line of its own.
            self._fh.write("\n")
            self._fh.flush()
        self._closing = threading.Event()
        self._oldest_ns = 0  # when the oldest op not yet written was recorded
        self._late_ns = int(self.flush_s * 1e9)
        self._flusher: threading.Thread | None = None
        if self.flush_s > 0:
            self._flusher = threading.Thread(
                target=self._flush_every, name=f"history {self.path.name}", daemon=True
            )
            self._flusher.start()

    def _flush_every(self) -> None:
        while not self._closing.wait(self.flush_s):
            try:
                self.flush()
            except (OSError, ValueError):
                return  # closed or the disk failed: close() reports what it can

    def flush(self) -> None:
        """Write every op recorded so far (readers call this before reading the file)."""
        with self._io:
            self._write_pending()

    def _write_pending(self) -> None:
        pending = self._pending
        ops = [pending.popleft() for _ in range(len(pending))]
        if not ops or self._fh.closed:
            return
        self._fh.write("".join([_line(op) for op in ops]))
        self._fh.flush()

    @property
    def lines_written(self) -> int:
        return self._next

    def elapsed_ns(self) -> int:
        return time.monotonic_ns() - self._t0

    def _append(self, type_: OpType, process: Process, f: str, value: Any, error: str | None) -> Op:
        with self._lock:
            if self._fh.closed:
                raise RuntimeError("history is closed")
            outstanding = self._open.get(process)
            if type_ == "invoke":
                if outstanding is not None:
                    raise RuntimeError(f"process {process} already has an open {outstanding[0]}")
                self._open[process] = (f, value)
            else:
                if outstanding is None or outstanding[0] != f:
                    raise RuntimeError(f"process {process} completes {f} it never invoked")
                del self._open[process]
            now = self.elapsed_ns()
            op = Op(self._next, now, type_, process, f, value, error)
            if not self._pending:
                self._oldest_ns = now
            self._pending.append(op)
            self._next += 1
        if self._flusher is None or now - self._oldest_ns > self._late_ns:
            # Due, and the writing thread has not written: recorders that never wait
            # (a busy loop, many threads) can keep it off the GIL. Whoever records
            # then writes (waiting for it, if it is writing), so a crash still loses
            # at most about one flush interval.
            self.flush()
        return op

    def invoke(self, process: Process, f: str, value: Any = None) -> Op:
        return self._append("invoke", process, f, value, None)

    def complete(
        self, type_: OpType, process: Process, f: str, value: Any = None, error: str | None = None
    ) -> Op:
        if type_ not in COMPLETIONS:
            raise ValueError(f"not a completion type: {type_}")
        return self._append(type_, process, f, value, error)

    def open_processes(self) -> dict[Process, str]:
        with self._lock:
            return {p: f for p, (f, _) in self._open.items()}

    def abandon_open(self, reason: str) -> int:
        """Complete every open op as `info`: nobody knows what became of it.

        Send micro-ops keep their fields and gain outcome info, so a reader sees
        exactly which values are indeterminate."""
        with self._lock:
            pending = list(self._open.items())
        for process, (f, value) in pending:
            if isinstance(value, list):
                value = [
                    m.done("info", None, m.partition)
                    if isinstance(m, Send)
                    else {**m, "offset": None, "outcome": "info"}
                    if isinstance(m, dict) and m.get("op") == "send"
                    else m
                    for m in value
                ]
            # Its owner may have completed it in the meantime.
            with contextlib.suppress(RuntimeError):
                self.complete("info", process, f, value, reason)
        return len(pending)

    def close(self) -> None:
        self._closing.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join(10)
        self.flush()
        with self._io, self._lock:
            if not self._fh.closed:
                self._fh.close()


def _line(op: Op) -> str:
    try:
        return op.to_json() + "\n"
    except (TypeError, ValueError) as e:
        # Encoded off the caller's thread, so a value outside the format cannot raise
        # where it was recorded; its line still keeps the op, with the value as text.
        bad = dataclasses.replace(op, value=repr(op.value), error=f"unencodable value: {e}")
        return bad.to_json() + "\n"


@dataclass(frozen=True)
class ResumePoint:
    """Where an interrupted history ends: what a writer appending to it continues from."""

    next_index: int
    last_time: int
    open_ops: dict[Process, tuple[str, Any]]  # invokes nobody completed, by process
    max_process: int  # the highest numeric process id (-1 if none)
    cut_line: int | None  # 1-based number of a last line cut off mid-write
    ends_mid_line: bool  # the file does not end with a newline


def _resume_point(path: Path) -> ResumePoint:
    if not path.is_file():
        raise TrialError(f"{path} not found", "point at the run directory of an interrupted run")
    next_index, last_time, max_process = 0, 0, -1
    open_ops: dict[Process, tuple[str, Any]] = {}
    cut: int | None = None
    raw = b"\n"
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                d = json.loads(raw)
                op = Op.from_dict(d)
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
                if raw.endswith(b"\n"):
                    # Not ours to repair or drop: the analysis counts it as damaged.
                    continue
                cut = n
                continue
            next_index = max(next_index, op.index + 1)
            last_time = max(last_time, op.time)
            if isinstance(op.process, int):
                max_process = max(max_process, op.process)
            if op.type == "invoke":
                open_ops[op.process] = (op.f, d.get("value"))
            else:
                open_ops.pop(op.process, None)
    return ResumePoint(next_index, last_time, open_ops, max_process, cut, not raw.endswith(b"\n"))


@dataclass(frozen=True)
class LoadedHistory:
    ops: tuple[Op, ...]
    truncated_line: int | None  # 1-based line number of a cut-off last line, if any


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        yield from enumerate(fh, start=1)


def read_history(path: Path) -> LoadedHistory:
    """Parse a history; only the very last line may be damaged (a crash mid-write)."""
    if not path.is_file():
        raise TrialError(f"{path} not found", "point at a run directory with a history.jsonl")
    ops: list[Op] = []
    bad: int | None = None
    lines = list(iter_lines(path))
    for n, line in lines:
        if not line.strip():
            continue
        try:
            ops.append(Op.from_dict(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError):
            if n != len(lines):
                raise TrialError(
                    f"{path} line {n} is not a history op",
                    "only the last line may be cut off by a crash; restore the file",
                ) from None
            bad = n
    return LoadedHistory(tuple(ops), bad)
