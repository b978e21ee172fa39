"""``dprec serve server``: a protocol's untrusted server role behind an HTTP API.

The role is the simulation's own (:mod:`dprec.services.roles`). The service adds what a
network needs: it publishes each broadcast as a versioned artefact with an ETag (clients
fetch conditionally), accepts forwarded batches only from the proxy (shared secret),
persists every accepted batch with its idempotency key before acknowledging it
(:class:`~dprec.services.store.ServerStore`), and closes rounds idempotently, so a server
killed at any moment and restarted loses no acknowledged batch and counts none twice.

Each closed round records the senders of every batch it accepted (``batch_senders``; a batch
holds whole submissions: FMF-LDP's k reports each, DPLCF's one upload each): the shuffles
this server saw, from which a run's privacy is accounted
(:class:`~dprec.services.transport.RemoteProxy`).

Closing a round here directly (the operator, bypassing the proxy) ends it for whatever the
proxy has not forwarded yet: the proxy refuses that round from then on and counts those
submissions as lost in its outcome (:mod:`dprec.services.proxy`); close rounds through the
proxy. Up front, the server refuses a batch limit below one submission and a protocol whose
role cannot fit in this machine's memory (:func:`~dprec.services.roles.role_memory`), and
publishes its batch limit with the protocol (``limits.max_batch_bytes``) for the proxy to
check its batches against.

Endpoints (see ``openapi/server.json``):

=======  ================================  =====================================================
GET      /healthz                          liveness
GET      /v1/protocol                      the public description (system, N, config, role,
                                           limits: the largest batch it takes)
GET      /v1/round                         open round, rounds, history of closed rounds
GET      /v1/artefacts/{name}              a broadcast (``If-None-Match`` -> 304)
POST     /v1/start                         start the protocol (operator; shared secret)
POST     /v1/rounds/{round}/shares         a verdict per share of a secure-sum round, no sum
                                           (proxy; :mod:`dprec.protocol.secure_sum.validity`)
POST     /v1/rounds/{round}/batches        a shuffled batch (proxy; ``Idempotency-Key``)
POST     /v1/rounds/{round}/close          aggregate the round, publish (proxy or operator)
=======  ================================  =====================================================

Bodies (:func:`~dprec.services.http.install_body_limit`, :func:`body_limit`): a batch at
most ``--max-batch-mb``, the start (its initial state) as much but at least 64 KiB, any other
route 64 KiB; every route checks its credential from the headers before it reads a byte of
its body.

Never imports client code (tests/systems/test_architecture.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse

import dprec
from dprec.data.synthetic import machine_memory
from dprec.errors import DprecError
from dprec.protocol.deployment import generator_from_json, generator_to_json
from dprec.services import roles
from dprec.services.auth import bearer, same_secret
from dprec.services.http import (
    DEFAULT_BODY_LIMIT,
    ApiError,
    checked_message,
    error_responses,
    install_body_limit,
    install_error_handlers,
    read_body,
)
from dprec.services.limits import batch_bytes
from dprec.services.store import ServerStore, StoreConflict, Sync
from dprec.systems.deployable import ProtocolInfo, check_forwarded

log = logging.getLogger(__name__)

__all__ = ["ServerSettings", "create_server_app"]

_KEY = re.compile(r"^[A-Za-z0-9_\-]{8,128}$")
ROUND = Annotated[int, PathParam(ge=0, le=2**31 - 1, description="Round (epoch) number.")]
BINARY_BODY = {"requestBody": {"required": True, "content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}
START_BODY = {"requestBody": {"required": False, "content": {"application/json": {"schema": {
    "anyOf": [{"type": "object", "properties": {
        "generator": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "initial": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "null"}]}}}}}
_BATCHES = re.compile(r"^/v1/rounds/[^/]+/(batches|shares)$")


@dataclass
class ServerSettings:
    """What ``dprec serve server`` is started with."""

    info: ProtocolInfo
    state_dir: Path
    secret: bytes
    """The proxy-server shared secret (never logged)."""
    sync: Sync = "full"
    """SQLite synchronous level: full = on disk before acknowledging (default)."""
    max_batch_bytes: int = 256 << 20
    """Largest forwarded batch accepted (checked before reading the body)."""
    autostart: bool = False
    """Start the protocol at launch with a CSPRNG (else on ``POST /v1/start``)."""
    memory: int | None = -1
    """Bytes the role may use (checked up front, :func:`~dprec.services.roles.role_memory`);
    -1: this machine's memory or cgroup limit; None: unchecked."""

    def __post_init__(self) -> None:
        smallest = batch_bytes(self.info, 1)
        b = self.max_batch_bytes
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < smallest:
            raise DprecError(f"the batch limit must be an integer >= {smallest} bytes (one "
                             f"client's submission), got {b}")
        if self.memory == -1:
            self.memory = machine_memory()
        roles.check_role_memory(self.info, self.memory)


