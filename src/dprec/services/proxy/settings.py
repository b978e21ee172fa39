"""What ``dprec serve proxy`` is started with (:class:`ProxySettings`), checked."""

from __future__ import annotations

import math
import numbers
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import httpx

from dprec.errors import DprecError
from dprec.services.auth import same_secret
from dprec.services.limits import RateLimiter
from dprec.services.store import Sync

__all__ = ["ProxySettings", "check_url"]


@dataclass
class ProxySettings:
    """What ``dprec serve proxy`` is started with."""

    server_url: str
    state_dir: Path
    secret: bytes
    """Shared secret with the server (authenticates this proxy to it)."""
    token_key: bytes
    """Key of the clients' tokens (HMAC of the client id)."""
    operator_secret: bytes | None = None
    """The operator's secret: it alone authenticates closing a round and ``POST /v1/secret``
    here. It must differ from :attr:`secret`, which the server holds: only the proxy (its
    operator or its ``--round-seconds`` timer) decides when a round is released. None: no
    operator request is taken (the timer still closes rounds)."""
    min_honest: int | None = None
    """The ``min_honest`` the operator agreed with the clients: a secure-sum server that
    publishes another is refused (None: the first value seen, pinned in the state)."""
    n_clients: int | None = None
    """The ``n_clients`` the operator agreed with the clients (as :attr:`min_honest`)."""
    threshold: int = 100
    """Fewest distinct senders forwarded together (the anonymity threshold)."""
    batch_senders: int = 1000
    """Senders per forwarded batch while a round is open (>= threshold)."""
    max_body: int | None = None
    """Largest submission in bytes (default: the protocol's message size)."""
    rate: float = 5000.0
    """Requests per second per remote address (token bucket)."""
    burst: float = 10000.0
    """Bucket size of the rate limit."""
    sync: Sync = "normal"
    """SQLite synchronous level. normal (default): an acknowledged submission survives a
    crash of the proxy process (SIGKILL included), not a power loss of the machine, which
    may lose the last ones (with their senders' tags, so those clients can send them
    again); full: fsync before every acknowledgement (~20x slower per submission)."""
    round_seconds: float | None = None
    """Close the open round every this many seconds (None: only on request)."""
    retry_for: float = 60.0
    """Seconds to keep retrying the server when closing a round (then 503)."""
    watch_seconds: float = 1.0
    """A submission first asks the server for its round when the proxy last asked longer
    ago than this (0: every submission), so a round the server closed is refused."""
    server_transport: httpx.AsyncBaseTransport | None = None
    """For tests: reach the server through this transport (e.g. in-process ASGI)."""

    def __post_init__(self) -> None:
        for name in ("threshold", "batch_senders"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {v}")
        if self.batch_senders < self.threshold:
            raise DprecError(f"batch_senders must be >= threshold ({self.threshold}), got "
                             f"{self.batch_senders}")
        if self.max_body is not None and (isinstance(self.max_body, bool)
                                          or not isinstance(self.max_body, numbers.Integral)
                                          or self.max_body < 1):
            raise DprecError(f"max_body must be an integer >= 1 (bytes), got {self.max_body}")
        check_url(self.server_url, "the server's URL")
        if self.round_seconds is not None and not (math.isfinite(self.round_seconds)
                                                   and self.round_seconds > 0):
            raise DprecError(f"round_seconds must be a finite number > 0, got "
                             f"{self.round_seconds}")
        if not (math.isfinite(self.retry_for) and self.retry_for > 0):
            raise DprecError(f"retry_for must be a finite number > 0, got {self.retry_for}")
        if not (math.isfinite(self.watch_seconds) and self.watch_seconds >= 0):
            raise DprecError(f"watch_seconds must be a finite number >= 0, got "
                             f"{self.watch_seconds}")
        RateLimiter(self.rate, self.burst)  # validates both
        if self.operator_secret is not None and same_secret(self.operator_secret, self.secret):
            raise DprecError("the operator's secret must differ from the proxy-server shared "
                             "secret: the server holds that one, and must not close rounds")
        for name in ("min_honest", "n_clients"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                  or v < 1):
                raise DprecError(f"{name} must be an integer >= 1, got {v}")


def check_url(url: str, what: str) -> str:
    """``url`` if it is ``http(s)://host[:port][/path]``, else :class:`DprecError`."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as e:
        raise DprecError(f"{what} must be http(s)://host[:port], got {url!r}: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
            or parts.fragment:
        raise DprecError(f"{what} must be http(s)://host[:port], got {url!r}")
    return url
