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
stay behind); closing the round (``POST /v1/rounds/{round}/close``, authenticated by the
operator's own secret, never the proxy-server secret the server holds; or
``--round-seconds``) queues the rest if they number ``threshold`` or more, and refuses them
otherwise (``below_threshold``, as the simulation's shuffler refuses a round). A batch is
shuffled by the simulation's own :class:`~dprec.protocol.shuffler.Shuffler` (canonical
order, then a uniform permutation) on a CSPRNG (:func:`~dprec.random.secure_generator`), sent
to the server under a random idempotency key, and deleted once the server acknowledges it.
After a crash, queued batches are sent again under the same key and the server counts each
once.

A protocol whose descriptor sets ``one_batch`` (a secure sum) forms no batch while the round
is open: the close agrees the set of valid uploads with the server and forwards ONE batch
over exactly that set, durably queued before it is sent, or ends the round below the
threshold (:mod:`dprec.services.rounds`: every upload's own outcome, the release rule
``max(threshold, min_honest)`` to ``n_clients``, settings that can never release refused
at start, the published ``min_honest`` and ``n_clients`` checked against ``--min-honest``
and ``--n-clients``). The batch is made by the protocol's secret part
(:meth:`~dprec.protocol.deployment.Deployment.proxy_secrets`, e.g. the secure sum's proxy
key, kept in the state folder), which also checks every upload before it is
held (422) and whose public part ``GET /v1/round`` publishes (``published``). An upload
repeating an accepted upload's id (:meth:`~dprec.protocol.deployment.Deployment.unique_id`)
is a replay (409). The batch is computed from the held submissions alone, so a proxy
killed mid-round and restarted releases the same sum. A secret part that checks uploads
against the round's broadcast (FMF-LDP's ``cells=assigned``) gets it from the server at the
round's first upload; one that takes the operator's key gets it by ``POST /v1/secret``; one
that hands each client its own secret (FMF-LDP's cells token) answers ``GET /v1/cells/token``
to that client alone (its token and id, as for uploads; 401 otherwise).

What a 202 promises: the submission is held on disk and the round's outcome accounts for it,
as forwarded (the server took its batch), below the threshold, or lost; the proxy never
drops one silently. Hence:

- A batch the server refuses (any 4xx but 429) is kept in the outbox with the refusal, sent
  again on every close and every 30 s, and never counted as forwarded. While the server
  refuses the proxy's batches the proxy takes no submission (503, naming the refusal), and
  a close answers 409 without closing the round (it stays closing: fix the server, close
  again). The server publishes its batch limit (``limits.max_batch_bytes`` in
  ``/v1/protocol``); a proxy whose largest batch (``batch_senders + threshold - 1``
  submissions) would not fit takes no submission at all (503, naming both sizes).
- The server's own close (``POST /v1/rounds/{round}/close`` on the server, an operator
  action that bypasses the proxy) ends the round for good: a batch the server refuses
  (409) for a round it has closed, and whatever the proxy still holds of that round, are
  lost, counted in the round's outcome (``lost_senders``, ``forwarded: false``). The proxy
  learns of such a close from that refusal, from any close or status request, and from a
  submission when it last asked the server more than ``watch_seconds`` ago; from then on
  it refuses the round's submissions (409). Submissions acknowledged between the server's
  close and the proxy learning of it can only be counted as lost: close rounds through the
  proxy, which forwards everything it holds first.

A round's outcome: ``senders`` (acknowledged), ``forwarded_senders`` and ``batch_senders``
(what the server accepted, batch by batch), ``below_threshold``, ``lost_senders`` (and
``lost_reason``), ``forwarded`` (true when the server took every acknowledged submission
that was not below the threshold, and at least one), the ``threshold``, and the server's
own record of the round (``server``). ``GET /v1/round`` states whether the proxy takes
submissions (``accepting``) and why not (``problem``).

