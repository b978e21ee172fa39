"""Rate limits: a token bucket per key (the proxy keys them by remote address)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from dprec.errors import DprecError

__all__ = ["RateLimiter", "TokenBucket"]


class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` per second; a request takes one."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        if not rate > 0 or not burst >= 1:
            raise DprecError(f"rate must be > 0 and burst >= 1, got {rate}, {burst}")
        self.rate = float(rate)
        self.burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def take(self, cost: float = 1.0) -> float:
        """0.0 if granted, else the seconds until ``cost`` tokens will be there."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= cost:
            self._tokens -= cost
            return 0.0
        return (cost - self._tokens) / self.rate


class RateLimiter:
    """One :class:`TokenBucket` per key, at most ``max_keys`` (least recently used dropped)."""

    def __init__(self, rate: float, burst: float, max_keys: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        TokenBucket(rate, burst, clock)  # validates
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def take(self, key: str, cost: float = 1.0) -> float:
        """0.0 if ``key`` may go on, else the seconds to wait."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.burst, self._clock)
            self._buckets[key] = bucket
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(cost)
