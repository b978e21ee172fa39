"""Limits of the services: rate limits (a token bucket per key; the proxy keys them by
remote address) and the size of a forwarded batch (what the server's batch limit is
checked against)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from dprec.errors import check_real
from dprec.systems.deployable import ProtocolInfo

__all__ = ["RateLimiter", "TokenBucket", "batch_bytes"]


def batch_bytes(info: ProtocolInfo, senders: int) -> int:
    """Bytes of a forwarded batch of ``senders`` whole submissions (the system's
    :meth:`~dprec.protocol.deployment.Deployment.batch_bytes`: FMF-LDP k reports each, DPLCF
    one packed row of N bits each)."""
    return info.batch_bytes(senders)


class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` per second; a request takes one."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        check_real("rate", rate, low=0, low_open=True)
        check_real("burst", burst, low=1)
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
