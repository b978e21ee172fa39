"""The proxy's state (:class:`ProxyState`): its store, its view of the server (the
protocol, the open round, the release rule, whether a batch fits), and submissions (rate
limit, the client's and the operator's credentials, the checks of an upload before it is
held). Forwarding and closing are its mixins (:mod:`.forwarding`, :mod:`.closing`)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
from typing import Any

import httpx
from fastapi import Request

from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets, SecretNotReady
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.validity import CHECK_CHUNK_BYTES, ReleaseRule
from dprec.services.auth import bearer, client_token, same_secret
from dprec.services.http import (
    ApiError,
    checked_message,
    read_body,
)
from dprec.services.limits import RateLimiter, batch_bytes
from dprec.services.proxy.closing import Closing
from dprec.services.proxy.forwarding import Forwarding, Unreachable
from dprec.services.proxy.settings import ProxySettings
from dprec.services.rounds import (
    bounds_problem,
    lose_held,
    release_rule,
)
from dprec.services.store import Duplicate, ProxyStore, Replayed
from dprec.systems.deployable import ProtocolInfo, check_upload

log = logging.getLogger("dprec.services.proxy")

__all__ = ["RELEASE_CAP", "ProxyState", "published_threshold"]

_I64 = (-(1 << 63), (1 << 63) - 1)
RELEASE_CAP = 768 << 20
"""Largest secure-sum release (bytes) this proxy queues: it is one SQLite row (SQLite's
limit is 1e9 bytes) and one HTTP body. A round whose release of ``n_clients`` uploads would
exceed it, or the server's batch limit, takes no upload at all (a proved release is 8 d +
16 bytes per upload; a ring release holds every upload's share box)."""


def published_threshold(info: ProtocolInfo) -> int | None:
    """The anonymity threshold the protocol publishes (its descriptor's
    :meth:`~dprec.protocol.deployment.Deployment.published_threshold`; None for a protocol
    that states none)."""
    return info.deployment.published_threshold(info.config)


