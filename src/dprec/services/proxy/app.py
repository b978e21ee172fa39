"""The proxy's FastAPI app: its lifespan (sync with the server, refuse settings that can
never release, the outbox pump and the round timer), body limits and routes
(:mod:`.routes`; the secure-sum ones: :mod:`.secure_sum_routes`)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI

import dprec
from dprec.errors import DprecError
from dprec.services.http import DEFAULT_BODY_LIMIT, install_body_limit, install_error_handlers
from dprec.services.proxy.forwarding import Unreachable
from dprec.services.proxy.routes import (
    install_client_routes,
    install_operator_routes,
    install_round_routes,
)
from dprec.services.proxy.secure_sum_routes import install_secure_sum_routes
from dprec.services.proxy.settings import ProxySettings
from dprec.services.proxy.state import ProxyState

log = logging.getLogger("dprec.services.proxy")

__all__ = ["body_limit", "create_proxy_app", "proxy_lifespan"]

_REPORTS = re.compile(r"^/v1/rounds/[^/]+/reports$")


def body_limit(state: ProxyState, method: str, path: str) -> int:
    """The largest body the proxy reads on ``method path``: a submission ``--max-body``, else
    the protocol's message size (known by the time the route reads the body); anything else
    :data:`~dprec.services.http.DEFAULT_BODY_LIMIT`."""
    if method == "POST" and _REPORTS.match(path):
        if state.settings.max_body is not None:
            return state.settings.max_body
        if state.upload_limit is not None:
            return state.upload_limit
    return DEFAULT_BODY_LIMIT


def proxy_lifespan(state: ProxyState) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: sync with the server (an unreachable one is retried on requests),
    refuse settings that can never release, run the outbox pump and the round timer."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
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
        if state.settings.round_seconds:
            state._tasks.append(asyncio.create_task(
                state.round_timer(state.settings.round_seconds)))
        if state.store.outbox_count():
            state._wake.set()
        yield
        for t in state._tasks:
            t.cancel()
        state._tasks = []
        await state.http.aclose()

    return lifespan


def create_proxy_app(settings: ProxySettings) -> FastAPI:
    """The FastAPI app of the shuffling proxy (:class:`DprecError` if its state folder
    cannot be used)."""
    state = ProxyState(settings)
    state.check_state()
    app = FastAPI(title="dprec proxy", version=dprec.__version__,
                  lifespan=proxy_lifespan(state),
                  description="The shuffling proxy of a dprec protocol: takes one message per "
                              "client and round, forwards shuffled batches to the server.")
    install_error_handlers(app)
    install_body_limit(app, lambda method, path: body_limit(state, method, path))
    app.state.service = state
    install_round_routes(app, state)
    install_secure_sum_routes(app, state)
    install_client_routes(app, state)
    install_operator_routes(app, state)
    return app
