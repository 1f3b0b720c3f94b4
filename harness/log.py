"""Progress lines on stderr, so stdout stays for the verdict."""

from __future__ import annotations

import sys
import time

_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)
