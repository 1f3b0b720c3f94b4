"""Offered load as a setting: a token bucket of values per second."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# How far a client may catch up after a stall (a fault, a slow round trip, a GC):
# with 50 ms, short stalls of every process cost a default run ~20% of its rate
# (7.6k of 10k values/s measured); 0.5 s keeps it within a few percent.
_BURST_S = 0.5


@dataclass
class Pacer:
    """`take(n)` is true when n more values fit the rate; `rate` None never limits."""

    rate: float | None
    _tokens: float = 0.0
    _at: float = field(default_factory=time.monotonic)

    def _refill(self) -> None:
        now = time.monotonic()
        assert self.rate is not None
        self._tokens = min(self._tokens + (now - self._at) * self.rate, self.rate * _BURST_S)
        self._at = now

    def take(self, n: int) -> bool:
        if self.rate is None:
            return True
        self._refill()
        # A batch larger than the burst still goes out once the bucket is full.
        if self._tokens >= min(n, self.rate * _BURST_S):
            self._tokens -= n
            return True
        return False

    def wait_s(self, n: int) -> float:
        """How long until take(n) can be true."""
        if self.rate is None:
            return 0.0
        self._refill()
        need = min(n, self.rate * _BURST_S) - self._tokens
        return max(0.0, need / self.rate)
