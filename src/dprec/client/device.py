"""The client SDK: one user's device in a deployed protocol.

:class:`DeviceClient` reads the server's protocol description under its own
:class:`~dprec.client.policy.DevicePolicy` (never the server's), fetches the server's
artefacts (conditionally, by ETag, each of the exact size N and the config imply), runs the
protocol's client step (its system's descriptor, :mod:`dprec.protocol.deployment`) on the
user's history with a cryptographically secure generator,
keeps the user's privacy ledger on disk (:class:`~dprec.client.ledger.DiskLedger`), submits
through the proxy with its token, and ranks items on the device. The client step is the
simulation's own, run by the system's descriptor on a population of one.

Order of a report, so that no message is ever sent uncharged, a crash never under-charges
the ledger, and no round of a run ever gets two different messages (steps 2 to 4 hold the
ledger's lock, re-read from disk, so two processes on one folder decide one at a time):

1. read the description under the policy (mechanism, noise, sizes) and pin its run
   (:mod:`dprec.client.runs`): refusals here happen before anything is computed;
2. if a message for (run, round) is stored, that message is the report (a re-send, bit for
   bit: after a crash, a timeout, or a server that restarted the round);
3. else check the budget, build the message and store it on disk;
4. charge (run, round) in the ledger (on disk; once per key), then submit.

A 409 on a re-send means the first one had arrived.

Secure-sum systems (dp-pop, dpals, dp-fedavg; issue 31 §3): the terms carry the config the
policy checked (epsilon, delta, ``n_clients``, ``min_honest``); the device fetches the
server's key (artefact ``model``, whose size changes when a round is released) and the
proxy's (``GET /v1/round``), and its descriptor builds the vector on the user's data and
seals it through :class:`~dprec.protocol.secure_sum.client.SecureSumClient` with the
shares drawn from the device's CSPRNG. The run's epsilon is charged once per run, at its
first upload; later rounds of the run are charged 0 under their own keys.

A protocol whose client step needs the device's own secret from the proxy (its descriptor's
:meth:`~dprec.protocol.deployment.Deployment.needs_client_secret`, e.g. FMF-LDP's
``cells=assigned`` token) gets it in step 3 (:meth:`DeviceClient.client_secret`, fetched
once, authenticated with the client's token), and the descriptor checks it into the terms
(:meth:`~dprec.protocol.deployment.Deployment.with_client_secret`). This module knows no
system: what a system's device does is its descriptor's.

A protocol that trains on the user's side features (PrivRec) takes them as ``features=``
of :meth:`DeviceClient.report`, :meth:`~DeviceClient.scores` and
:meth:`~DeviceClient.recommend`; its descriptor checks them
(:meth:`~dprec.protocol.deployment.Deployment.with_side_features`) before anything is
computed, and they never leave the device. A client step may answer None (the round's
server did not select this client): nothing is charged, stored or sent. A report in the
clear to a trusted aggregator is sent only under a policy with ``trust_aggregator``; its
charge (:meth:`~dprec.client.policy.DevicePolicy.cost`, from the run's reports charged
before) is stored with the ledger's note of what it rests on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.client.errors import BadReply, PolicyViolation
from dprec.client.http import ProxyAPI, ServerAPI, ServiceError
from dprec.client.ledger import BudgetExceededError, DiskLedger, private_dir
from dprec.client.policy import DevicePolicy, ProtocolTerms
from dprec.client.randomness import RandomSource, SecureSource
from dprec.client.runs import SentMessages, report_key
from dprec.errors import DprecError
from dprec.protocol.messages import Message
from dprec.protocol.secure_sum.device import proxy_key_of
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.selection import top_k_row
from dprec.systems.deployable import ProtocolInfo

log = logging.getLogger(__name__)

__all__ = ["DeviceClient"]


class DeviceClient:
    """One user: ``client_id`` and its ``token`` (from the operator), the two services, a
    folder for its ledger, pinned run and sent messages, its budget (epsilon per user) and
    its policy (a :class:`DevicePolicy`, a .toml/.json file, or None for the defaults)."""

    def __init__(self, client_id: int, token: str, server: ServerAPI | str,
                 proxy: ProxyAPI | str, state_dir: Path | str, budget: float,
                 source: RandomSource | None = None,
                 policy: DevicePolicy | Path | str | None = None) -> None:
        self.client_id = int(client_id)
        self.token = token
        if policy is None:
            policy = DevicePolicy()
        self.policy = policy if isinstance(policy, DevicePolicy) else DevicePolicy.load(policy)
        self.server = server if isinstance(server, ServerAPI) else ServerAPI(server)
        self.proxy = proxy if isinstance(proxy, ProxyAPI) else ProxyAPI(proxy)
        self.state_dir = private_dir(Path(state_dir))
        self.ledger = DiskLedger(self.state_dir / "ledger.json", budget)
        self.sent = SentMessages(self.state_dir)
        self.source = source or SecureSource()
        self._info: ProtocolInfo | None = None
        self._terms: ProtocolTerms | None = None
        self._client_secret: Mapping[str, Any] | None = None

    def describe(self) -> ProtocolTerms:
        """Fetch the server's description and read it under the policy (refreshing
        :attr:`info` and :attr:`terms`); :class:`BadReply` or :class:`PolicyViolation`."""
        info = self.server.protocol()
        terms = self.policy.read(info)
        self._info, self._terms = info, terms
        return terms

    @property
    def info(self) -> ProtocolInfo:
        """The protocol's public description (fetched once, read under the policy)."""
        if self._info is None:
            self.describe()
        assert self._info is not None
        return self._info

    @property
    def terms(self) -> ProtocolTerms:
        """The description's typed values, within the policy."""
        if self._terms is None:
            self.describe()
        assert self._terms is not None
        return self._terms

    def _history(self, history: object) -> sp.csr_matrix:
        n = self.terms.n_items
        h = sp.csr_matrix(history) if sp.issparse(history) else sp.csr_matrix(
            np.atleast_2d(np.asarray(history, dtype=np.float64)))
        if h.shape != (1, n):
            raise DprecError(f"history must be one row of {n} items, got shape {h.shape}")
        return h

    # -- artefacts ----------------------------------------------------------------------------

    def _artefact(self, name: str) -> bytes:
        t = self.terms
        if t.artefact != name:
            raise DprecError(f"{t.system} publishes {t.artefact}, not {name}")
        if not t.artefact_exact:  # a secure sum's model: its key, later the release
            return self.server.artefact(name, limit=t.artefact_bytes).data
        return self.server.artefact(name, expected=t.artefact_bytes,
                                    expected_what=t.artefact_what).data

    def artefact(self) -> object:
        """The device's artefact of the protocol (e.g. FMF-LDP's V as float64, DPLCF's
        neighbour lists), decoded and checked by the system's descriptor; refetched only
        when changed."""
        t = self.terms
        body = self._artefact(t.artefact)
        if not t.secure_sum:
            return self.info.deployment.decode_artefact(t, body)
        try:
            return self.info.deployment.decode_artefact(t, body)
        except DprecError as e:
            raise BadReply(f"GET /v1/artefacts/{t.artefact}: {e}") from None

    # -- reporting ----------------------------------------------------------------------------

    def join_new_run(self) -> str:
        """Pin the run the server describes now (after :class:`RunChanged`), if the policy
        accepts it; the ledger keeps every charge, so the budget spans the runs."""
        terms = self.describe()
        self.policy.cost(terms)
        return self.sent.pin(self.info)

    def _open_round(self, terms: ProtocolTerms) -> int | None:
        """The proxy's open round, None if none is open; :class:`BadReply` if malformed."""
        state = self.proxy.round()
        started, finished, r = state.get("started"), state.get("finished"), state.get("round")
        if not isinstance(started, bool) or not isinstance(finished, bool):
            raise BadReply(f"the proxy's round state must have booleans started and finished, "
                           f"got {started!r}, {finished!r}")
        if finished or not started:
            return None
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < terms.rounds:
            raise BadReply(f"the proxy's open round must be an integer in [0, {terms.rounds}) "
                           f"for {terms.system}, got {r!r}")
        return r

    def client_secret(self) -> Mapping[str, Any]:
        """What the proxy hands this client alone (e.g. FMF-LDP's cells token), fetched once
        with its token and kept for this object's life (the descriptor checks it when it
        enters the terms). Any secret leaves the report law's privacy intact (a system's
        client step may use it only where the history does not enter); a wrong one only gets
        the report refused."""
        if self._client_secret is None:
            doc = self.proxy.client_secret(self.client_id, self.token)
            if not isinstance(doc, dict):
                raise BadReply(f"the proxy's client secret must be a JSON object, got "
                               f"{type(doc).__name__}")
            self._client_secret = doc
        return self._client_secret

    def proxy_key(self) -> bytes:
        """A secure sum's proxy key, as the proxy publishes it (``GET /v1/round``); the
        seal refuses a low-order key or the server's own (:class:`BadReply`)."""
        return self._proxy_published()[0]

    def _proxy_published(self) -> tuple[bytes, dict[str, Any]]:
        """The proxy's key and all it publishes (``GET /v1/round``)."""
        published = self.proxy.round().get("published")
        try:
            return proxy_key_of(published), dict(published)  # type: ignore[call-overload]
        except DprecError as e:
            raise BadReply(f"GET /v1/round: {e}") from None

    def _with_features(self, terms: ProtocolTerms, features: object) -> ProtocolTerms:
        """``terms`` with the user's side features, checked by the descriptor (a
        :class:`DprecError` for features of the wrong shape or type, or missing where the
        protocol needs them; they never leave the device)."""
        return self.info.deployment.with_side_features(terms, features)

    def _message(self, history: sp.csr_matrix, round: int, terms: ProtocolTerms
                 ) -> bytes | None:
        """The system's client step (its descriptor's), on a fresh secure generator."""
        deployment = self.info.deployment
        if deployment.needs_client_secret(terms):
            try:
                terms = deployment.with_client_secret(terms, self.client_secret())
            except DprecError as e:
                raise BadReply(f"the proxy's client secret: {e}") from None
        if terms.secure_sum:
            key, published = self._proxy_published()
            terms = replace(terms, proxy_key=key, proxy_published=published)
            try:
                return self.info.deployment.client_step(terms, history, round,
                                                        self.source.generator(),
                                                        self.client_id, self.artefact)
            except (BadReply, PolicyViolation):
                raise
            except SecureSumError as e:  # a key the seal refuses
                raise BadReply(f"{terms.system}: {e}") from None
        return self.info.deployment.client_step(terms, history, round,
                                                self.source.generator(), self.client_id,
                                                self.artefact)

    def report(self, history: object, features: object = None) -> bool:
        """Take part in the open round with ``history`` (1 x N, 0/1 or ratings) and, for a
        protocol that trains on them (PrivRec), the user's side ``features``: True once the
        proxy has the report, False if the ledger refuses (budget), the protocol has no
        open round, this client takes no part in it (not selected), or this round's message
        was charged but lost. Safe to call again (after a crash, a timeout, a server
        restart): never charges a message twice, never sends a second, different message
        for a round of a run.

        Raises :class:`PolicyViolation` (a mechanism, noise or size the policy refuses; a
        report in the clear to a trusted aggregator without the policy's
        ``trust_aggregator``), :class:`RunChanged` (another run than the pinned one),
        :class:`BadReply`, or a :class:`DprecError` for a malformed history or features,
        before anything is computed."""
        terms = self.describe()
        cost = self.policy.cost(terms)
        run = self.sent.check(self.info)
        h = self._history(history)
        terms = self._with_features(terms, features)
        r = self._open_round(terms)
        if r is None:
            return False
        key = report_key(run, r)
        with self.ledger.locked():  # another process on this folder waits: one decision
            body = self.sent.message(run, r)
            resend = body is not None and self.ledger.charged(key)
            if terms.trusted_aggregator and not self.ledger.charged(key):
                cost = self.policy.cost(terms, self.ledger.count_under(f"{run}/"))  # grows
            if body is None:
                if self.ledger.charged(key):
                    log.warning("round %d of run %.16s was charged but its message is lost; "
                                "not reporting in it again", r, run)
                    return False
                if terms.secure_sum and self.ledger.charged_under(f"{run}/"):
                    cost = 0.0  # a secure sum's run is charged its epsilon once
                if not self.ledger.can_charge(cost):
                    log.info("not reporting in round %d: %.6g would pass the budget (%.6g of "
                             "%.6g spent)", r, cost, self.ledger.spent, self.ledger.budget)
                    return False
                body = self._message(h, r, terms)
                if body is None:
                    log.info("taking no part in round %d of run %.16s", r, run)
                    return False
                want = terms.upload_bytes(r)
                if len(body) > want or (len(body) != want and self.info.deployment.exact_upload):
                    raise DprecError(f"built a {len(body)}-byte message, expected "
                                     f"{'at most ' * (not self.info.deployment.exact_upload)}"
                                     f"{want}")
                self.sent.store(run, r, body)
            note = self.policy.trust_note(terms) if terms.trusted_aggregator else None
            try:  # False for a re-send: charged when first stored
                self.ledger.charge(key, cost, note)
            except BudgetExceededError as e:
                log.info("not reporting in round %d: %s", r, e)
                return False
        Message.from_bytes(body)  # our own file: refuse to send anything torn
        try:
            self.proxy.submit(r, self.client_id, self.token, body)
        except ServiceError as e:
            if not (e.status == 409 and resend and "already submitted" in e.message):
                raise
        return True

    # -- on-device ranking -------------------------------------------------------------------

    def scores(self, history: object, features: object = None) -> np.ndarray:
        """Every item's score for this user (with its side ``features`` where the protocol
        takes them), computed here from the broadcast."""
        h = self._history(history)
        terms = self._with_features(self.terms, features)
        return self.info.deployment.scores(terms, h, self.artefact())

    def recommend(self, history: object, n: int = 10, exclude_seen: bool = True,
                  features: object = None) -> np.ndarray:
        """The ``n`` best items for this user (best first, ties by the smaller item id), never
        leaving the device."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise DprecError(f"n must be an integer >= 0, got {n!r}")
        h = self._history(history)
        s = self.scores(h, features).astype(np.float64)
        if exclude_seen:
            s[h.indices] = -np.inf
        return top_k_row(s, min(int(n), s.size))
