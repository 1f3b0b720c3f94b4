"""Outside events marked on a run's timeline: `kafka-trial mark RUN_DIR TEXT`.

In observer mode the faults come from elsewhere (a rolling upgrade, a maintenance
window, a team's own chaos tool), and only the user knows when. The command and the
run are different processes, so they meet in a file: `add_mark` appends to
RUN_DIR/marks.jsonl, and the run's `MarkWatcher` records each new line in
history.jsonl as a nemesis op, `f: "mark"`, so the outside event sits on the one
timeline the analysis and the report read (docs/history.md).

A mark is an `info` op: nobody knows what the event did. Its value's `at` is the
wall clock when the user marked it; the op's `time` is when the run recorded it
(within `poll_s`, or after the fault op in progress).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.contracts.log import log
from kafka_trial.nemesis.recorder import NemesisRecorder

MARKS = "marks.jsonl"
# Written by the watcher after its last read: a mark after it would never reach the
# history, and run.json comes only after the teardown (tens of seconds later).
MARKS_CLOSED = "marks.closed"
MAX_TEXT = 500
MARK_F = "mark"
# The info completion's `error`, as every info completion carries one.
MARK_REASON = "an outside event the user marked: what it did is not known"
# How long the last read waits for a fault op in progress before giving up on it.
_LAST_WAIT_S = 10.0


def _check_text(text: str) -> None:
    if not text.strip():
        raise TrialError(
            "the mark's text is empty",
            'say what happened, e.g. kafka-trial mark RUN_DIR "rolling restart of broker 2"',
        )
    if len(text) > MAX_TEXT:
        raise TrialError(
            f"the mark's text is {len(text)} characters long, more than {MAX_TEXT}",
            f"say it in {MAX_TEXT} characters or fewer",
        )


def _check_live(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise TrialError(f"{run_dir} is not a directory", "pass the RUN_DIR of a run that is going")
    if not (run_dir / "history.jsonl").is_file():
        raise TrialError(
            f"{run_dir} holds no history.jsonl, so no run is going there",
            "pass the RUN_DIR the running `kafka-trial run` writes to (runs/latest)",
        )
    if (run_dir / "run.json").exists():
        raise TrialError(
            f"{run_dir} has finished (run.json is written); a mark must come while the "
            "run is going",
            "mark outside events while the run is going; a finished run takes none",
        )
    if (run_dir / MARKS_CLOSED).exists():
        raise TrialError(
            f"{run_dir} is ending (its history takes no more marks); a mark must come "
            "while the run is going",
            "mark outside events while the run is going; a finished run takes none",
        )


def add_mark(run_dir: Path, text: str) -> dict[str, Any]:
    """Append {"text", "at"} to RUN_DIR/marks.jsonl for the run's MarkWatcher."""
    _check_text(text)
    _check_live(run_dir)
    mark = {"text": text, "at": round(time.time(), 3)}
    data = (json.dumps(mark) + "\n").encode()
    fd = os.open(run_dir / MARKS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        # Under the lock the watcher's last read takes: either this line is before
        # that read, or the check below sees marks.closed; never a mark left unread.
        fcntl.flock(fd, fcntl.LOCK_EX)
        _check_live(run_dir)
        # One write of the whole line: O_APPEND puts it after every other writer's.
        if os.write(fd, data) != len(data):
            raise TrialError(
                f"{run_dir / MARKS}: the mark was written only in part (is the disk full?)",
                "free space and mark again",
            )
        os.fsync(fd)
    finally:
        os.close(fd)
    return mark


def _parse(raw: bytes) -> dict[str, Any] | None:
    """The mark a line holds, or None when it is not one."""
    try:
        d = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(d, dict):
        return None
    text, at = d.get("text"), d.get("at")
    if not isinstance(text, str) or not text.strip():
        return None
    # NaN would make the history's line invalid JSON for strict readers.
    if not isinstance(at, (int, float)) or isinstance(at, bool) or not math.isfinite(at):
        return None
    return {"text": text[:MAX_TEXT], "at": at, "by": "user"}


class MarkWatcher:
    """Records the marks `add_mark` appends as nemesis ops, until `stop` is set.

    Pass the run's NemesisRecorder as `history` (a HistoryWriter is wrapped in a
    recorder of its own): process "nemesis" has one op open at a time, and the
    recorder's lock keeps a mark out of the middle of a fault op, as it keeps one
    fault out of another's."""

    def __init__(
        self,
        run_dir: Path,
        history: HistoryWriter | NemesisRecorder,
        stop: threading.Event,
        poll_s: float = 0.5,
    ) -> None:
        self.rec = history if isinstance(history, NemesisRecorder) else NemesisRecorder(history)
        self.path = run_dir / MARKS
        self.closed_path = run_dir / MARKS_CLOSED
        self.stop = stop
        self.poll_s = poll_s
        self.marks_recorded = 0
        self._offset = 0  # bytes of marks.jsonl read: whole lines only
        self._pending: list[dict[str, Any]] = []  # read, not yet in the history

    def run(self) -> None:
        while True:
            try:
                self._read(self._lines_after())
                self._record(self.poll_s)
            except OSError as e:  # a mark is not worth the run: the next poll tries again
                log(f"marks: could not read {self.path}: {e}")
            if self.stop.wait(self.poll_s):
                break
        self._last_read()

    def _last_read(self) -> None:
        """The lines written up to now, then no more: a mark just before the end counts."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._read(self._lines_after())
                self.closed_path.touch()
            finally:
                os.close(fd)
        except OSError as e:
            log(f"marks: last read of {self.path} failed: {e}")
        self._record(_LAST_WAIT_S)
        if self._pending:
            log(
                f"marks: {len(self._pending)} mark(s) could not be recorded in the history "
                f"(it was busy or closed); they stay in {self.path}"
            )

    def _lines_after(self) -> list[bytes]:
        """The whole lines after the offset; a last line without its newline is being
        written and waits for the next read."""
        if not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        end = chunk.rfind(b"\n") + 1
        self._offset += end
        return chunk[:end].splitlines()

    def _read(self, lines: list[bytes]) -> None:
        for raw in lines:
            if not raw.strip():
                continue
            mark = _parse(raw)
            if mark is None:
                log(f"marks: skipped a line of {self.path} that is not a mark: {raw[:80]!r}")
                continue
            self._pending.append(mark)

    def _record(self, wait_s: float) -> None:
        """Each pending mark as an invoke and its info completion, in the order marked.
        A fault op in progress holds the recorder's lock for as long as it acts: the
        marks wait for a later poll rather than hold this thread."""
        if not self._pending:
            return
        # The recorder's own lock (NemesisRecorder.do holds it around each op), so a
        # mark and a fault never interleave on process "nemesis".
        lock = self.rec._lock
        if not lock.acquire(timeout=wait_s):
            return
        try:
            history = self.rec.history
            while self._pending:
                value = self._pending[0]
                try:
                    history.invoke("nemesis", MARK_F, value)
                except RuntimeError as e:  # closed, or a nemesis op recorded around us
                    log(f"marks: cannot record a mark now: {e}")
                    return
                self._pending.pop(0)
                # The teardown's abandon_open may have completed it meanwhile.
                with contextlib.suppress(RuntimeError):
                    history.complete("info", "nemesis", MARK_F, value, MARK_REASON)
                self.marks_recorded += 1
                log(f"mark recorded: {value['text']}")
            # Rare and the user's word on what happened: on disk at once, like a fault.
            with contextlib.suppress(OSError, ValueError):
                history.flush()
        finally:
            lock.release()
