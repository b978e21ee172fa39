"""The device's side of the HTTP API: fetch artefacts conditionally, submit via the proxy.

Needs only httpx (``pip install 'dprec[client]'``). One :class:`httpx.Client` per service
keeps its connection alive across requests (a simulated population submits through one
connection, one request per client).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from dprec.errors import DprecError
from dprec.protocol.deployed import ProtocolInfo

__all__ = ["Artefact", "ProxyAPI", "ServerAPI", "ServiceError", "Unreachable", "keepalive_client",
           "retrying"]

T = TypeVar("T")


class ServiceError(DprecError):
    """A service refused a request: ``status`` and its ``{"error": ...}`` message."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Worth retrying: rate limited or a service unreachable behind the one asked."""
        return self.status in (429, 502, 503, 504)


class Unreachable(DprecError):
    """No answer: connection refused or reset, timeout, or a 5xx without a message."""


def keepalive_client(url: str, timeout: float = 60.0, **kwargs: Any) -> httpx.Client:
    """An httpx client for ``url`` that keeps its connection and sends small requests at
    once (TCP_NODELAY: no ~40 ms wait for a delayed ACK per request)."""
    transport = httpx.HTTPTransport(
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.Client(base_url=url, timeout=timeout, transport=transport, **kwargs)


def _raise_for(r: httpx.Response) -> None:
    if r.status_code < 400:
        return
    try:
        message = str(r.json().get("error", r.text))
    except ValueError:
        message = r.text[:200]
    if r.status_code >= 500 and r.status_code not in (502, 503, 504):
        raise Unreachable(f"{r.status_code}: {message}")
    after = r.headers.get("Retry-After")
    raise ServiceError(r.status_code, message,
                       float(after) if after and after.isdigit() else None)


def _call(fn: Callable[[], httpx.Response]) -> httpx.Response:
    try:
        r = fn()
    except httpx.HTTPError as e:
        raise Unreachable(f"{type(e).__name__}: {e}") from None
    _raise_for(r)
    return r


def retrying(fn: Callable[[], T], deadline_s: float = 60.0) -> T:
    """``fn()``, retried with backoff while the service is unreachable or asks to wait
    (429/502/503/504), for up to ``deadline_s`` seconds; other refusals raise at once."""
    end = time.monotonic() + deadline_s
    delay = 0.05
    while True:
        try:
            return fn()
        except Unreachable:
            if time.monotonic() > end:
                raise
        except ServiceError as e:
            if not e.transient or time.monotonic() > end:
                raise
            if e.retry_after:
                delay = max(delay, e.retry_after)
        time.sleep(delay)
        delay = min(1.0, delay * 2)


@dataclass(frozen=True)
class Artefact:
    """A fetched artefact: its bytes, version and ETag."""

    data: bytes
    version: int
    etag: str


class ServerAPI:
    """The server's public endpoints, with an ETag cache for artefacts."""

    def __init__(self, url: str, client: httpx.Client | None = None, timeout: float = 60.0
                 ) -> None:
        self.url = url.rstrip("/")
        self.client = client or keepalive_client(self.url, timeout)
        self._cache: dict[str, Artefact] = {}
        self.not_modified = 0
        """Conditional fetches answered 304 (counter)."""

    def protocol(self) -> ProtocolInfo:
        doc = _call(lambda: self.client.get("/v1/protocol")).json()
        return ProtocolInfo.from_json(doc)

    def protocol_doc(self) -> dict[str, Any]:
        return _call(lambda: self.client.get("/v1/protocol")).json()

    def round(self) -> dict[str, Any]:
        return _call(lambda: self.client.get("/v1/round")).json()

    def artefact(self, name: str) -> Artefact:
        """Artefact ``name``, fetched only if it changed since the cached copy (ETag)."""
        cached = self._cache.get(name)
        headers = {"If-None-Match": cached.etag} if cached else {}
        r = _call(lambda: self.client.get(f"/v1/artefacts/{name}", headers=headers))
        if r.status_code == 304 and cached is not None:
            self.not_modified += 1
            return cached
        art = Artefact(r.content, int(r.headers["X-Dprec-Version"]), r.headers["ETag"])
        self._cache[name] = art
        return art

    def cached(self, name: str) -> Artefact | None:
        return self._cache.get(name)

    def close(self) -> None:
        self.client.close()


class ProxyAPI:
    """The proxy's client endpoint: one message per client and round."""

    def __init__(self, url: str, client: httpx.Client | None = None, timeout: float = 60.0
                 ) -> None:
        self.url = url.rstrip("/")
        self.client = client or keepalive_client(self.url, timeout)

    def round(self) -> dict[str, Any]:
        return _call(lambda: self.client.get("/v1/round")).json()

    def submit(self, round: int, client_id: int, token: str, body: bytes) -> dict[str, Any]:
        """Submit ``body`` (one client's message) for ``round``; :class:`ServiceError` on a
        refusal (409 for a second submission in the round), :class:`Unreachable` if no
        answer came (then the submission may or may not have been accepted: send the same
        bytes again, and read a 409 on that retry as accepted)."""
        headers = {"Authorization": f"Bearer {token}", "X-Dprec-Client": str(int(client_id)),
                   "Content-Type": "application/octet-stream"}
        r = _call(lambda: self.client.post(f"/v1/rounds/{round}/reports", content=body,
                                           headers=headers))
        return r.json()

    def close(self) -> None:
        self.client.close()
