"""The round engine over HTTP: a simulated population against the real services.

:class:`HttpTransport` is an engine :class:`~dprec.protocol.engine.Transport` whose
:meth:`~HttpTransport.connect` stands stubs in for the server and proxy roles, which run in
the server and proxy processes. The simulated clients (the same vectorised role as in
process) hand each round's messages to :class:`RemoteProxy`, which submits them one request
per client, with the client's token, over kept-alive connections, then closes the round
at the proxy (which forwards to the server, which aggregates). :class:`RemoteServer` starts
the protocol and fetches each new broadcast (ETag-conditional).

Why the model is the in-process model, bit for bit:

- Every role's code is the same code (the server process runs the same server class, built
  from the same config; :class:`RemoteServer` refuses a server whose role differs).
- The randomness is the same stream. The server starts from the simulation's generator:
  ``POST /v1/start`` carries its state, the server role draws from it exactly what it draws
  in process, and the generator comes back advanced. :meth:`RemoteProxy.start` lets the
  in-process proxy object take its draw, so the clients' draws line up too.
- What the proxy draws on its own (a CSPRNG permutation) cannot change the model: the
  proxy puts reports in canonical order before permuting them, and the server's aggregate
  depends only on the multiset of a round's reports, not on their order or batching
  (:mod:`dprec.protocol.aggregation`).

The privacy is not the in-process one unless the batching is: the server sees each
forwarded batch as its own shuffle, so :class:`RemoteProxy` accounts for the batches the
server recorded (its round outcome's ``batch_senders``), charging every forwarded user the
round's smallest batch, as :class:`~dprec.protocol.engine.ShufflingProxy` does with the same
``batch_senders``.
- The broadcast travels losslessly (FMF-LDP's V as float64, :class:`ItemMatrix64`).
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import queue
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np

from dprec.client.http import (
    ProxyAPI,
    ServerAPI,
    ServiceError,
    Unreachable,
    _call,
    keepalive_client,
    retrying,
)
from dprec.errors import DprecError
from dprec.protocol.deployment import generator_from_json, generator_to_json
from dprec.protocol.engine import Proxy, Server, Transport
from dprec.services import roles
from dprec.services.auth import client_token
from dprec.systems.deployable import ProtocolInfo

log = logging.getLogger(__name__)

__all__ = ["HttpTransport", "RemoteProxy", "RemoteServer", "check_reachable"]


def check_reachable(services: dict[str, str], within: float = 5.0) -> None:
    """:class:`DprecError` unless every service (name: URL) answers ``/healthz`` within
    ``within`` seconds (a run against a dead service fails at once, not after the retries
    of its first round)."""
    from dprec.services.proxy import check_url

    for name, url in services.items():
        check_url(url, f"the {name}'s URL")
    for name, url in services.items():
        end = time.monotonic() + within
        while True:
            try:
                r = httpx.get(url.rstrip("/") + "/healthz", timeout=max(0.5, within / 4))
                if r.status_code == 200:
                    break
                why = f"status {r.status_code}"
            except httpx.HTTPError as e:
                why = f"{type(e).__name__}: {e}"
            if time.monotonic() > end:
                raise DprecError(f"the {name} at {url} does not answer ({why}) after "
                                 f"{within:.0f} s: is it running?")
            time.sleep(0.2)


class RemoteServer(Server):
    """The server role in the server process, seen from the simulation."""

    def __init__(self, local: Server, api: ServerAPI, admin: httpx.Client, retry_for: float
                 ) -> None:
        self.local = local
        self.api = api
        self.admin = admin
        self.retry_for = retry_for
        self.info: ProtocolInfo | None = None

    def start(self, rng: np.random.Generator) -> Any:
        doc = retrying(self.api.protocol_doc, self.retry_for)
        self.info = ProtocolInfo.from_json(doc)
        mine = json.loads(json.dumps(roles.describe_role(self.local)))
        if doc.get("role") != mine:
            raise DprecError(f"the server at {self.api.url} runs {doc.get('role')}, but the "
                             f"simulation's server is {mine}: start it with the same "
                             "system and parameters")
        initial = roles.initial_state(self.info, self.local)
        private = self.info.deployment.device_randomness
        # a secure sum's server starts from its own CSPRNG: the simulation's generator,
        # from which the clients draw next, never leaves this process
        start = {"generator": None if private else generator_to_json(rng),
                 "initial": None if initial is None else base64.b64encode(initial).decode()}
        reply = retrying(lambda: _call(lambda: self.admin.post(
            "/v1/start", json=start)).json(), self.retry_for)
        if not private:
            rng.bit_generator.state = generator_from_json(
                reply["generator"]).bit_generator.state
        return None if reply["version"] is None else self._broadcast()

    def _broadcast(self) -> Any:
        assert self.info is not None
        info = self.info
        art = retrying(lambda: self.api.artefact(info.deployment.broadcast_artefact),
                       self.retry_for)
        return roles.decode_broadcast(info, art.data)

    def aggregate(self, batches: Iterable[Any], round: int) -> Any:
        for _ in batches:  # drives RemoteProxy.forward, which yields nothing
            raise DprecError("over HTTP the proxy forwards to the server itself")
        state = retrying(self.api.round, self.retry_for)
        done = {o["round"]: o for o in state["history"]}
        if round not in done:
            raise DprecError(f"round {round} is not closed on the server")
        outcome = done[round]
        assert self.info is not None
        roles.mirror(self.info, self.local, outcome["diagnostics"])
        return self._broadcast() if outcome["updated"] else None


class Submissions:
    """Client submissions to the proxy over a pool of kept-alive stdlib HTTP/1.1
    connections (one per request in flight, TCP_NODELAY, headers and body in one write).

    The same requests and the same refusals as :meth:`ProxyAPI.submit` (a
    :class:`ServiceError` for a refusal, :class:`Unreachable` when no answer came), at a
    fraction of httpx's CPU per request: the simulated population is the load generator,
    and on a small machine it shares the cores with the services it drives
    (benchmarks/bench_services.py).
    """

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DprecError(f"the proxy URL must be http(s)://host[:port], got {url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._idle: queue.SimpleQueue[http.client.HTTPConnection] = queue.SimpleQueue()
        self._open: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self._timeout)
        with self._lock:
            self._open.append(conn)
        return conn

    def submit(self, round: int, client_id: int, token: str, body: bytes) -> dict[str, Any]:
        """POST one client's message (see :meth:`ProxyAPI.submit`)."""
        conn = self._connection()
        headers = {"Authorization": f"Bearer {token}", "X-Dprec-Client": str(int(client_id)),
                   "Content-Type": "application/octet-stream"}
        try:
            if conn.sock is None:
                conn.connect()
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.request("POST", f"{self._prefix}/v1/rounds/{int(round)}/reports", body=body,
                         headers=headers)
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()  # reconnects on its next use
            self._idle.put(conn)
            raise Unreachable(f"{type(e).__name__}: {e}") from None
        if r.will_close:
            conn.close()
        self._idle.put(conn)
        if r.status < 400:
            return json.loads(data)
        try:
            message = str(json.loads(data).get("error", data[:200]))
        except (ValueError, AttributeError):
            message = data[:200].decode(errors="replace")
        if r.status >= 500 and r.status not in (502, 503, 504):
            raise Unreachable(f"{r.status}: {message}")
        after = r.getheader("Retry-After")
        raise ServiceError(r.status, message,
                           float(after) if after and after.isdigit() else None)

    def close(self) -> None:
        with self._lock:
            for conn in self._open:
                conn.close()
            self._open = []


