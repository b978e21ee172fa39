"""The proxy's secure-sum routes: a closed round's outcome with each upload's own
(``summed``, ``refused`` with its reason, ``below_threshold``, ``lost``;
:func:`~dprec.services.rounds.upload_outcomes`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI
from fastapi import Path as PathParam

from dprec.services.http import (
    ApiError,
    error_responses,
)
from dprec.services.proxy.state import ProxyState

__all__ = ["ROUND", "install_secure_sum_routes"]

ROUND = Annotated[int, PathParam(ge=0, le=2**31 - 1, description="Round (epoch) number.")]


def install_secure_sum_routes(app: FastAPI, state: ProxyState) -> None:
    """Add the secure-sum routes to the proxy's ``app``."""

    @app.get("/v1/rounds/{round}/outcome", summary="A closed round's outcome, each upload's "
             "included", responses=error_responses(404))
    async def outcome(round: ROUND) -> dict[str, Any]:
        done = state.store.outcome(round)
        if done is None:
            raise ApiError(404, f"round {round} is not closed on this proxy")
        return done
