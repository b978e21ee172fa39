"""Connection limits of the services (issue 31 §4: about 20K half-sent requests used up the
proxy's file handles).

uvicorn times out only the idle wait between two requests (``timeout_keep_alive``, reset by
every byte that arrives) and answers 503 above ``limit_concurrency`` only once a request's
headers are complete; nothing bounds how long a request takes to arrive, and an ASGI
middleware runs too late to help (after the headers are parsed). So the services run
uvicorn's own HTTP protocol with a guard (:func:`guarded_protocol`) that adds, per
connection:

- a header deadline: a request's headers complete within ``header_timeout`` seconds of its
  first byte, or of the connection's opening for the first request (a connection that sends
  nothing is closed too), else the connection gets ``408`` and is closed; the idle wait
  between two requests is uvicorn's ``timeout_keep_alive``;
- a body deadline: the body completes within ``body_timeout`` seconds more, else the
  connection is closed (the route reading it sees a disconnect: 400);
- a connection cap: a connection beyond ``max_connections`` gets ``503`` and is closed at
  once (and uvicorn's ``limit_concurrency``, set to the same number, answers 503 to requests
  while the server is at the cap).

:func:`uvicorn_settings` gives :class:`uvicorn.Config` these, ``timeout_keep_alive`` and
h11's limit on a request's header bytes.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any

from dprec.errors import DprecError

log = logging.getLogger(__name__)

__all__ = ["ConnectionLimits", "guarded_protocol", "uvicorn_settings"]

_RESERVED_FILES = 64
"""Open files kept for the service itself (database, logs, the proxy's client)."""


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a request may take to arrive, and how many connections are served."""

    header_timeout: float = 10.0
    """Seconds from a request's first byte (the connection's opening, for its first request)
    to its complete headers."""
    body_timeout: float = 60.0
    """Seconds from complete headers to the complete body (a 256 MiB batch at 40 Mbit/s)."""
    keep_alive: int = 15
    """Seconds an idle connection is kept between requests (uvicorn's timeout_keep_alive;
    above httpx's 5 s, so a client drops an idle connection before the service does)."""
    max_connections: int = 1000
    """Open connections served at once (lowered to the open-file limit less 64 if that is
    smaller)."""
    max_header_bytes: int = 64 << 10
    """Bytes of a request's line and headers (h11; httptools has its own fixed limit)."""

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v < float("inf")):
                raise DprecError(f"{name} must be a finite number of seconds > 0, got {v}")
        for name in ("keep_alive", "max_connections", "max_header_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {v}")

    def usable_connections(self) -> int:
        """``max_connections``, or fewer if the process may not open that many files."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        usable = max(1, soft - _RESERVED_FILES)
        if usable < self.max_connections:
            log.warning("serving at most %d connections, not %d: the open-file limit is %d "
                        "(raise it with ulimit -n)", usable, self.max_connections, soft)
        return min(self.max_connections, usable)


def _reply(status: bytes, text: bytes) -> bytes:
    body = b'{"error": "' + text + b'"}'
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


_TIMED_OUT = _reply(b"408 Request Timeout", b"the request did not arrive in time")
_TOO_MANY = _reply(b"503 Service Unavailable", b"too many connections; retry later")


def guarded_protocol(base: type[asyncio.Protocol], limits: ConnectionLimits,
                     max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class ``base`` (httptools or h11) with the header and body
    deadlines and the connection cap of the module docstring."""

    class Guarded(base):  # type: ignore[valid-type, misc]
        _timer: asyncio.TimerHandle | None = None
        _watched: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_TOO_MANY)
                transport.close()
                return
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._timer is None and (self.cycle is None or self.cycle.response_complete):
                self._await_headers()  # the first bytes of the next request
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._disarm()  # idle until the next request: uvicorn's keep-alive timeout
            super().on_response_complete()

        def _arm(self, seconds: float, due: Any) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, due)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _await_headers(self) -> None:
            self._watched = self.cycle  # a new request's headers make a new cycle
            self._arm(limits.header_timeout, self._headers_due)

        def _headers_due(self) -> None:
            self._timer = None
            cycle = self.cycle
            if cycle is self._watched:
                if cycle is None or cycle.response_complete:
                    self._expire("headers", timed_out=True)
                return  # a (pipelined) request is being answered: its reply re-arms
            if cycle.more_body and not cycle.response_complete:
                self._arm(limits.body_timeout, lambda: self._body_due(cycle))

        def _body_due(self, cycle: Any) -> None:
            self._timer = None
            if self.cycle is cycle and cycle.more_body and not cycle.response_complete:
                self._expire("body", timed_out=not cycle.response_started)

        def _expire(self, part: str, timed_out: bool) -> None:
            log.debug("closing a connection: the request's %s did not arrive in time", part)
            if self.transport.is_closing():
                return
            if timed_out:
                self.transport.write(_TIMED_OUT)
            self.transport.close()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


def _uvicorn_protocol() -> type[asyncio.Protocol]:
    """The HTTP protocol uvicorn's ``http="auto"`` picks: httptools if installed, else h11."""
    try:
        import httptools  # noqa: F401
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        return HttpToolsProtocol
    except ImportError:  # pragma: no cover - the serve extra installs httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol
        return H11Protocol


def uvicorn_settings(limits: ConnectionLimits) -> dict[str, Any]:
    """Keyword arguments of :class:`uvicorn.Config` that apply ``limits``."""
    cap = limits.usable_connections()
    return {"http": guarded_protocol(_uvicorn_protocol(), limits, cap),
            "timeout_keep_alive": limits.keep_alive, "limit_concurrency": cap,
            "h11_max_incomplete_event_size": limits.max_header_bytes}