class RemoteProxy(Proxy):
    """The proxy role in the proxy process, seen from the simulation."""

    def __init__(self, local: Proxy, api: ProxyAPI, admin: httpx.Client, token_key: bytes,
                 retry_for: float, concurrency: int = 4, server: RemoteServer | None = None
                 ) -> None:
        self.local = local
        self.server = server
        """The server's stub: its description says how a message splits into clients'."""
        self.api = api
        self.admin = admin
        self.token_key = token_key
        self.retry_for = retry_for
        self.concurrency = max(1, int(concurrency))
        self.submissions = Submissions(api.url)
        """How the clients' requests travel (a light pool of kept-alive connections)."""
        self.round = 0
        self.senders = 0
        self.batches: list[int] = []
        """Senders in each batch the server accepted in the last round (its own record)."""
        self.threshold: int | None = None
        """The anonymity threshold the proxy service enforces (it states it)."""
        self.requests = 0
        """Submission requests sent (retries included)."""
        self._count = threading.Lock()

    def start(self, rng: np.random.Generator) -> None:
        # the in-process proxy draws its generator from the simulation stream: so do we
        self.local.start(rng)
        secret = getattr(self.local, "operator_secret", None)
        if secret is not None:  # the key the in-process proxy checks with (cells=assigned)
            doc = secret()
            retrying(lambda: _call(lambda: self.admin.post("/v1/secret", json=doc)),
                     self.retry_for)
        state = retrying(self.api.round, self.retry_for)
        self._enforced(state.get("threshold"))
        published = state.get("published")
        adopt = getattr(self.local, "adopt_published", None)
        if published is not None and adopt is not None:
            adopt(published)  # what the proxy publishes for clients (a secure sum's key)

    def _enforced(self, threshold: Any) -> None:
        """Note the threshold the proxy states; warn if it is below the simulated proxy's
        (the protocol's ``shuffle_threshold``)."""
        if threshold is None:
            raise DprecError(f"the proxy at {self.api.url} does not state its threshold")
        self.threshold = int(threshold)
        planned = getattr(self.local, "threshold", None)
        if planned is not None and self.threshold < planned:
            log.warning("the proxy at %s enforces a threshold of %d senders, below the "
                        "protocol's %d; the privacy report reads the batches the server "
                        "received", self.api.url, self.threshold, planned)

    def _submit(self, round: int, client_id: int, body: bytes) -> None:
        token = client_token(self.token_key, client_id)
        tries = 0

        def once() -> Any:
            nonlocal tries
            tries += 1
            with self._count:
                self.requests += 1
            try:
                return self.submissions.submit(round, client_id, token, body)
            except ServiceError as e:
                # a retry of the same bytes after no answer: the first one had landed
                if e.status == 409 and tries > 1 and "already submitted" in e.message:
                    return {"accepted": True}
                raise

        retrying(once, self.retry_for)

    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        r = self.round
        self.forwarded = False
        self.senders = 0
        next_id = 0
        deployment = None
        # a few requests in flight over kept-alive connections (the order is immaterial:
        # the proxy holds a bag); a failure after the retries ends the run
        with ThreadPoolExecutor(self.concurrency) as pool:
            for m in messages:
                if deployment is None:
                    if self.server is None or self.server.info is None:
                        raise DprecError("the proxy's stub needs the server's description "
                                         "to submit a message")
                    deployment = self.server.info.deployment
                # each upload is sent as soon as it is made, so making the next ones
                # (sealing, proving) overlaps the requests in flight
                pending = [pool.submit(self._submit, r, client_id, body)
                           for client_id, body in deployment.client_messages(m, next_id)]
                for f in pending:
                    f.result()
                next_id += len(pending)
        outcome = retrying(lambda: _call(lambda: self.admin.post(
            f"/v1/rounds/{r}/close")).json(), self.retry_for)
        self._enforced(outcome.get("threshold"))
        seen = (outcome.get("server") or {}).get("batch_senders")
        if seen is None:
            raise DprecError(f"the server's outcome of round {r} does not state the batches "
                             "it accepted (batch_senders): its privacy cannot be accounted")
        self.batches = sorted((int(n) for n in seen), reverse=True)
        stated = sorted((int(n) for n in outcome.get("batch_senders", [])), reverse=True)
        if stated != self.batches:
            log.warning("round %d: the proxy formed batches of %s senders, the server "
                        "accepted %s; accounting for what the server accepted", r, stated,
                        self.batches)
        lost = int(outcome.get("lost_senders", 0))
        if lost:
            raise DprecError(f"round {r}: {lost} of the {outcome['senders']} submissions the "
                             f"proxy acknowledged never reached the server "
                             f"({outcome.get('lost_reason', 'lost')}); the run is not the "
                             "protocol's")
        self.senders = int(outcome["senders"])
        self.forwarded = bool(outcome["forwarded"]) and bool(self.batches)
        counts = outcome.get("outcomes")
        if isinstance(counts, dict) and isinstance(getattr(self.local, "outcomes", None), list):
            self.local.outcomes.append({k: int(v) for k, v in counts.items()})
        for name in ("senders", "batches"):
            if hasattr(self.local, name):
                setattr(self.local, name, getattr(self, name))
        self.round += 1
        return
        yield  # a generator that yields nothing: the proxy process forwards

    def account(self, event: Any) -> Any:
        """The event as the server saw it: the simulated proxy's accounting
        (:meth:`ShufflingProxy.account <dprec.protocol.engine.ShufflingProxy.account>`)
        over the batches the server recorded, not over the round's senders."""
        return self.local.account(event)


