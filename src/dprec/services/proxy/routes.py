"""The proxy's routes, one function per group: liveness and the open round
(:func:`install_round_routes`), the client's (:func:`install_client_routes`: submit, its own
secret) and the operator's (:func:`install_operator_routes`: the protocol's secret, close).
The secure-sum outcome route is :mod:`.secure_sum_routes`."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse

from dprec.errors import DprecError
from dprec.protocol.deployment import SecretNotReady
from dprec.services.http import DEFAULT_BODY_LIMIT, ApiError, error_responses, read_body
from dprec.services.proxy.secure_sum_routes import ROUND
from dprec.services.proxy.state import ProxyState, published_threshold

__all__ = ["BINARY_BODY", "install_client_routes", "install_operator_routes",
           "install_round_routes", "describe_round"]

BINARY_BODY = {"requestBody": {"required": True, "content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}
AUTHORIZATION = Annotated[str | None, Header()]
CLIENT = Annotated[str | None, Header(max_length=32)]


async def describe_round(state: ProxyState) -> dict[str, Any]:
    """``GET /v1/round``: the open round as the proxy sees it (what it accepts, why not,
    its release rule, the closed rounds' outcomes and what it publishes to clients)."""
    info = await state.ensure_synced()
    await state.refresh()
    settings, problem = state.settings, state.problem()
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


def install_round_routes(app: FastAPI, state: ProxyState) -> None:
    """``GET /healthz`` and ``GET /v1/round``."""

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/round", summary="The open round as the proxy sees it",
             responses=error_responses(503))
    async def round_state() -> dict[str, Any]:
        return await describe_round(state)


def install_client_routes(app: FastAPI, state: ProxyState) -> None:
    """``POST /v1/rounds/{round}/reports`` (one client's message; 202 once it is held on
    disk) and ``GET /v1/client/secret``, both behind the rate limit and the client token."""

    @app.post("/v1/rounds/{round}/reports", summary="Submit one client's message",
              status_code=202, openapi_extra=BINARY_BODY,
              responses=error_responses(400, 401, 409, 413, 422, 429, 503))
    async def submit(round: ROUND, request: Request, authorization: AUTHORIZATION = None,
                     x_dprec_client: CLIENT = None) -> JSONResponse:
        state.rate_limit(request)
        client_id = state.authenticate_client(authorization, x_dprec_client)
        return JSONResponse(await state.submit(round, client_id, request), status_code=202)

    @app.get("/v1/client/secret", summary="The authenticated client's own secret of the protocol",
             responses=error_responses(401, 409, 429, 503))
    async def client_secret(request: Request, authorization: AUTHORIZATION = None,
                            x_dprec_client: CLIENT = None) -> dict[str, Any]:
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


async def adopt_operator_secret(state: ProxyState, request: Request) -> dict[str, Any]:
    """``POST /v1/secret`` after the operator's credential: the protocol's secret part
    adopts the operator's JSON object (409 if it takes none or refuses it)."""
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


def install_operator_routes(app: FastAPI, state: ProxyState) -> None:
    """``POST /v1/secret`` and ``POST /v1/rounds/{round}/close``, behind the rate limit and
    the operator's credential."""

    @app.post("/v1/secret", summary="Hand the proxy the operator's secret of the protocol",
              responses=error_responses(401, 409, 413, 422, 429, 503))
    async def operator_secret(request: Request, authorization: AUTHORIZATION = None
                              ) -> dict[str, Any]:
        state.rate_limit(request)
        state.authenticate_operator(authorization)
        return await adopt_operator_secret(state, request)

    @app.post("/v1/rounds/{round}/close", summary="Close a round: forward the rest, or refuse",
              responses=error_responses(401, 409, 429, 503))
    async def close(round: ROUND, request: Request, authorization: AUTHORIZATION = None
                    ) -> dict[str, Any]:
        state.rate_limit(request)
        state.authenticate_operator(authorization)
        return await state.close(round)
