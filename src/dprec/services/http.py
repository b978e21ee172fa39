"""What both services share on the HTTP side: errors as ``{"error": ...}`` JSON with a clear
status, and the body reader that enforces a size limit before reading everything.

Every refusal raises :class:`ApiError`; :func:`install_error_handlers` turns it, FastAPI's
request validation errors (422) and unknown routes (404) into the same JSON shape, and any
unexpected exception into a 500 that names no internals (the tests fuzz for those).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)

__all__ = ["ERROR_SCHEMA", "ApiError", "error_responses", "install_error_handlers", "read_body"]


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


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) one over ``limit`` bytes before reading it all.

    A declared ``Content-Length`` is checked first; the stream is read with a running cap
    either way (a chunked body has no length to check).
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, f"Content-Length must be a non-negative integer, got {declared!r}")
        if int(declared) > limit:
            raise ApiError(413, f"body must be <= {limit} bytes, Content-Length says {declared}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"body must be <= {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
