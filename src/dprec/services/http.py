"""What both services share on the HTTP side: errors as ``{"error": ...}`` JSON with a clear
status, and the limits on every request body.

Every refusal raises :class:`ApiError`; :func:`install_error_handlers` turns it, FastAPI's
request validation errors (422) and unknown routes (404) into the same JSON shape, and any
unexpected exception into a 500 that names no internals (the tests fuzz for those).

Bodies: :func:`install_body_limit` caps EVERY request's body, route by route (the services
state their limits: a forwarded batch ``--max-batch-mb``, a submission the protocol's
message size, anything else :data:`DEFAULT_BODY_LIMIT`). The cap is applied when the route
first reads its body, so a route authenticates from the headers before a byte of the body
is read: a declared ``Content-Length`` above the limit is refused (413) before reading, and
a chunked body is counted while it streams and refused (413) once it passes the limit; the
connection is then closed. :func:`read_body` reads a body under the same rule.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dprec.errors import DprecError
from dprec.protocol.messages import Message as WireMessage
from dprec.protocol.messages import MessageError

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_BODY_LIMIT", "ERROR_SCHEMA", "ApiError", "BodyLimit", "BodyRefused",
           "checked_message", "error_responses", "install_body_limit", "install_cors",
           "install_error_handlers", "read_body"]

DEFAULT_BODY_LIMIT = 64 << 10
"""Largest body of a request whose route states no limit of its own (64 KiB: the operator's
JSON, requests that carry no body)."""


class ApiError(Exception):
    """A refusal: HTTP ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"error": {"type": "string"}},
    "required": ["error"],
}

_WHY = {
    400: "Malformed request: body, headers or message bytes",
    401: "Missing or wrong credential",
    404: "No such resource (yet)",
    409: "Conflict with the protocol state: wrong round, replay, duplicate, finished",
    411: "Length required",
    413: "Body larger than the limit (checked before reading it all)",
    422: "Well-formed but not acceptable: wrong message type, values out of range",
    429: "Rate limit: retry after the Retry-After header's seconds",
    503: "A service this one depends on is unreachable; retry",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error statuses."""
    return {s: {"description": _WHY[s],
                "content": {"application/json": {"schema": ERROR_SCHEMA}}} for s in statuses}


def _json(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as ``{"error": ...}`` with its status."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return _json(exc.status, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for e in exc.errors()[:5]:
            where = ".".join(str(x) for x in e.get("loc", ()))
            parts.append(f"{where}: {e.get('msg', 'invalid')}")
        return _json(422, "invalid request: " + "; ".join(parts))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _json(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected %s on %s %s", type(exc).__name__, request.method,
                  request.url.path, exc_info=exc)
        return _json(500, "internal error")


class BodyRefused(StarletteHTTPException):
    """A body over its route's limit (413) or with a malformed ``Content-Length`` (400),
    answered with ``Connection: close`` (the rest of the body is not read)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message, headers={"Connection": "close"})


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            if not text.isdigit():
                raise BodyRefused(400, f"Content-Length must be a non-negative integer, got "
                                       f"{text[:40]!r}")
            return int(text)
    return None


class BodyLimit:
    """ASGI middleware: the body of every request is capped at ``limit_of(method, path)``
    bytes, checked when the route first reads it (see the module docstring)."""

    def __init__(self, app: ASGIApp, limit_of: Callable[[str, str], int]) -> None:
        self.app = app
        self.limit_of = limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit: int | None = None
        seen = 0

        async def capped() -> Message:
            nonlocal limit, seen
            if limit is None:
                limit = self.limit_of(scope["method"], scope["path"])
                declared = _declared_length(scope["headers"])
                if declared is not None and declared > limit:
                    raise BodyRefused(413, f"the body must be <= {limit} bytes on this "
                                           f"route; Content-Length says {declared}")
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyRefused(413, f"the body must be <= {limit} bytes on this route")
            return message

        await self.app(scope, capped, send)


def install_body_limit(app: FastAPI, limit_of: Callable[[str, str], int]) -> None:
    """Cap every request body of ``app`` (:class:`BodyLimit`)."""
    app.add_middleware(BodyLimit, limit_of=limit_of)  # type: ignore[arg-type]


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) one over ``limit`` bytes before reading it all.

    A declared ``Content-Length`` is checked first; the stream is read with a running cap
    either way (a chunked body has no length to check). A client that hangs up (or is cut
    off by the server's body timeout) mid-body is a 400.
    """
    declared = _declared_length(request.scope["headers"])
    if declared is not None and declared > limit:
        raise BodyRefused(413, f"the body must be <= {limit} bytes on this route; "
                               f"Content-Length says {declared}")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyRefused(413, f"the body must be <= {limit} bytes on this route")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(400, "the client disconnected before sending the whole body") from None
    return b"".join(chunks)


def checked_message(body: bytes, what: str, check: Callable[[WireMessage], None]) -> WireMessage:
    """The message ``body`` carries, once ``check`` accepts it: :class:`ApiError` 400
    ``malformed <what>`` if it does not decode, 422 ``<what> refused`` if ``check`` raises
    :class:`MessageError` (a peer's bytes are hostile until both pass)."""
    try:
        message = WireMessage.from_bytes(body)
    except MessageError as e:
        raise ApiError(400, f"malformed {what}: {e}") from None
    try:
        check(message)
    except MessageError as e:
        raise ApiError(422, f"{what} refused: {e}") from None
    return message


def install_cors(app: FastAPI, origins: Sequence[str]) -> None:
    """Answer the browser pages of ``origins`` (each ``http://host:port``) with CORS headers:
    GET and POST, the headers a device sends (its token, its client id, conditional GETs),
    and the artefacts' ``ETag``/``X-Dprec-Version`` readable. Off unless origins are given
    (``dprec serve server|proxy --cors-origin``); no credentials (cookies) are ever allowed."""
    from starlette.middleware.cors import CORSMiddleware

    bad = [o for o in origins if not _is_origin(o)]
    if bad:
        raise DprecError(f"--cors-origin must be an origin like http://127.0.0.1:8080 (scheme, "
                         f"host and port, no path), got {bad[0]!r}")
    if origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(origins), allow_methods=["GET", "POST"],  # type: ignore[arg-type]
            allow_headers=["Authorization", "Content-Type", "If-None-Match", "X-Dprec-Client"],
            expose_headers=["ETag", "X-Dprec-Version", "Retry-After"], allow_credentials=False,
            max_age=600)


def _is_origin(text: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname) and port is not None
            and parts.path == "" and not parts.query and not parts.fragment)