class ProxyState(Forwarding, Closing):
    """The proxy's state and its requests (module docstring)."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.store = ProxyStore(settings.state_dir / "proxy.sqlite3", settings.sync)
        self.limiter = RateLimiter(settings.rate, settings.burst)
        self.http = self._client()
        self.auth = {"Authorization": "Bearer " + settings.secret.decode()}
        self.info: ProtocolInfo | None = None
        self.secrets: ProxySecrets | None = None
        """The protocol's part that needs this proxy's own key (a secure sum), if any."""
        self.server_state: dict[str, Any] = {}
        self._held: dict[int, int] = {}
        self._wake = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._close_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._round = int(self.store.meta("round", 0))
        self._closing: int | None = self.store.meta("closing")
        self._unfit: str | None = None
        """Why no batch of this proxy fits the server's limit (None: they fit)."""
        self._behind = False
        """The server refused a batch for a round it has closed: catch up."""
        self._synced_at = -math.inf
        self._sync_lock = asyncio.Lock()
        self._broadcast_round: int | None = None
        """The round whose broadcast the protocol's secret part holds (if it needs one)."""
        self.rule: ReleaseRule | None = None
        """The release rule of an agreed (secure-sum) release; None for other protocols."""
        self.refused_start: str | None = None
        """Settings that can never release (refused at start)."""
        self._check_chunk = CHECK_CHUNK_BYTES
        """Bytes of held uploads checked with the server at once (half its batch limit)."""
        self.upload_limit: int | None = None
        """The largest submission body (``--max-body``, else the protocol's message size),
        known once synced: computed once, not per request."""

    def check_state(self) -> None:
        """:class:`DprecError` now, at start, if the protocol's secret part cannot be read
        from the state folder (a corrupt key file), for a proxy that served this state
        before (the protocol it then read is kept); a fresh state has nothing to check."""
        doc = self.store.meta("protocol_doc")
        if doc is None:
            return
        try:
            info = ProtocolInfo.from_json(doc)
            info.deployment.proxy_secrets(info, self.settings.state_dir)
        except DprecError as e:
            raise DprecError(f"the proxy's state in {self.settings.state_dir} cannot be used: "
                             f"{e}. Restore the folder from a backup, or start on a fresh "
                             "--state (uploads it holds are then lost)") from None

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
            raise Unreachable(f"{type(e).__name__}") from None
        if r.status_code >= 500:
            raise Unreachable(f"status {r.status_code}")
        r.raise_for_status()
        return r.json()

    async def sync(self) -> None:
        """Learn the protocol and the server's round; catch up if the server moved on."""
        async with self._sync_lock:
            await self._sync()

    async def _sync(self) -> None:
        if self.info is None:
            doc = await self._get("/v1/protocol")
            info = ProtocolInfo.from_json(doc)
            held = self.store.meta("protocol")
            if held is None:
                self.store.set_meta("protocol", info.fingerprint())
            elif held != info.fingerprint():
                raise DprecError("the proxy's state belongs to another protocol; give it "
                                 "its own --state directory")
            if self.store.meta("protocol_doc") is None:  # for the check at the next start
                self.store.set_meta("protocol_doc", doc)
            try:
                self.secrets = info.deployment.proxy_secrets(info, self.settings.state_dir)
            except DprecError as e:  # the detail (paths) for the operator's log only
                log.error("the proxy's state cannot be used: %s", e)
                raise DprecError("the proxy's own state cannot be used (its operator must "
                                 "read the proxy's log)") from None
            self.info = info
            self.upload_limit = self.settings.max_body or info.upload_size()
            self._unfit = self._check_release(info) or self._check_fit(info, doc)
            if self._unfit:
                log.error("%s", self._unfit)
            published = published_threshold(info)
            if published is not None and self.settings.threshold < published:
                log.warning("this proxy enforces --threshold %d, below the %d senders the "
                            "protocol publishes (shuffle_threshold): its batches may be "
                            "smaller than the protocol states", self.settings.threshold,
                            published)
        state = await self._get("/v1/round")
        self.server_state = state
        self._synced_at = asyncio.get_running_loop().time()
        if state["started"] and state["round"] > self.round:
            await self._catch_up(state)
        self._held = {self.round: self.store.held(self.round)}

    def _check_release(self, info: ProtocolInfo) -> str | None:
        """Why an agreed (secure-sum) release can never happen or must not: settings that
        never release (refused at start) or bounds the proxy does not expect."""
        if self.secrets is None or not self.secrets.agrees_release:
            return None
        try:
            self.rule = release_rule(self.secrets, self.settings.threshold)
        except DprecError as e:
            self.refused_start = str(e)
            return self.refused_start
        s = self.settings
        return bounds_problem(self.secrets, self.store, s.min_honest, s.n_clients)

    def _check_fit(self, info: ProtocolInfo, doc: dict[str, Any]) -> str | None:
        """Why the largest batch this proxy forms exceeds the server's published limit."""
        limit = (doc.get("limits") or {}).get("max_batch_bytes")
        if not isinstance(limit, int) or isinstance(limit, bool):
            return None  # a server that publishes no limit: learnt from its refusals
        self._check_chunk = max(1, min(CHECK_CHUNK_BYTES, limit // 2))
        limit = min(limit, RELEASE_CAP)
        s = self.settings
        senders = s.batch_senders + s.threshold - 1
        if info.deployment.one_batch:
            if self.rule is None:
                return None  # one batch of every sender: learnt from the server's refusal
            largest = batch_bytes(info, self.rule.most)  # a release sums <= n_clients
            if largest <= limit:
                return None
            return (f"the server takes batches of at most {limit} bytes (and a release "
                    f"is at most {RELEASE_CAP} bytes here), and this proxy's release of up "
                    f"to n_clients = {self.rule.most} uploads has up to {largest} bytes; "
                    "raise the server's --max-batch-mb, or enrol fewer clients per round. "
                    "No submission is taken")
        largest = batch_bytes(info, senders)
        if largest <= limit:
            return None
        return (f"the server takes batches of at most {limit} bytes, and this proxy forms "
                f"batches of up to {largest} bytes ({senders} submissions: --batch-senders "
                f"{s.batch_senders} + --threshold {s.threshold} - 1); lower --batch-senders "
                "or raise the server's --max-batch-mb. No submission is taken")

    async def _catch_up(self, state: dict[str, Any]) -> None:
        """The server closed our open round without us: what it took counts as forwarded
        (a batch it took before we could record it answers as a duplicate), the rest as
        lost; record the round's outcome and move on."""
        mine, theirs = self.round, int(state["round"])
        if self.store.outbox_count(mine):
            await self.send_outbox()
        if self.rule is not None and self.secrets is not None:
            lose_held(self.store, self.secrets, mine,
                      f"the server closed round {mine} before the proxy released it")
        self.store.lose(mine)
        lost = self.store.lost_senders(mine)
        done = {o["round"]: o for o in state["history"]}
        outcome = self._outcome(mine, done.get(mine))
        self.store.finish_round(mine, outcome, theirs)
        self.store.skip_to(theirs)
        self._round = theirs
        self._held = {theirs: 0}
        self._behind = False
        if lost:
            log.error("round %d was closed on the server before %d acknowledged submissions "
                      "reached it: they are lost (the round's outcome counts them)", mine, lost)

    async def refresh(self) -> None:
        """Ask the server for its round if the last answer is older than ``watch_seconds``
        (an unreachable server is not an error here: the outbox waits for it)."""
        if asyncio.get_running_loop().time() - self._synced_at < self.settings.watch_seconds \
                and not self._behind:
            return
        async with self._sync_lock:
            if asyncio.get_running_loop().time() - self._synced_at \
                    < self.settings.watch_seconds and not self._behind:
                return
            try:
                await self._sync()
            except Unreachable as e:
                self._synced_at = asyncio.get_running_loop().time()  # ask again later
                log.warning("the server is unreachable (%s); holding submissions", e)

    async def ensure_synced(self) -> ProtocolInfo:
        if self.info is None or not self.server_state.get("started"):
            try:
                await self.sync()
            except Unreachable as e:
                raise ApiError(503, f"the server is unreachable ({e}); retry") from None
            except DprecError as e:
                raise ApiError(503, str(e)) from None
        assert self.info is not None
        return self.info

    def _open_round(self, round: int) -> None:
        if not self.server_state.get("started"):
            raise ApiError(409, "the protocol has not started")
        assert self.info is not None
        if round < self.round and self.store.outcome(round) is not None:
            raise ApiError(409, f"round {round} is closed; the open round is {self.round}")
        if self.round >= self.info.rounds:
            raise ApiError(409, f"the protocol has finished ({self.info.rounds} rounds)")
        if round != self.round:
            raise ApiError(409, f"round {round} is not open; the open round is {self.round}")
        if self._closing == round:
            raise ApiError(409, f"round {round} is closing; submit in the next round")

    def problem(self) -> str | None:
        """Why the proxy takes no submission now (None: it takes them)."""
        if self._unfit:
            return self._unfit
        refused = self.store.refusals()
        if refused:
            round, _, status, error = refused[0]
            senders = sum(r[1] for r in refused)
            return (f"the server refused {len(refused)} batch(es) of {senders} senders "
                    f"(round {round}: {status} {error}); they are kept and sent again on the "
                    "next close and every 30 s, and no submission is taken until the server "
                    "takes them")
        return None

    # -- submissions ------------------------------------------------------------------------

    def rate_limit(self, request: Request) -> None:
        host = request.client.host if request.client else "-"
        wait = self.limiter.take(host)
        if wait:
            raise ApiError(429, "rate limit exceeded; retry later",
                           {"Retry-After": str(max(1, math.ceil(wait)))})

    def authenticate_operator(self, authorization: str | None) -> None:
        """The operator's credential (never the proxy-server secret: the server holds it)."""
        if self.settings.operator_secret is None:
            raise ApiError(401, "this proxy takes no operator request: start it with an "
                                "operator secret (--operator-secret-file or "
                                "$DPREC_OPERATOR_SECRET)")
        if authorization is None:
            raise ApiError(401, "missing credential: send Authorization: Bearer <operator "
                                "secret>")
        if not same_secret(bearer(authorization), self.settings.operator_secret):
            raise ApiError(401, "wrong credential")

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
        await self.refresh()
        self._open_round(round)
        problem = self.problem()
        if problem:
            raise ApiError(503, problem)
        assert self.upload_limit is not None
        body = await read_body(request, self.upload_limit)
        message = checked_message(body, "message", lambda m: check_upload(m, info))
        if getattr(message, "client_id", client_id) != client_id:
            raise ApiError(422, "the message's client_id is not the authenticated client")
        if self.secrets is not None:
            if self.secrets.needs_broadcast:
                await self._broadcast_for(round, info)
            try:
                self.secrets.admit(message, round)
            except SecretNotReady as e:
                raise ApiError(503, str(e)) from None
            except MessageError as e:
                raise ApiError(422, f"message refused: {e}") from None
        anonymous = info.deployment.anonymous(message, body)
        unique = info.deployment.unique_id(message)
        self._open_round(round)  # the round may have closed while the body was read
        tag = self._tag(round, client_id)
        if self.rule is not None and self._held.get(round, 0) >= self.rule.most:
            if self.store.submitted(round, tag):  # a resend after a lost answer: accepted
                raise ApiError(409, f"already submitted in round {round} (one submission "
                                    "per client and round)")
            raise ApiError(409, f"round {round} is full: it holds n_clients = "
                                f"{self.rule.most} uploads, the most one release sums (the "
                                "ring q covers no more); submit in the next round")
        try:
            self.store.hold(round, tag, anonymous, unique)
        except Replayed:
            raise ApiError(409, f"a replay: this message id was already accepted in round "
                                f"{round}") from None
        except Duplicate:
            raise ApiError(409, f"already submitted in round {round} (one submission per "
                                "client and round)") from None
        del anonymous, message, body
        self._held[round] = self._held.get(round, 0) + 1
        s = self.settings
        while not info.deployment.one_batch and \
                self._held[round] >= s.batch_senders + s.threshold:
            self._held[round] -= self.store.form_batch(round, s.batch_senders,
                                                       self._shuffler(round))
            self._wake.set()
        return {"accepted": True, "round": round}

    async def _broadcast_for(self, round: int, info: ProtocolInfo) -> None:
        """Hand the protocol's secret part the server's broadcast of ``round`` (fetched at
        the round's first upload; the broadcast changes only when a round closes)."""
        assert self.secrets is not None
        if self._broadcast_round == round:
            return
        try:
            r = await self.http.get(f"/v1/artefacts/{info.deployment.broadcast_artefact}")
        except httpx.HTTPError as e:
            raise ApiError(503, f"the server is unreachable ({type(e).__name__}); "
                                "retry") from None
        if r.status_code != 200:
            raise ApiError(503, f"the server's broadcast is not available (status "
                                f"{r.status_code}); retry")
        try:
            self.secrets.see_broadcast(round, r.content)
        except (MessageError, DprecError) as e:
            raise ApiError(503, f"the server's broadcast is malformed: {e}") from None
        self._broadcast_round = round
