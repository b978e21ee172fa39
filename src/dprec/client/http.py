"""The device's side of the HTTP API: fetch artefacts conditionally, submit via the proxy.

Needs only httpx (``pip install 'dprec[client]'``). One :class:`httpx.Client` per service
keeps its connection alive across requests (a simulated population submits through one
connection, one request per client).

The services are untrusted, so every reply is read as hostile: bodies are streamed with a
cap (JSON :data:`MAX_JSON_BYTES`, artefacts their exact expected size when the caller knows
it, else :data:`MAX_ARTEFACT_BYTES`), a declared ``Content-Length`` above the cap or unequal
to the expected size is refused before a byte of the body is read, compressed bodies are
refused (the SDK asks for ``identity``), and a reply that is not the JSON object, header or
size it must be raises :class:`~dprec.client.errors.BadReply` naming the endpoint.

Every exchange (request sent, whole reply read) also has a TOTAL deadline
(:data:`EXCHANGE_DEADLINE`, ``deadline=`` on :class:`ServerAPI` / :class:`ProxyAPI`), not
only httpx's per-read timeouts, which a service dripping one byte per read never trips (one
byte every 20 s kept a device blocked for over 300 s, issue 31 §4): the connections of
:func:`keepalive_client` give every socket operation at most the time the exchange has
left, and the body is read against it; past it, :class:`Unreachable`.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import httpcore
import httpx

from dprec.client.errors import BadReply
from dprec.errors import DprecError
from dprec.systems.deployable import ProtocolInfo

__all__ = ["EXCHANGE_DEADLINE", "MAX_ARTEFACT_BYTES", "MAX_JSON_BYTES", "Artefact", "ProxyAPI",
           "Reply", "ServerAPI", "ServiceError", "Unreachable", "keepalive_client", "retrying"]

MAX_JSON_BYTES = 8 << 20
"""Largest JSON reply read (a round's history included)."""
MAX_ARTEFACT_BYTES = 1 << 30
"""Largest artefact read when the caller does not know its exact size."""
_MAX_ERROR_BYTES = 64 << 10
"""Bytes of an error reply read for its message (the rest is dropped)."""
_MAX_ETAG = 256
EXCHANGE_DEADLINE = 120.0
"""Seconds one exchange may take in all, connection, request and whole reply (default)."""
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("dprec_exchange_deadline",
                                                               default=None)
"""(monotonic end, seconds in all) of the exchange in progress in this context."""

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


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to what the exchange in progress has left; ``expired`` if none."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline[0] - time.monotonic()
    if left <= 0:
        raise expired(f"no complete reply within the exchange's deadline of {deadline[1]:g} s")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose reads and writes wait at most what the exchange has left."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(
            ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's backend, its connections bounded by the exchange's deadline."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._backend.connect_tcp(
            host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
            socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._backend.connect_unix_socket(
            path, _left(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def keepalive_client(url: str, timeout: float = 60.0, **kwargs: Any) -> httpx.Client:
    """An httpx client for ``url`` that keeps its connection and sends small requests at
    once (TCP_NODELAY: no ~40 ms wait for a delayed ACK per request); its socket operations
    honour the deadline of the exchange in progress (:func:`_fetch`)."""
    transport = httpx.HTTPTransport(
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    pool = transport._pool  # httpx 0.28's httpcore pool (httpx is pinned in the extras)
    pool._network_backend = _DeadlineBackend(pool._network_backend)  # type: ignore[union-attr]
    return httpx.Client(base_url=url, timeout=timeout, transport=transport, **kwargs)


def _error_message(body: bytes) -> str:
    """The ``{"error": ...}`` message of an error body, else its first 200 characters."""
    text = body.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except ValueError:
        return text[:200]
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return doc["error"][:2000]
    return text[:200]


def _refuse(status: int, message: str, retry_after: str | None) -> None:
    if status >= 500 and status not in (502, 503, 504):
        raise Unreachable(f"{status}: {message}")
    after = retry_after.strip() if retry_after else ""
    raise ServiceError(status, message, float(after) if after.isdigit() else None)


def _raise_for(r: httpx.Response) -> None:
    if r.status_code < 400:
        return
    _refuse(r.status_code, _error_message(r.content), r.headers.get("Retry-After"))


def _call(fn: Callable[[], httpx.Response]) -> httpx.Response:
    try:
        r = fn()
    except httpx.HTTPError as e:
        raise Unreachable(f"{type(e).__name__}: {e}") from None
    _raise_for(r)
    return r


@dataclass(frozen=True)
class Reply:
    """A reply read under a cap: status, headers and body; ``what`` names the request."""

    status: int
    headers: httpx.Headers
    body: bytes
    what: str

    def json(self) -> dict[str, Any]:
        """The body as a JSON object; :class:`BadReply` if it is anything else."""
        if not 200 <= self.status < 300:
            raise BadReply(f"{self.what}: expected a 2xx reply, got {self.status}")
        try:
            doc = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise BadReply(f"{self.what}: the reply is not JSON ({e})") from None
        if not isinstance(doc, dict):
            raise BadReply(f"{self.what}: the reply must be a JSON object, got "
                           f"{type(doc).__name__}")
        return doc


def _declared(r: httpx.Response, what: str) -> int | None:
    value = r.headers.get("Content-Length")
    if value is None:
        return None
    if not value.strip().isdigit():
        raise BadReply(f"{what}: Content-Length must be a byte count, got {value[:40]!r}")
    return int(value)


def _fetch(client: httpx.Client, method: str, path: str, *, limit: int,
           expected: int | None = None, expected_what: str = "",
           deadline: float = EXCHANGE_DEADLINE, **kwargs: Any) -> Reply:
    """Send a request and read its reply under a cap, refusing (:class:`BadReply`) a body
    declared or found larger than ``limit`` or, on a 200 with ``expected``, of any other size
    than ``expected`` (``expected_what`` says what that size is for). A refusal reads no more
    of the body and drops the connection. Error replies are read up to 64 KiB and raised as
    :class:`ServiceError` / :class:`Unreachable`. The whole exchange takes at most
    ``deadline`` seconds (:class:`Unreachable` past it)."""
    token = _DEADLINE.set((time.monotonic() + deadline, deadline))
    try:
        return _exchange(client, method, path, limit=limit, expected=expected,
                         expected_what=expected_what, **kwargs)
    finally:
        _DEADLINE.reset(token)


def _unreachable(what: str, e: Exception) -> Unreachable:
    """What a transport error means: past the exchange's deadline, that; else the error."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() >= deadline[0] - 0.01:
        return Unreachable(f"{what}: no complete reply within the exchange's deadline of "
                           f"{deadline[1]:g} s ({type(e).__name__})")
    return Unreachable(f"{type(e).__name__}: {e}")


def _exchange(client: httpx.Client, method: str, path: str, *, limit: int,
              expected: int | None, expected_what: str, **kwargs: Any) -> Reply:
    """:func:`_fetch` within the deadline set in this context."""
    what = f"{method} {path}"
    headers = {"Accept-Encoding": "identity", **kwargs.pop("headers", {})}
    request = client.build_request(method, path, headers=headers, **kwargs)
    try:
        r = client.send(request, stream=True)
    except httpx.HTTPError as e:
        raise _unreachable(what, e) from None
    try:
        failed = r.status_code >= 400
        cap = _MAX_ERROR_BYTES if failed else limit
        encoding = r.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise BadReply(f"{what}: the body is encoded ({encoding[:40]}), which was not "
                           "asked for")
        exact = expected if r.status_code == 200 else None
        declared = _declared(r, what)
        if declared is not None and not failed:
            if exact is not None and declared != exact:
                raise BadReply(f"{what}: the reply declares {declared} bytes, but "
                               f"{expected_what or 'the reply'} is {exact} bytes")
            if declared > cap:
                raise BadReply(f"{what}: the reply declares {declared} bytes, more than the "
                               f"{cap} this request accepts")
        body = bytearray()
        for chunk in r.iter_raw():
            _left(None, httpx.ReadTimeout)  # any transport: a body that drips past it
            body += chunk
            if len(body) > cap:
                if failed:
                    del body[cap:]
                    break
                raise BadReply(f"{what}: the reply is larger than the {cap} bytes this request "
                               "accepts")
    except httpx.HTTPError as e:
        raise _unreachable(what, e) from None
    finally:
        r.close()
    if failed:
        _refuse(r.status_code, _error_message(bytes(body)), r.headers.get("Retry-After"))
    if exact is not None and len(body) != exact:
        raise BadReply(f"{what}: the reply holds {len(body)} bytes, but "
                       f"{expected_what or 'the reply'} is {exact} bytes")
    return Reply(r.status_code, r.headers, bytes(body), what)


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


class _Endpoint:
    """One service's base URL and keep-alive client; every exchange under ``deadline``."""

    def __init__(self, url: str, client: httpx.Client | None = None, timeout: float = 60.0,
                 deadline: float = EXCHANGE_DEADLINE) -> None:
        self.url = url.rstrip("/")
        self.client = client or keepalive_client(self.url, timeout)
        self.deadline = deadline
        """Seconds one exchange may take in all (``timeout`` bounds each read)."""

    def round(self) -> dict[str, Any]:
        """The current round, from ``GET /v1/round``."""
        return _fetch(self.client, "GET", "/v1/round", limit=MAX_JSON_BYTES,
                      deadline=self.deadline).json()

    def close(self) -> None:
        self.client.close()


class ServerAPI(_Endpoint):
    """The server's public endpoints, with an ETag cache for artefacts."""

    def __init__(self, url: str, client: httpx.Client | None = None, timeout: float = 60.0,
                 deadline: float = EXCHANGE_DEADLINE) -> None:
        super().__init__(url, client, timeout, deadline)
        self._cache: dict[str, Artefact] = {}
        self.not_modified = 0
        """Conditional fetches answered 304 (counter)."""

    def protocol(self) -> ProtocolInfo:
        """The published description, parsed: its config decoded into the system's typed
        config (:class:`BadReply` if malformed: an unknown, missing or ill-typed field)."""
        doc = self.protocol_doc()
        try:
            return ProtocolInfo.from_json(doc)
        except BadReply:
            raise
        except DprecError as e:
            raise BadReply(f"GET /v1/protocol: {e}") from None

    def protocol_doc(self) -> dict[str, Any]:
        return _fetch(self.client, "GET", "/v1/protocol", limit=MAX_JSON_BYTES,
                      deadline=self.deadline).json()

    def artefact(self, name: str, expected: int | None = None, expected_what: str = "",
                 limit: int = MAX_ARTEFACT_BYTES) -> Artefact:
        """Artefact ``name``, fetched only if it changed since the cached copy (ETag).

        ``expected``: its exact size in bytes (what N and the config imply), checked
        against the declared ``Content-Length`` before the body is read and against the
        bytes read; else at most ``limit`` bytes are read. :class:`BadReply` otherwise.
        """
        cached = self._cache.get(name)
        if cached is not None and expected is not None and len(cached.data) != expected:
            cached = None
        headers = {"If-None-Match": cached.etag} if cached else {}
        path = f"/v1/artefacts/{name}"
        r = _fetch(self.client, "GET", path, limit=limit if expected is None else expected,
                   expected=expected, expected_what=expected_what, headers=headers,
                   deadline=self.deadline)
        if r.status == 304 and cached is not None:
            self.not_modified += 1
            return cached
        if r.status != 200:
            raise BadReply(f"{r.what}: expected 200 or 304, got {r.status}")
        version, etag = r.headers.get("X-Dprec-Version", ""), r.headers.get("ETag", "")
        if not version.strip().isdigit():
            raise BadReply(f"{r.what}: X-Dprec-Version must be a version number, got "
                           f"{version[:40]!r}")
        if not 0 < len(etag) <= _MAX_ETAG:
            raise BadReply(f"{r.what}: ETag must be 1-{_MAX_ETAG} characters, got "
                           f"{len(etag)}")
        art = Artefact(r.body, int(version), etag)
        self._cache[name] = art
        return art

    def cached(self, name: str) -> Artefact | None:
        return self._cache.get(name)


class ProxyAPI(_Endpoint):
    """The proxy's client endpoint: one message per client and round."""

    def client_secret(self, client_id: int, token: str) -> dict[str, Any]:
        """What the proxy hands the authenticated client alone (its protocol's
        :meth:`~dprec.protocol.deployment.ProxySecrets.client_secret`), as the proxy sends
        it (the caller's descriptor checks it), from ``GET /v1/client/secret``;
        :class:`ServiceError` on a refusal."""
        headers = {"Authorization": f"Bearer {token}", "X-Dprec-Client": str(int(client_id))}
        return _fetch(self.client, "GET", "/v1/client/secret", limit=MAX_JSON_BYTES,
                      headers=headers, deadline=self.deadline).json()

    def submit(self, round: int, client_id: int, token: str, body: bytes) -> dict[str, Any]:
        """Submit ``body`` (one client's message) for ``round``; :class:`ServiceError` on a
        refusal (409 for a second submission in the round), :class:`Unreachable` if no
        answer came (then the submission may or may not have been accepted: send the same
        bytes again, and read a 409 on that retry as accepted)."""
        headers = {"Authorization": f"Bearer {token}", "X-Dprec-Client": str(int(client_id)),
                   "Content-Type": "application/octet-stream"}
        return _fetch(self.client, "POST", f"/v1/rounds/{int(round)}/reports",
                      limit=MAX_JSON_BYTES, content=body, headers=headers,
                      deadline=self.deadline).json()