class _Server:
    """The service's state: store, role, artefact cache."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.info = settings.info
        self.aggregator = roles.aggregator(self.info)
        self.store = ServerStore(settings.state_dir / "server.sqlite3", self.info.fingerprint(),
                                 settings.sync)
        self.description = {**self.info.to_json(),
                            "role": roles.describe_role(self._fresh_role()),
                            "limits": {"max_batch_bytes": settings.max_batch_bytes}}
        self._artefacts: dict[str, tuple[int, bytes, str]] = {}

    def _fresh_role(self) -> Any:
        return roles.server_role(self.info, self.aggregator)

    def _started_role(self) -> Any:
        """A fresh role after its start, replayed from the recorded generator (a secure
        start: from a new CSPRNG draw, the role's own randomness), so that what a role draws
        at its start (LDP-SVD's training stream) is there; :func:`roles.restore` then gives
        it what it published."""
        role = self._fresh_role()
        record = self.store.start_record()
        if record is not None:
            if record.get("initial") is not None:
                roles.initialise(self.info, role, base64.b64decode(record["initial"]))
            if record["input"] == "secure":
                from dprec.random import secure_generator
                role.start(secure_generator())
            else:
                role.start(generator_from_json(record["input"]))
        return role

    def authenticate(self, authorization: str | None) -> None:
        if authorization is None:
            raise ApiError(401, "missing credential: send Authorization: Bearer <shared secret>")
        if not same_secret(bearer(authorization), self.settings.secret):
            raise ApiError(401, "wrong credential")

    def round_state(self) -> dict[str, Any]:
        open_round = self.store.round
        return {"started": self.store.started, "round": open_round,
                "rounds": self.info.rounds, "finished": open_round >= self.info.rounds,
                "version": self.store.version, "history": self.store.outcomes()}

    def start(self, generator: dict[str, Any] | None, initial: str | None = None
              ) -> dict[str, Any]:
        """Start from ``generator`` (None: a CSPRNG) and the role's ``initial`` state (base64
        of :func:`roles.initial_state`; None: none)."""
        requested = "secure" if generator is None else generator
        if self.store.started:
            record = self.store.start_record()
            assert record is not None
            if generator is not None and record["input"] != requested:
                raise ApiError(409, "the protocol has already started from another generator")
            if initial is not None and record.get("initial") != initial:
                raise ApiError(409, "the protocol has already started from another initial "
                                    "state")
            return self._start_reply(record)
        try:
            if generator is None:
                from dprec.random import secure_generator
                rng = secure_generator()
            else:
                rng = generator_from_json(generator)
        except DprecError as e:
            raise ApiError(422, f"generator: {e}") from None
        role = self._fresh_role()
        if initial is not None:
            try:
                roles.initialise(self.info, role, base64.b64decode(initial, validate=True))
            except (DprecError, ValueError) as e:
                raise ApiError(422, f"initial: {e}") from None
        try:
            broadcast = role.start(rng)
        except DprecError as e:
            raise ApiError(422, f"the role cannot start: {e}") from None
        body = digest = None
        if broadcast is not None:
            body = roles.encode_state(self.info, role, broadcast, 0)
            digest = hashlib.sha256(body).hexdigest()
        record = {"input": requested,
                  "after": None if generator is None else generator_to_json(rng)}
        if initial is not None:
            record["initial"] = initial
        try:
            self.store.start(record, body, digest)
        except StoreConflict as e:  # pragma: no cover - one process, one event loop
            raise ApiError(409, str(e)) from None
        log.info("protocol %s started", self.info.system)
        return self._start_reply(record)

    def _start_reply(self, record: dict[str, Any]) -> dict[str, Any]:
        version = self.store.version
        return {"round": self.store.round, "generator": record["after"],
                "version": version,
                "artefacts": list(roles.published_artefacts(self.info)) if version is not None
                else []}

    def accept(self, round: int, key: str | None, body: bytes) -> tuple[int, dict[str, Any]]:
        message = checked_message(body, "batch",
                                        lambda m: check_forwarded(m, self.info))
        assert key is not None
        reports = getattr(message, "k", None)
        if reports is None:
            reports = message.n_clients  # type: ignore[attr-defined]
        if self.info.k is not None and reports % self.info.k:
            raise ApiError(422, f"batch refused: {reports} reports are not whole submissions "
                                f"of k = {self.info.k}")
        digest = hashlib.sha256(body).hexdigest()
        try:
            new = self.store.accept(key, round, digest, int(reports), body, self.info.rounds,
                                    self.info.deployment.one_batch)
        except StoreConflict as e:
            raise ApiError(409, str(e)) from None
        return (201 if new else 200), {"accepted": True, "duplicate": not new,
                                       "round": round, "reports": int(reports),
                                       "senders": self.senders_of(int(reports))}

    def senders_of(self, reports: int) -> int:
        """Senders of a batch of ``reports`` (a submission is k reports, or one DPLCF upload)."""
        return reports // self.info.k if self.info.k is not None else reports

    def check_shares(self, round: int, body: bytes) -> dict[str, Any]:
        """The role's verdict on each share of the proxy's share batch of the open round
        (a secure sum; nothing is summed or stored): ``{"verdicts": {hex id: reason or
        null}}``."""
        if not self.store.started:
            raise ApiError(409, "the protocol has not started")
        if round != self.store.round:
            raise ApiError(409, f"round {round} is not open; the open round is "
                                f"{self.store.round}")
        role = self._started_role()
        latest = self.store.broadcast()
        roles.restore(self.info, role, None if latest is None else latest[0])
        check = getattr(role, "check_shares", None)
        if check is None:
            raise ApiError(404, "this protocol's server checks no shares")
        try:
            verdicts = check(body, round)
        except DprecError as e:
            raise ApiError(422, f"share batch refused: {e}") from None
        shares = getattr(verdicts, "verifier_shares", None)
        kept = getattr(verdicts, "outputs", None)
        if kept:  # what the role sums at the release (a proved sum's output shares)
            try:
                self.store.keep(round, kept, self.info.rounds)
            except StoreConflict as e:
                raise ApiError(409, str(e)) from None
        log.info("round %d: checked %d shares, %d refused", round, len(verdicts),
                 sum(v is not None for v in verdicts.values()))
        out = {"round": round, "verdicts": {mid.hex(): why for mid, why in verdicts.items()}}
        if shares is not None:  # a validity proof's: the proxy decides from them too
            out["verifier_shares"] = {mid.hex(): vs.hex() for mid, vs in shares.items()}
        return out

    def close(self, round: int) -> dict[str, Any]:
        def compute() -> tuple[bytes | None, str | None, dict[str, Any]]:
            role = self._started_role()
            latest = self.store.broadcast()
            roles.restore(self.info, role, None if latest is None else latest[0])
            if hasattr(role, "kept_outputs"):  # what the share check kept, read by id
                role.kept_outputs = lambda ids: self.store.kept(round, ids)
            batches = (roles.parse_forwarded(b) for b in self.store.batches(round))
            try:
                new = role.aggregate(batches, round)
            except DprecError as e:  # the role refuses what the round holds (nothing kept)
                raise ApiError(409, f"round {round} is not closed: the server refuses its "
                                    f"batches: {e}") from None
            diag = roles.diagnostics(self.info, role)
            if new is None:
                return None, None, diag
            body = roles.encode_state(self.info, role, new, round + 1)
            return body, hashlib.sha256(body).hexdigest(), diag

        try:
            outcome = self.store.close(round, self.info.rounds, compute, self.senders_of)
        except StoreConflict as e:
            raise ApiError(409, str(e)) from None
        log.info("round %d closed: updated=%s, %d reports in %d batches", round,
                 outcome.updated, outcome.reports, outcome.batches)
        nxt = round + 1
        return {**outcome.to_json(), "next_round": nxt, "finished": nxt >= self.info.rounds}

    def artefact(self, name: str) -> tuple[int, bytes, str]:
        if name not in roles.published_artefacts(self.info):
            raise ApiError(404, f"no artefact {name!r}; this protocol publishes "
                                f"{', '.join(roles.published_artefacts(self.info))}")
        version = self.store.version
        if version is None:
            raise ApiError(404, f"artefact {name!r} is not published yet")
        cached = self._artefacts.get(name)
        if cached is not None and cached[0] == version:
            return cached
        stored = self.store.broadcast(version)
        assert stored is not None
        data = roles.artefact_bytes(self.info, name, stored[0])
        etag = f'"{name}.v{version}.{hashlib.sha256(data).hexdigest()[:20]}"'
        self._artefacts[name] = (version, data, etag)
        return version, data, etag


def body_limit(settings: ServerSettings, method: str, path: str) -> int:
    """The largest body the server reads on ``method path``: a forwarded batch (or a
    secure-sum round's shares) ``max_batch_bytes``, the start (its generator and initial
    state) as much but at least :data:`~dprec.services.http.DEFAULT_BODY_LIMIT`, anything
    else that default."""
    if method == "POST" and _BATCHES.match(path):
        return settings.max_batch_bytes
    if method == "POST" and path == "/v1/start":
        return max(settings.max_batch_bytes, DEFAULT_BODY_LIMIT)
    return DEFAULT_BODY_LIMIT


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """A JSON body that must be an object (or empty, or null)."""
    if not raw.strip():
        return None
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise ApiError(400, "the body must be JSON") from None
    if doc is not None and not isinstance(doc, dict):
        raise ApiError(422, "the body must be a JSON object or null")
    return doc


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    tags = [t.strip() for t in header.split(",")]
    return "*" in tags or etag in tags or f"W/{etag}" in tags


def create_server_app(settings: ServerSettings) -> FastAPI:
    """The FastAPI app of the server service (one protocol, one state directory)."""
    state = _Server(settings)
    if settings.autostart and not state.store.started:
        try:
            state.start(None)
        except ApiError as e:
            raise DprecError(f"--autostart: {e.message}") from None

    app = FastAPI(title="dprec server", version=dprec.__version__,
                  description="The server role of a deployable dprec protocol (`dprec serve "
                              "server --help` lists the systems; GET /v1/protocol says "
                              "whether the role is a trusted aggregator): publishes "
                              "artefacts, accepts the proxy's batches.")
    install_error_handlers(app)
    install_body_limit(app, lambda method, path: body_limit(settings, method, path))
    app.state.service = state
    _public_routes(app, state)
    _authenticated_routes(app, state, settings)
    return app


def _public_routes(app: FastAPI, state: _Server) -> None:
    """The routes anyone may read: liveness, the protocol, the rounds, the artefacts."""

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/protocol", summary="The protocol's public description")
    async def protocol() -> dict[str, Any]:
        return state.description

    @app.get("/v1/round", summary="Open round and the history of closed rounds")
    async def round_state() -> dict[str, Any]:
        return state.round_state()

    @app.get("/v1/artefacts/{name}", summary="A published artefact (conditional GET)",
             response_class=Response,
             responses={200: {"description": "The artefact's message bytes",
                              "content": {"application/octet-stream": {
                                  "schema": {"type": "string", "format": "binary"}}}},
                        304: {"description": "Not modified (If-None-Match matched)"},
                        **error_responses(404)})
    async def artefact(name: Annotated[str, PathParam(max_length=64)],
                       if_none_match: Annotated[str | None, Header()] = None) -> Response:
        version, data, etag = state.artefact(name)
        headers = {"ETag": etag, "X-Dprec-Version": str(version), "Cache-Control": "no-cache"}
        if _etag_matches(if_none_match, etag):
            return Response(status_code=304, headers=headers)
        return Response(data, media_type="application/octet-stream", headers=headers)


def _authenticated_routes(app: FastAPI, state: _Server, settings: ServerSettings) -> None:
    """The routes that need the shared secret: the operator's start, the proxy's batches
    and shares, and closing a round (the proxy's or the operator's)."""
    auth_errors = error_responses(401)

    @app.post("/v1/start", summary="Start the protocol (operator)", openapi_extra=START_BODY,
              responses={**auth_errors, **error_responses(400, 409, 413, 422)})
    async def start(
        request: Request,
        authorization: Annotated[str | None, Header()] = None,
    ) -> dict[str, Any]:
        state.authenticate(authorization)  # from the headers, before a byte of the body
        body = _json_object(await read_body(request, body_limit(settings, "POST", "/v1/start")))
        generator = (body or {}).get("generator")
        if generator is not None and not isinstance(generator, dict):
            raise ApiError(422, "generator must be an object or null")
        initial = (body or {}).get("initial")
        if initial is not None and not isinstance(initial, str):
            raise ApiError(422, "initial must be a base64 string or null")
        return state.start(generator, initial)

    @app.post("/v1/rounds/{round}/batches", summary="Accept a shuffled batch (proxy)",
              status_code=201, openapi_extra=BINARY_BODY,
              responses={200: {"description": "Duplicate of an accepted batch (same key)"},
                         **auth_errors, **error_responses(400, 409, 413, 422)})
    async def batches(
        round: ROUND, request: Request,
        authorization: Annotated[str | None, Header()] = None,
        idempotency_key: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        state.authenticate(authorization)
        if idempotency_key is None or not _KEY.match(idempotency_key):
            raise ApiError(400, "an Idempotency-Key header of 8-128 characters [A-Za-z0-9_-] "
                                "is required")
        body = await read_body(request, settings.max_batch_bytes)
        status, doc = state.accept(round, idempotency_key, body)
        return JSONResponse(doc, status_code=status)

    @app.post("/v1/rounds/{round}/shares", summary="Check each share of a secure-sum round "
              "(proxy)", openapi_extra=BINARY_BODY,
              responses={**auth_errors, **error_responses(404, 409, 413, 422)})
    async def shares(round: ROUND, request: Request,
                     authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        state.authenticate(authorization)
        body = await read_body(request, settings.max_batch_bytes)
        return state.check_shares(round, body)

    @app.post("/v1/rounds/{round}/close", summary="Close a round: aggregate and publish",
              responses={**auth_errors, **error_responses(409)})
    async def close(round: ROUND,
                    authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        state.authenticate(authorization)
        return state.close(round)
