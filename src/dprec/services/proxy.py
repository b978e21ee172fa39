"""``dprec serve proxy``: the shuffler between clients and the untrusted server.

Per submission (``POST /v1/rounds/{round}/reports``, one client message as bytes): a token
bucket per remote address (429), the client's token checked against its id (401; tokens are
HMACs of the id, :mod:`dprec.services.auth`), the open round (409), the body size before
reading it all (413), the message decoded (400) and checked against what the protocol's
client can send (422), one submission per client and round (409). What is kept is the
message without its sender's id, in a bag (:class:`~dprec.services.store.ProxyStore`);
nothing else about the request (address, headers, time) is kept or logged.

Forwarding: once the bag holds ``batch_senders + threshold`` submissions of the open round,
``batch_senders`` of them are shuffled and queued as one batch (so at least ``threshold``
stay behind); closing the round (``POST /v1/rounds/{round}/close``, operator or
``--round-seconds``) queues the rest if they number ``threshold`` or more, and drops them
otherwise (a refused round, as the simulation's shuffler refuses it). A batch is shuffled by
the simulation's own :class:`~dprec.protocol.shuffler.Shuffler` (canonical order, then a
uniform permutation) on a CSPRNG (:func:`~dprec.random.secure_generator`), sent to the server
under a random idempotency key, and deleted once the server acknowledges it. After a crash,
queued batches are sent again under the same key and the server counts each once.

What it enforced: a round's outcome states the ``threshold`` and the senders of every batch
formed (``batch_senders``; :func:`~dprec.protocol.engine.forwarded_batch_sizes` of the
round's senders), beside the server's own record of the batches it accepted. A proxy started
with a threshold below the protocol's published ``shuffle_threshold`` logs a warning.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import numpy as np
from fastapi import FastAPI, Header, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse

import dprec
from dprec.errors import DprecError
from dprec.protocol.deployed import ProtocolInfo, check_upload
from dprec.protocol.messages import (
    GradientReports,
    Message,
    MessageError,
    ObfuscatedBits,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)
from dprec.protocol.shuffler import Shuffler
from dprec.random import secure_generator
from dprec.services.auth import bearer, client_token, same_secret
from dprec.services.http import ApiError, error_responses, install_error_handlers, read_body
from dprec.services.limits import RateLimiter
from dprec.services.store import Duplicate, ProxyStore, Sync

log = logging.getLogger(__name__)

__all__ = ["ProxySettings", "create_proxy_app"]

ROUND = Annotated[int, PathParam(ge=0, le=2**31 - 1, description="Round (epoch) number.")]
BINARY_BODY = {"requestBody": {"required": True, "content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}
_I64 = (-(1 << 63), (1 << 63) - 1)


@dataclass
class ProxySettings:
    """What ``dprec serve proxy`` is started with."""

    server_url: str
    state_dir: Path
    secret: bytes
    """Shared secret with the server (also the operator's, for closing rounds)."""
    token_key: bytes
    """Key of the clients' tokens (HMAC of the client id)."""
    threshold: int = 100
    """Fewest distinct senders forwarded together (the anonymity threshold)."""
    batch_senders: int = 1000
    """Senders per forwarded batch while a round is open (>= threshold)."""
    max_body: int | None = None
    """Largest submission in bytes (default: the protocol's message size)."""
    rate: float = 5000.0
    """Requests per second per remote address (token bucket)."""
    burst: float = 10000.0
    """Bucket size of the rate limit."""
    sync: Sync = "normal"
    """SQLite synchronous level. normal (default): an acknowledged submission survives a
    crash of the proxy process (SIGKILL included), not a power loss of the machine, which
    may lose the last ones (with their senders' tags, so those clients can send them
    again); full: fsync before every acknowledgement (~20x slower per submission)."""
    round_seconds: float | None = None
    """Close the open round every this many seconds (None: only on request)."""
    retry_for: float = 60.0
    """Seconds to keep retrying the server when closing a round (then 503)."""
    server_transport: httpx.AsyncBaseTransport | None = None
    """For tests: reach the server through this transport (e.g. in-process ASGI)."""

    def __post_init__(self) -> None:
        for name in ("threshold", "batch_senders"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {v}")
        if self.batch_senders < self.threshold:
            raise DprecError(f"batch_senders must be >= threshold ({self.threshold}), got "
                             f"{self.batch_senders}")
        if self.max_body is not None and self.max_body < 1:
            raise DprecError(f"max_body must be >= 1, got {self.max_body}")


class _Unreachable(Exception):
    """The server did not answer (connection error, timeout or 5xx)."""


class _Proxy:
    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.store = ProxyStore(settings.state_dir / "proxy.sqlite3", settings.sync)
        self.limiter = RateLimiter(settings.rate, settings.burst)
        self.http = self._client()
        self.auth = {"Authorization": "Bearer " + settings.secret.decode()}
        self.info: ProtocolInfo | None = None
        self.server_state: dict[str, Any] = {}
        self._held: dict[int, int] = {}
        self._wake = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._close_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._round = int(self.store.meta("round", 0))
        self._closing: int | None = self.store.meta("closing")

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.settings.server_url.rstrip("/"),
                                 transport=self.settings.server_transport, timeout=30.0)

    # -- the server's view ------------------------------------------------------------------

    @property
    def round(self) -> int:
        """The open round (as stored; cached)."""
        return self._round

    async def _get(self, path: str) -> Any:
        try:
            r = await self.http.get(path)
        except httpx.HTTPError as e:
            raise _Unreachable(f"{type(e).__name__}") from None
        if r.status_code >= 500:
            raise _Unreachable(f"status {r.status_code}")
        r.raise_for_status()
        return r.json()

    async def sync(self) -> None:
        """Learn the protocol and the server's round; catch up if the server moved on."""
        if self.info is None:
            info = ProtocolInfo.from_json(await self._get("/v1/protocol"))
            held = self.store.meta("protocol")
            if held is None:
                self.store.set_meta("protocol", info.fingerprint())
            elif held != info.fingerprint():
                raise DprecError("the proxy's state belongs to another protocol; give it "
                                 "its own --state directory")
            self.info = info
            published = published_threshold(info)
            if published is not None and self.settings.threshold < published:
                log.warning("this proxy enforces --threshold %d, below the %d senders the "
                            "protocol publishes (shuffle_threshold): its batches may be "
                            "smaller than the protocol states", self.settings.threshold,
                            published)
        state = await self._get("/v1/round")
        self.server_state = state
        if state["started"] and state["round"] > self.round:
            mine = self.round
            done = {o["round"]: o for o in state["history"]}
            if mine in done:  # closed by us, but we died before recording it
                self.store.finish_round(mine, self._outcome(mine, done[mine]), state["round"])
            self.store.skip_to(state["round"])
            self._round = int(state["round"])
        self._held = {self.round: self.store.held(self.round)}

    async def ensure_synced(self) -> ProtocolInfo:
        if self.info is None or not self.server_state.get("started"):
            try:
                await self.sync()
            except _Unreachable as e:
                raise ApiError(503, f"the server is unreachable ({e}); retry") from None
            except DprecError as e:
                raise ApiError(503, str(e)) from None
        assert self.info is not None
        return self.info

    def _open_round(self, round: int) -> None:
        if not self.server_state.get("started"):
            raise ApiError(409, "the protocol has not started")
        assert self.info is not None
        if self.round >= self.info.rounds:
            raise ApiError(409, f"the protocol has finished ({self.info.rounds} rounds)")
        if round != self.round:
            raise ApiError(409, f"round {round} is not open; the open round is {self.round}")
        if self._closing == round:
            raise ApiError(409, f"round {round} is closing; submit in the next round")

    # -- submissions ------------------------------------------------------------------------

    def rate_limit(self, request: Request) -> None:
        host = request.client.host if request.client else "-"
        wait = self.limiter.take(host)
        if wait:
            raise ApiError(429, "rate limit exceeded; retry later",
                           {"Retry-After": str(max(1, math.ceil(wait)))})

    def authenticate_client(self, authorization: str | None, client: str | None) -> int:
        token = bearer(authorization)
        if token is None or client is None:
            raise ApiError(401, "missing credential: send X-Dprec-Client: <id> and "
                                "Authorization: Bearer <client token>")
        try:
            client_id = int(client, 10)
        except ValueError:
            raise ApiError(401, "X-Dprec-Client must be an integer client id") from None
        if not _I64[0] <= client_id <= _I64[1] or not client.strip().lstrip("-").isdigit():
            raise ApiError(401, "X-Dprec-Client must be a 64-bit integer client id")
        if not same_secret(token, client_token(self.settings.token_key, client_id).encode()):
            raise ApiError(401, "wrong client token")
        return client_id

    def _tag(self, round: int, client_id: int) -> bytes:
        msg = f"seen:{round}:{client_id}".encode()
        return hmac.new(self.settings.token_key, msg, hashlib.sha256).digest()[:16]

    async def submit(self, round: int, client_id: int, request: Request) -> dict[str, Any]:
        info = await self.ensure_synced()
        self._open_round(round)
        body = await read_body(request, self.settings.max_body or info.upload_size())
        try:
            message = Message.from_bytes(body)
        except MessageError as e:
            raise ApiError(400, f"malformed message: {e}") from None
        try:
            check_upload(message, info)
        except MessageError as e:
            raise ApiError(422, f"message refused: {e}") from None
        if isinstance(message, (GradientReports, ValueReports)):
            if message.client_id != client_id:
                raise ApiError(422, "the message's client_id is not the authenticated client")
            anonymous = _strip(message)
        else:
            anonymous = body  # an ObfuscatedBits upload names no one
        self._open_round(round)  # the round may have closed while the body was read
        try:
            self.store.hold(round, self._tag(round, client_id), anonymous)
        except Duplicate:
            raise ApiError(409, f"already submitted in round {round} (one submission per "
                                "client and round)") from None
        del anonymous, message, body
        self._held[round] = self._held.get(round, 0) + 1
        s = self.settings
        while self._held[round] >= s.batch_senders + s.threshold:
            self._held[round] -= self.store.form_batch(round, s.batch_senders, self._shuffle)
            self._wake.set()
        return {"accepted": True, "round": round}

    # -- forwarding -------------------------------------------------------------------------

    def _shuffle(self, rows: list[bytes]) -> bytes:
        """One batch of the held submissions, shuffled on a CSPRNG.

        Reports go through the simulation's :class:`Shuffler` (canonical order, then a
        uniform permutation drawn here from a fresh ChaCha20 key), uploads are sorted and
        permuted the same way. The batch depends only on the multiset of submissions.
        """
        info = self.info
        assert info is not None
        rng = secure_generator()
        if info.family == "dplcf":
            packed = np.concatenate([ObfuscatedBits.from_bytes(r).packed for r in rows])
            order = np.lexsort(packed.T[::-1]) if packed.shape[1] else np.arange(len(rows))
            packed = packed[order][rng.permutation(len(rows))]
            return ObfuscatedBits(packed, info.n_items).to_bytes()
        msgs = [Message.from_bytes(r) for r in rows]
        items = np.stack([m.items for m in msgs])  # type: ignore[attr-defined]
        factors = np.stack([m.factors for m in msgs])  # type: ignore[attr-defined]
        shuffler = Shuffler(min(self.settings.threshold, len(rows)), rng)
        ids = np.arange(len(rows))
        if isinstance(msgs[0], ShuffledReports):
            bits = np.stack([m.bits for m in msgs])  # type: ignore[attr-defined]
            shuffler.submit_batch(items, factors, bits, ids)
        else:
            values = np.stack([m.values for m in msgs])  # type: ignore[attr-defined]
            shuffler.submit_batch(items, factors, client_ids=ids, values=values)
        return shuffler.flush().to_bytes()

    async def send_outbox(self) -> None:
        """Send every queued batch once; :class:`_Unreachable` if the server does not answer."""
        async with self._send_lock:
            for key, round, senders, body in self.store.outbox():
                try:
                    r = await self.http.post(
                        f"/v1/rounds/{round}/batches", content=body,
                        headers={**self.auth, "Idempotency-Key": key,
                                 "Content-Type": "application/octet-stream"})
                except httpx.HTTPError as e:
                    raise _Unreachable(type(e).__name__) from None
                if r.status_code >= 500 or r.status_code == 429:
                    raise _Unreachable(f"status {r.status_code}")
                if r.status_code not in (200, 201):
                    log.error("the server refused a batch of %d senders in round %d (%d: %s); "
                              "dropped", senders, round, r.status_code, r.text[:200])
                self.store.delivered(key)

    async def pump(self) -> None:
        """Background: send queued batches whenever some are formed, retrying with backoff."""
        backoff = 0.1
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.send_outbox()
                backoff = 0.1
            except _Unreachable as e:
                log.warning("the server is unreachable (%s); retrying in %.1f s", e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(5.0, 2 * backoff)
                self._wake.set()

    async def _retrying(self, what: str, fn: Any) -> Any:
        deadline = asyncio.get_running_loop().time() + self.settings.retry_for
        delay = 0.05
        while True:
            try:
                return await fn()
            except _Unreachable as e:
                if asyncio.get_running_loop().time() > deadline:
                    raise ApiError(503, f"the server is unreachable ({e}) while {what}; "
                                        "retry") from None
                await asyncio.sleep(delay)
                delay = min(1.0, 2 * delay)

    def _outcome(self, round: int, server: dict[str, Any]) -> dict[str, Any]:
        forwarded = self.store.forwarded_senders(round)
        return {"round": round, "senders": self.store.senders(round),
                "forwarded_senders": forwarded, "forwarded": forwarded > 0,
                "threshold": self.settings.threshold,
                "batch_senders": self.store.forwarded_batches(round), "server": server}

    async def close(self, round: int) -> dict[str, Any]:
        async with self._close_lock:
            info = await self.ensure_synced()
            if round < self.round:
                done = self.store.outcome(round)
                if done is None:
                    raise ApiError(409, f"round {round} was closed without this proxy")
                return done
            if self._closing != round:
                self._open_round(round)
                # from here on the round takes no submissions, even across a restart
                self.store.set_meta("closing", round)
                self._closing = round
            held = self.store.held(round)
            if held >= self.settings.threshold:
                self.store.form_batch(round, None, self._shuffle)
            elif held:  # below the threshold (then nothing was forwarded before): refused
                dropped = self.store.drop_held(round)
                log.info("round %d: %d senders held, below the threshold %d: refused", round,
                         dropped, self.settings.threshold)
            self._held[round] = 0
            await self._retrying("forwarding", self.send_outbox)

            async def close_on_server() -> dict[str, Any]:
                try:
                    r = await self.http.post(f"/v1/rounds/{round}/close", headers=self.auth)
                except httpx.HTTPError as e:
                    raise _Unreachable(type(e).__name__) from None
                if r.status_code >= 500:
                    raise _Unreachable(f"status {r.status_code}")
                if r.status_code != 200:
                    raise ApiError(502, f"the server refused to close round {round}: "
                                        f"{r.text[:200]}")
                return r.json()

            server = await self._retrying("closing the round", close_on_server)
            outcome = self._outcome(round, server)
            nxt = int(server["next_round"])
            self.store.finish_round(round, outcome, nxt)
            self._round = nxt
            self._held = {nxt: 0}
            self.server_state = {**self.server_state, "round": nxt,
                                 "finished": nxt >= info.rounds}
            log.info("round %d closed: %d senders, forwarded=%s", round, outcome["senders"],
                     outcome["forwarded"])
            return outcome

    async def round_timer(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await self.ensure_synced()
                if self.server_state.get("started") and self.info is not None \
                        and self.round < self.info.rounds:
                    await self.close(self.round)
            except (ApiError, DprecError) as e:
                log.warning("could not close the round on the timer: %s", e)


def published_threshold(info: ProtocolInfo) -> int | None:
    """The anonymity threshold the protocol publishes (FMF-LDP's ``shuffle_threshold``;
    None for a protocol that states none)."""
    value = info.config.get("shuffle_threshold")
    return None if value is None else int(value)


def _strip(message: GradientReports | ValueReports) -> bytes:
    """The client's reports without its id (what the proxy holds)."""
    if isinstance(message, GradientReports):
        return ShuffledReports(message.items, message.factors, message.bits).to_bytes()
    return ShuffledValues(message.items, message.factors, message.values).to_bytes()


def create_proxy_app(settings: ProxySettings) -> FastAPI:
    """The FastAPI app of the shuffling proxy."""
    state = _Proxy(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        if state.http.is_closed:  # started again in the same process (tests)
            state.http = state._client()
        try:
            await state.sync()
        except (_Unreachable, DprecError) as e:
            log.warning("not synced with the server yet (%s); will retry on requests", e)
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
    app.state.service = state

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/round", summary="The open round as the proxy sees it",
             responses=error_responses(503))
    async def round_state() -> dict[str, Any]:
        info = await state.ensure_synced()
        return {"round": state.round, "rounds": info.rounds,
                "started": bool(state.server_state.get("started")),
                "finished": state.round >= info.rounds, "threshold": settings.threshold,
                "batch_senders": settings.batch_senders,
                "published_threshold": published_threshold(info)}

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

    @app.post("/v1/rounds/{round}/close", summary="Close a round: forward the rest, or refuse",
              responses=error_responses(401, 409, 429, 503))
    async def close(round: ROUND, request: Request,
                    authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        state.rate_limit(request)
        if authorization is None:
            raise ApiError(401, "missing credential: send Authorization: Bearer <shared secret>")
        if not same_secret(bearer(authorization), settings.secret):
            raise ApiError(401, "wrong credential")
        return await state.close(round)

    return app