What it enforced: the ``threshold`` and the senders of every batch the server accepted
(:func:`~dprec.protocol.engine.forwarded_batch_sizes` of the round's senders), beside the
server's own record of the batches it accepted. A proxy started with a threshold below the
protocol's published ``shuffle_threshold`` logs a warning.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import math
import numbers
import re
import urllib.parse
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
from fastapi import FastAPI, Header, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse

import dprec
from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets, SecretNotReady
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.validity import ReleaseRule
from dprec.random import secure_generator
from dprec.services.auth import bearer, client_token, same_secret
from dprec.services.http import (
    DEFAULT_BODY_LIMIT,
    ApiError,
    error_responses,
    install_body_limit,
    install_error_handlers,
    read_body,
)
from dprec.services.limits import RateLimiter, batch_bytes
from dprec.services.rounds import (
    bounds_problem,
    lose_held,
    release_rule,
    settle_round,
    upload_outcomes,
    verdicts_from_json,
)
from dprec.services.store import Duplicate, ProxyStore, Replayed, Sync
from dprec.systems.deployable import ProtocolInfo, check_upload

log = logging.getLogger(__name__)

__all__ = ["ProxySettings", "check_url", "create_proxy_app"]

ROUND = Annotated[int, PathParam(ge=0, le=2**31 - 1, description="Round (epoch) number.")]
BINARY_BODY = {"requestBody": {"required": True, "content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}
_I64 = (-(1 << 63), (1 << 63) - 1)
_REPORTS = re.compile(r"^/v1/rounds/[^/]+/reports$")


@dataclass
class ProxySettings:
    """What ``dprec serve proxy`` is started with."""

    server_url: str
    state_dir: Path
    secret: bytes
    """Shared secret with the server (authenticates this proxy to it)."""
    token_key: bytes
    """Key of the clients' tokens (HMAC of the client id)."""
    operator_secret: bytes | None = None
    """The operator's secret: it alone authenticates closing a round and ``POST /v1/secret``
    here. It must differ from :attr:`secret`, which the server holds: only the proxy (its
    operator or its ``--round-seconds`` timer) decides when a round is released. None: no
    operator request is taken (the timer still closes rounds)."""
    min_honest: int | None = None
    """The ``min_honest`` the operator agreed with the clients: a secure-sum server that
    publishes another is refused (None: the first value seen, pinned in the state)."""
    n_clients: int | None = None
    """The ``n_clients`` the operator agreed with the clients (as :attr:`min_honest`)."""
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
    watch_seconds: float = 1.0
    """A submission first asks the server for its round when the proxy last asked longer
    ago than this (0: every submission), so a round the server closed is refused."""
    server_transport: httpx.AsyncBaseTransport | None = None
    """For tests: reach the server through this transport (e.g. in-process ASGI)."""

    def __post_init__(self) -> None:
        for name in ("threshold", "batch_senders"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {v}")
        if self.batch_senders < self.threshold:
            raise DprecError(f"batch_senders must be >= threshold ({self.threshold}), got "
                             f"{self.batch_senders}")
        if self.max_body is not None and (isinstance(self.max_body, bool)
                                          or not isinstance(self.max_body, numbers.Integral)
                                          or self.max_body < 1):
            raise DprecError(f"max_body must be an integer >= 1 (bytes), got {self.max_body}")
        check_url(self.server_url, "the server's URL")
        if self.round_seconds is not None and not (math.isfinite(self.round_seconds)
                                                   and self.round_seconds > 0):
            raise DprecError(f"round_seconds must be a finite number > 0, got "
                             f"{self.round_seconds}")
        if not (math.isfinite(self.retry_for) and self.retry_for > 0):
            raise DprecError(f"retry_for must be a finite number > 0, got {self.retry_for}")
        if not (math.isfinite(self.watch_seconds) and self.watch_seconds >= 0):
            raise DprecError(f"watch_seconds must be a finite number >= 0, got "
                             f"{self.watch_seconds}")
        RateLimiter(self.rate, self.burst)  # validates both
        if self.operator_secret is not None and same_secret(self.operator_secret, self.secret):
            raise DprecError("the operator's secret must differ from the proxy-server shared "
                             "secret: the server holds that one, and must not close rounds")
        for name in ("min_honest", "n_clients"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                  or v < 1):
                raise DprecError(f"{name} must be an integer >= 1, got {v}")


def check_url(url: str, what: str) -> str:
    """``url`` if it is ``http(s)://host[:port][/path]``, else :class:`DprecError`."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as e:
        raise DprecError(f"{what} must be http(s)://host[:port], got {url!r}: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
            or parts.fragment:
        raise DprecError(f"{what} must be http(s)://host[:port], got {url!r}")
    return url


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
            raise _Unreachable(f"{type(e).__name__}") from None
        if r.status_code >= 500:
            raise _Unreachable(f"status {r.status_code}")
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
        s = self.settings
        senders = s.batch_senders + s.threshold - 1
        if info.deployment.one_batch:
            if self.rule is None:
                return None  # one batch of every sender: learnt from the server's refusal
            largest = batch_bytes(info, self.rule.most)  # a release sums <= n_clients
            if largest <= limit:
                return None
            return (f"the server takes batches of at most {limit} bytes, and this proxy's "
                    f"release of up to n_clients = {self.rule.most} uploads has up to "
                    f"{largest} bytes; raise the server's --max-batch-mb. No submission is "
                    "taken")
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
            except _Unreachable as e:
                self._synced_at = asyncio.get_running_loop().time()  # ask again later
                log.warning("the server is unreachable (%s); holding submissions", e)

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
        body = await read_body(request, self.settings.max_body or info.upload_size())
        try:
            message = Message.from_bytes(body)
        except MessageError as e:
            raise ApiError(400, f"malformed message: {e}") from None
        try:
            check_upload(message, info)
        except MessageError as e:
            raise ApiError(422, f"message refused: {e}") from None
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
        if self.rule is not None and self._held.get(round, 0) >= self.rule.most:
            raise ApiError(409, f"round {round} is full: it holds n_clients = "
                                f"{self.rule.most} uploads, the most one release sums (the "
                                "ring q covers no more); submit in the next round")
        try:
            self.store.hold(round, self._tag(round, client_id), anonymous, unique)
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

    # -- forwarding -------------------------------------------------------------------------

    def _shuffler(self, round: int) -> Callable[[list[bytes]], bytes]:
        """How a batch of ``round``'s held submissions is made: shuffled on a CSPRNG (the
        system's :meth:`~dprec.protocol.deployment.Deployment.shuffle`: canonical order,
        then a uniform permutation drawn here from a fresh ChaCha20 key), or released by
        the protocol's secret part (:meth:`ProxySecrets.release`: a secure sum's one batch,
        its mask sum recomputed from the held submissions). The batch depends only on the
        multiset of submissions.
        """
        info, secrets = self.info, self.secrets
        assert info is not None
        if secrets is not None:
            return lambda rows: secrets.release(rows, round, self.settings.threshold)
        return lambda rows: info.deployment.shuffle(rows, info, secure_generator(),
                                                    self.settings.threshold)

    async def send_outbox(self) -> None:
        """Send every queued batch once; :class:`_Unreachable` if the server does not answer.

        Accepted (200/201): delivered. Refused with 409 for a round the server has closed:
        that round's held and queued submissions are lost (:meth:`ProxyStore.lose`).
        Any other refusal: the batch stays queued, with the refusal (:meth:`problem`).
        """
        async with self._send_lock:
            server_round: int | None = None
            gone: set[int] = set()
            for key, round, senders, body in self.store.outbox():
                if round in gone:
                    continue
                try:
                    r = await self.http.post(
                        f"/v1/rounds/{round}/batches", content=body,
                        headers={**self.auth, "Idempotency-Key": key,
                                 "Content-Type": "application/octet-stream"})
                except httpx.HTTPError as e:
                    raise _Unreachable(type(e).__name__) from None
                if r.status_code >= 500 or r.status_code == 429:
                    raise _Unreachable(f"status {r.status_code}")
                if r.status_code in (200, 201):
                    self.store.delivered(key)
                    continue
                if r.status_code == 409:
                    if server_round is None:
                        server_round = await self._server_round()
                    if server_round > round:  # closed on the server: never deliverable
                        gone.add(round)
                        self._behind = True
                        continue
                error = _error_text(r)
                known = {(st, er) for _, _, st, er in self.store.refusals(round)}
                if (r.status_code, error) not in known:
                    log.error("the server refused a batch of %d senders in round %d (%d: %s); "
                              "kept, sent again later; submissions paused", senders, round,
                              r.status_code, error)
                self.store.refused(key, r.status_code, error)
            for round in gone:
                lost = self.store.lose(round)
                log.error("the server closed round %d before it took %d acknowledged "
                          "submissions: they are lost (the round's outcome counts them)",
                          round, lost)

    async def _server_round(self) -> int:
        """The server's open round (-1 before its start)."""
        state = await self._get("/v1/round")
        return int(state["round"]) if state.get("started") else -1

    async def pump(self) -> None:
        """Background: send queued batches whenever some are formed, retrying with backoff
        while the server is unreachable, and refused batches every 30 s."""
        backoff = 0.1
        while True:
            if self.store.refusals():
                try:
                    await asyncio.wait_for(self._wake.wait(), 30.0)
                except TimeoutError:
                    pass
            else:
                await self._wake.wait()
            self._wake.clear()
            try:
                await self.send_outbox()
                if self._behind:
                    await self.sync()
                backoff = 0.1
            except _Unreachable as e:
                log.warning("the server is unreachable (%s); retrying in %.1f s", e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(5.0, 2 * backoff)
                self._wake.set()
            except DprecError as e:
                log.error("could not follow the server: %s", e)

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

    def _outcome(self, round: int, server: dict[str, Any] | None) -> dict[str, Any]:
        """What became of the round's acknowledged submissions (see the module docstring)."""
        delivered = self.store.delivered_senders(round)
        lost = self.store.lost_senders(round)
        out: dict[str, Any] = {
            "round": round, "senders": self.store.senders(round),
            "forwarded_senders": delivered, "forwarded": delivered > 0 and lost == 0,
            "below_threshold": self.store.below_threshold(round), "lost_senders": lost,
            "threshold": self.settings.threshold,
            "batch_senders": self.store.delivered_batches(round), "server": server}
        if lost:
            why = self.store.lost_reason(round)
            out["lost_reason"] = (f"the server closed round {round} before it took them"
                                  + (f"; it had refused their batch ({why})" if why else ""))
        uploads = self.store.uploads(round)
        if uploads is not None:  # an agreed release: every upload's own outcome
            out["refused_senders"] = self.store.refused_senders(round)
            out["release_rule"] = None if self.rule is None else {
                "fewest": self.rule.fewest, "most": self.rule.most}
            out.update(upload_outcomes(uploads, delivered > 0 and lost == 0,
                                       out.get("lost_reason")))
        return out

    async def close(self, round: int) -> dict[str, Any]:
        async with self._close_lock:
            info = await self.ensure_synced()
            try:
                await self.sync()  # learn a close on the server before anything else
            except _Unreachable:
                pass
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
            if self.rule is not None:
                assert self.secrets is not None
                if self.secrets.needs_broadcast and self.store.uploads(round) is None:
                    await self._broadcast_for(round, info)
                await settle_round(self.store, self.secrets, self.rule, round,
                                   self._server_verdicts)
            elif held >= self.settings.threshold:
                self.store.form_batch(round, None, self._shuffler(round))
            elif held:  # below the threshold (then nothing was forwarded before): refused
                dropped = self.store.drop_held(round)
                log.info("round %d: %d senders held, below the threshold %d: refused", round,
                         dropped, self.settings.threshold)
            self._held[round] = 0
            await self._retrying("forwarding", self.send_outbox)
            if self._behind:  # the server closed the round meanwhile
                await self._retrying("following the server", self.sync)
                done = self.store.outcome(round)
                assert done is not None
                return done
            refused = self.store.refusals(round)
            if refused:
                raise ApiError(409, f"round {round} is not closed: {self.problem()}; fix the "
                                    "server, then close again")

            async def close_on_server() -> dict[str, Any]:
                try:
                    r = await self.http.post(f"/v1/rounds/{round}/close", headers=self.auth)
                except httpx.HTTPError as e:
                    raise _Unreachable(type(e).__name__) from None
                if r.status_code >= 500:
                    raise _Unreachable(f"status {r.status_code}")
                if r.status_code != 200:  # 409: the server's reason (e.g. what it refuses)
                    raise ApiError(409 if r.status_code == 409 else 502,
                                   f"the server refused to close round {round}: "
                                   f"{_error_text(r)}")
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

    async def _server_verdicts(self, round: int, batch: bytes) -> dict[bytes, str | None]:
        """The server's verdict on each share of ``batch`` (retried while unreachable)."""
        async def ask() -> dict[bytes, str | None]:
            try:
                r = await self.http.post(
                    f"/v1/rounds/{round}/shares", content=batch,
                    headers={**self.auth, "Content-Type": "application/octet-stream"})
            except httpx.HTTPError as e:
                raise _Unreachable(type(e).__name__) from None
            if r.status_code >= 500 or r.status_code == 429:
                raise _Unreachable(f"status {r.status_code}")
            if r.status_code != 200:
                raise ApiError(409, f"round {round} is not closed: the server did not check "
                                    f"its shares ({r.status_code}: {_error_text(r)}); close "
                                    "again")
            try:
                doc = r.json()
                assert self.secrets is not None
                return self.secrets.confirm(verdicts_from_json(doc), doc, round)
            except (ValueError, DprecError) as e:
                raise ApiError(502, f"the server's share check is malformed: {e}") from None

        return await self._retrying("checking the shares", ask)

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


def _error_text(r: httpx.Response) -> str:
    """The ``error`` of a service's JSON refusal, else the start of its body."""
    try:
        doc = r.json()
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return doc["error"][:300]
    return r.text[:300]


def published_threshold(info: ProtocolInfo) -> int | None:
    """The anonymity threshold the protocol publishes (FMF-LDP's ``shuffle_threshold``;
    None for a protocol that states none)."""
    value = info.config.get("shuffle_threshold")
    return None if value is None else int(value)


def body_limit(state: _Proxy, method: str, path: str) -> int:
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
    state = _Proxy(settings)
    state.check_state()

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        if state.http.is_closed:  # started again in the same process (tests)
            state.http = state._client()
        try:
            await state.sync()
        except (_Unreachable, DprecError) as e:
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

    @app.get("/v1/rounds/{round}/outcome", summary="A closed round's outcome, each upload's "
             "included", responses=error_responses(404))
    async def outcome(round: ROUND) -> dict[str, Any]:
        done = state.store.outcome(round)
        if done is None:
            raise ApiError(404, f"round {round} is not closed on this proxy")
        return done

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

    @app.get("/v1/cells/token", summary="The authenticated client's own cells token",
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