class HttpTransport(Transport):
    """Run a protocol's server and proxy roles as the services at ``server_url`` and
    ``proxy_url``; the simulation holds the operator's ``secret`` (the server's),
    ``operator_secret`` (the proxy's: closing rounds there) and the ``token_key`` its
    clients' tokens derive from."""

    checks_assigned_cells = True
    """The proxy service checks FMF-LDP's ``cells=assigned`` (it is handed the key)."""
    device_clients = True
    """A system whose deployment needs device randomness (a secure sum's,
    :attr:`~dprec.protocol.deployment.Deployment.device_randomness`) simulates its clients
    as devices: each draws its noise share and its sampling from its own CSPRNG, and the
    server starts from its own; nothing the services hold determines a client's noise."""

    def __init__(self, server_url: str, proxy_url: str, secret: bytes, token_key: bytes,
                 retry_for: float = 120.0, concurrency: int = 4,
                 operator_secret: bytes | None = None) -> None:
        self.server_url = server_url.rstrip("/")
        self.operator_secret = operator_secret if operator_secret is not None else secret
        self.proxy_url = proxy_url.rstrip("/")
        self.secret = secret
        self.token_key = token_key
        self.retry_for = retry_for
        self.concurrency = concurrency
        """Submissions in flight at once (one request per client, kept-alive connections)."""
        self._clients: list[httpx.Client | ServerAPI | ProxyAPI | Submissions] = []
        self.remote: tuple[RemoteServer, RemoteProxy] | None = None

    def carry(self, message: Any) -> Any:
        return message  # the stubs moved it as bytes already

    def connect(self, server: Server, proxy: Proxy) -> tuple[Server, Proxy]:
        auth = {"Authorization": "Bearer " + self.secret.decode()}
        server_api = ServerAPI(self.server_url)
        proxy_api = ProxyAPI(self.proxy_url)
        server_admin = keepalive_client(self.server_url, 300.0, headers=auth)
        proxy_admin = keepalive_client(self.proxy_url, 300.0, headers={
            "Authorization": "Bearer " + self.operator_secret.decode()})
        self._clients += [server_api, proxy_api, server_admin, proxy_admin]
        remote_server = RemoteServer(server, server_api, server_admin, self.retry_for)
        self.remote = (remote_server,
                       RemoteProxy(proxy, proxy_api, proxy_admin, self.token_key,
                                   self.retry_for, self.concurrency, remote_server))
        self._clients.append(self.remote[1].submissions)
        return self.remote

    def close(self) -> None:
        for c in self._clients:
            c.close()
        self._clients = []
