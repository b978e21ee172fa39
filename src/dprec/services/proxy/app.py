"""The proxy's FastAPI app: its lifespan (sync with the server, refuse settings that can
never release, the outbox pump and the round timer), body limits and routes (the
secure-sum ones: :mod:`.secure_sum_routes`)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse

import dprec
from dprec.errors import DprecError
from dprec.protocol.deployment import SecretNotReady
from dprec.services.http import (
    DEFAULT_BODY_LIMIT,
    ApiError,
    error_responses,
    install_body_limit,
    install_error_handlers,
    read_body,
)
from dprec.services.proxy.forwarding import Unreachable
from dprec.services.proxy.secure_sum_routes import ROUND, install_secure_sum_routes
from dprec.services.proxy.settings import ProxySettings
from dprec.services.proxy.state import ProxyState, published_threshold

log = logging.getLogger("dprec.services.proxy")

__all__ = ["body_limit", "create_proxy_app"]

BINARY_BODY = {"requestBody": {"required": True, "content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}
_REPORTS = re.compile(r"^/v1/rounds/[^/]+/reports$")


def body_limit(state: ProxyState, method: str, path: str) -> int:
    """The largest body the proxy reads on ``method path``: a submission ``--max-body``, else
    the protocol's message size (known by the time the route reads the body); anything else
    :data:`~dprec.services.http.DEFAULT_BODY_LIMIT`."""
    if method == "POST" and _REPORTS.match(path):
        if state.settings.max_body is not None:
            return state.settings.max_body
        if state.info is not None:
            return state.info.upload_size()
    return DEFAULT_BODY_LIMIT


def create_proxy_app(settings: ProxySettings) -> FastAPI:
    """The FastAPI app of the shuffling proxy (:class:`DprecError` if its state folder
    cannot be used)."""
    state = ProxyState(settings)
    state.check_state()

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        if state.http.is_closed:  # started again in the same process (tests)
            state.http = state._client()
        try:
            await state.sync()
        except (Unreachable, DprecError) as e:
            log.warning("not synced with the server yet (%s); will retry on requests", e)
        if state.refused_start:  # settings that can never release: refuse to start
            await state.http.aclose()
            raise DprecError(state.refused_start)
        state._tasks.append(asyncio.create_task(state.pump()))
        if settings.round_seconds:
            state._tasks.append(asyncio.create_task(state.round_timer(settings.round_seconds)))
        if state.store.outbox_count():
            state._wake.set()
        yield
        for t in state._tasks:
            t.cancel()
        state._tasks = []
        await state.http.aclose()

    app = FastAPI(title="dprec proxy", version=dprec.__version__, lifespan=lifespan,
                  description="The shuffling proxy of a dprec protocol: takes one message per "
                              "client and round, forwards shuffled batches to the server.")
    install_error_handlers(app)
    install_body_limit(app, lambda method, path: body_limit(state, method, path))
    app.state.service = state

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/round", summary="The open round as the proxy sees it",
             responses=error_responses(503))
    async def round_state() -> dict[str, Any]:
        info = await state.ensure_synced()
        await state.refresh()
        problem = state.problem()
        started = bool(state.server_state.get("started"))
        finished = state.round >= info.rounds
        return {"round": state.round, "rounds": info.rounds, "started": started,
                "finished": finished,
                "accepting": started and not finished and problem is None
                and state._closing != state.round,
                "problem": problem, "threshold": settings.threshold,
                "batch_senders": settings.batch_senders,
                "one_batch": info.deployment.one_batch,
                "release_rule": None if state.rule is None else {
                    "fewest": state.rule.fewest, "most": state.rule.most},
                "history": [{k: v for k, v in o.items() if k != "uploads"}
                            for o in state.store.outcomes()],
                "published_threshold": published_threshold(info),
                "published": None if state.secrets is None else state.secrets.published()}

    install_secure_sum_routes(app, state)

    @app.post("/v1/rounds/{round}/reports", summary="Submit one client's message",
              status_code=202, openapi_extra=BINARY_BODY,
              responses=error_responses(400, 401, 409, 413, 422, 429, 503))
    async def submit(
        round: ROUND, request: Request,
        authorization: Annotated[str | None, Header()] = None,
        x_dprec_client: Annotated[str | None, Header(max_length=32)] = None,
    ) -> JSONResponse:
        state.rate_limit(request)
        client_id = state.authenticate_client(authorization, x_dprec_client)
        return JSONResponse(await state.submit(round, client_id, request), status_code=202)

    @app.get("/v1/client/secret", summary="The authenticated client's own secret of the protocol",
             responses=error_responses(401, 409, 429, 503))
    async def client_secret(request: Request,
                            authorization: Annotated[str | None, Header()] = None,
                            x_dprec_client: Annotated[str | None, Header(max_length=32)] = None,
                            ) -> dict[str, Any]:
        state.rate_limit(request)
        client_id = state.authenticate_client(authorization, x_dprec_client)
        await state.ensure_synced()
        if state.secrets is None:
            raise ApiError(409, "this protocol's proxy hands clients no secret")
        try:
            return state.secrets.client_secret(client_id)
        except SecretNotReady as e:
            raise ApiError(503, str(e)) from None
        except DprecError as e:
            raise ApiError(409, str(e)) from None

    @app.post("/v1/secret", summary="Hand the proxy the operator's secret of the protocol",
              responses=error_responses(401, 409, 413, 422, 429, 503))
    async def operator_secret(request: Request,
                              authorization: Annotated[str | None, Header()] = None
                              ) -> dict[str, Any]:
        state.rate_limit(request)
        state.authenticate_operator(authorization)
        await state.ensure_synced()
        try:
            doc = json.loads(await read_body(request, DEFAULT_BODY_LIMIT))
        except (UnicodeDecodeError, ValueError):
            raise ApiError(422, "the body must be a JSON object") from None
        if not isinstance(doc, dict):
            raise ApiError(422, "the body must be a JSON object")
        if state.secrets is None:
            raise ApiError(409, "this protocol's proxy takes no operator secret")
        try:
            state.secrets.adopt(doc)
        except DprecError as e:
            raise ApiError(409, str(e)) from None
        return {"adopted": True}

    @app.post("/v1/rounds/{round}/close", summary="Close a round: forward the rest, or refuse",
              responses=error_responses(401, 409, 429, 503))
    async def close(round: ROUND, request: Request,
                    authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        state.rate_limit(request)
        state.authenticate_operator(authorization)
        return await state.close(round)

    return app
