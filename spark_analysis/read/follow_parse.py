"""The native parse of a history that is still being written: the columnar form made
as the run goes, so that less of the parse is left for after the run.

`kafka-trial run` starts a follower as its final heal begins. A child process (its
own interpreter: the run's clients hold this one's GIL) parses history.jsonl's
complete lines as they are appended, through the same parser as native_parse's
`to_parquet`, into one Parquet file. When the analysis wants the rows it tells the
child the history is final; the child parses what is left and reports the rows, the
bytes it parsed and their SHA-256. The rows are used only if those bytes are exactly
history.jsonl as it is then (columnar.prepare hashes the file): the JSONL stays the
source of truth, and anything else means the ordinary parse.

The child stops when its stdin closes without "final" (the run died, or nobody
wanted the rows), and removes its file.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_trial.spark_analysis.read.native_parse import DECLINES, RowWriter

_READ = 1 << 20
_IDLE_S = 0.2  # how often a follower that caught up looks for more


@dataclass(frozen=True)
class Followed:
    """What a follower parsed: `rows` is None if it declined the history."""

    rows: int | None
    size: int  # bytes of history.jsonl parsed
    sha256: str  # of those bytes
    out: Path  # the Parquet file (absent if declined)
    parse_s: float  # the child's CPU time


class Follower:
    """The parent's handle on one follower process."""

    def __init__(self, history: Path, out: Path) -> None:
        self.history = history
        self.out = out
        # Not `-m`: that would import this module twice, once with its package.
        start = f"import sys; from {__name__} import main; main(sys.argv[1:])"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", start, str(history), str(out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def finish(self, timeout_s: float) -> Followed | None:
        """Tell the follower the history is final and take its result; None if it
        failed or did not finish in time (its file is then removed)."""
        proc = self._proc
        try:
            # A follower that declined has exited: communicate ignores the broken pipe.
            out, _ = proc.communicate(b"final\n", timeout=timeout_s)
            got = json.loads(out.decode().strip().splitlines()[-1])
            return Followed(got["rows"], got["size"], got["sha256"], self.out, got["cpu_s"])
        except (OSError, ValueError, IndexError, KeyError, subprocess.TimeoutExpired):
            self.abandon()
            return None

    def abandon(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self.out.unlink(missing_ok=True)


def _final_asked(timeout_s: float) -> bool | None:
    """True once the parent said "final", None if its pipe closed without it (stop),
    False if nothing came within timeout_s."""
    ready, _, _ = select.select([sys.stdin.buffer], [], [], timeout_s)
    if not ready:
        return False
    line = sys.stdin.buffer.readline()
    return True if line.strip() == b"final" else None


def follow(
    history: Path, out: Path, final_asked: Callable[[float], bool | None] = _final_asked
) -> dict[str, object]:
    """Parse history's complete lines as they come until `final_asked` says it is
    final, then the rest, the last line even without its newline."""
    t0 = time.process_time()
    digest = hashlib.sha256()
    size = 0
    w = RowWriter(out)
    pending = b""
    final = False
    done = False
    try:
        with history.open("rb") as fh:
            while True:
                chunk = fh.read(_READ)
                if chunk:
                    data = pending + chunk
                    cut = data.rfind(b"\n") + 1
                    pending = data[cut:]
                    for raw in data[:cut].split(b"\n")[:-1]:
                        w.line(raw)
                    digest.update(data[:cut])
                    size += cut
                    continue
                if final:
                    break
                asked = final_asked(_IDLE_S)
                if asked is None:
                    return {"stopped": True}
                final = asked  # then read to the end once more
        if pending:
            w.line(pending)
            digest.update(pending)
            size += len(pending)
        rows: int | None = w.close()
        done = True
    except DECLINES:
        rows = None
    finally:
        if not done:  # declined, stopped, or killed by a signal: no file left behind
            w.discard()
    return {
        "rows": rows,
        "size": size,
        "sha256": digest.hexdigest(),
        "cpu_s": round(time.process_time() - t0, 3),
    }


def file_sha256(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_READ):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> None:
    """The follower process: HISTORY OUT; its result is its last line of output."""
    os.nice(5)  # the run's drain and brokers first: this uses the CPU they leave
    # Ctrl-C reaches the whole process group: the run heals and cleans up first, and
    # this process stops when the run's pipe to it closes. SIGTERM stops it at once.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    print(json.dumps(follow(Path(argv[0]), Path(argv[1]))), flush=True)
