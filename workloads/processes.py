"""Process ids: a worker whose op ended `info` continues under a fresh id."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ProcessIds:
    """Hands out process ids from `counter`: pass your own (`itertools.count(n)`, or an
    iterator another history writer shares) so that two sources of ids never collide."""

    counter: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> int:
        with self._lock:
            return next(self.counter)


@dataclass
class UniqueValues:
    """Integers unique across every send of the run."""

    _counter: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, n: int) -> list[int]:
        with self._lock:
            return [next(self._counter) for _ in range(n)]
