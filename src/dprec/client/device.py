"""The client SDK: one user's device in a deployed protocol.

:class:`DeviceClient` fetches the server's artefacts (conditionally, by ETag), runs the
protocol's client step on the user's history with a cryptographically secure generator,
keeps the user's privacy ledger on disk (:class:`~dprec.client.ledger.DiskLedger`), submits
through the proxy with its token, and ranks items on the device. The client step is the
simulation's own (:class:`~dprec.systems.fmf.client.FederatedClients`,
:func:`~dprec.systems.dplcf.client.obfuscate`) on a population of one.

Order of a report, so that crashes never under-charge the ledger and never send two
different reports for one round: charge the round in the ledger (on disk), build the
message, write it to disk, submit. A restarted device re-sends the stored message (the same
bytes, no new charge); a 409 on such a re-send means the first one had arrived.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dprec.client.http import ProxyAPI, ServerAPI, ServiceError
from dprec.client.ledger import BudgetExceededError, DiskLedger, atomic_write
from dprec.client.randomness import RandomSource, SecureSource
from dprec.errors import DprecError
from dprec.privacy.ledger import PrivacyLedger
from dprec.protocol.deployed import ProtocolInfo
from dprec.protocol.messages import (
    GradientReports,
    ItemMatrix,
    Message,
    NeighbourLists,
    ValueReports,
)
from dprec.selection import top_k_row
from dprec.systems.dplcf.client import local_scores, obfuscate
from dprec.systems.fmf.client import FederatedClients, check_item_matrix, user_vectors

log = logging.getLogger(__name__)

__all__ = ["DeviceClient"]


class DeviceClient:
    """One user: ``client_id`` and its ``token`` (from the operator), the two services, a
    folder for its ledger and pending message, and its budget (epsilon per user)."""

    def __init__(self, client_id: int, token: str, server: ServerAPI | str,
                 proxy: ProxyAPI | str, state_dir: Path | str, budget: float,
                 source: RandomSource | None = None) -> None:
        self.client_id = int(client_id)
        self.token = token
        self.server = server if isinstance(server, ServerAPI) else ServerAPI(server)
        self.proxy = proxy if isinstance(proxy, ProxyAPI) else ProxyAPI(proxy)
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.ledger = DiskLedger(self.state_dir / "ledger.json", budget)
        self.source = source or SecureSource()
        self._info: ProtocolInfo | None = None

    @property
    def info(self) -> ProtocolInfo:
        """The protocol's public description (fetched once)."""
        if self._info is None:
            self._info = self.server.protocol()
        return self._info

    def _history(self, history: object) -> sp.csr_matrix:
        h = sp.csr_matrix(history) if sp.issparse(history) else sp.csr_matrix(
            np.atleast_2d(np.asarray(history, dtype=np.float64)))
        if h.shape != (1, self.info.n_items):
            raise DprecError(f"history must be one row of {self.info.n_items} items, got "
                             f"shape {h.shape}")
        return h

    # -- artefacts ----------------------------------------------------------------------------

    def item_matrix(self) -> np.ndarray:
        """FMF-LDP's V (float32 on the wire, float64 here), refetched only when changed."""
        art = self.server.artefact("item-matrix")
        m = ItemMatrix.from_bytes(art.data).check_for(self.info.n_items,
                                                       int(self.info.n_factors or 0))
        return m.matrix.astype(np.float64)

    def neighbours(self) -> NeighbourLists:
        """DPLCF's neighbour lists, refetched only when changed."""
        art = self.server.artefact("neighbours")
        need_full = self.info.config.get("neighbourhood") == "user"
        return NeighbourLists.from_bytes(art.data).check_for(self.info.n_items,
                                                              need_full=need_full)

    # -- reporting ----------------------------------------------------------------------------

    def _cost(self) -> float:
        info = self.info
        mech = info.mechanism()
        if mech is None:
            return 0.0
        count = info.k if info.family == "fmf" else info.n_items
        return PrivacyLedger.cost(mech.dp_event(), int(count or 0))

    def _message(self, history: sp.csr_matrix, round: int) -> bytes:
        info = self.info
        rng = self.source.generator()
        if info.family == "dplcf":
            if round != 0:
                raise DprecError(f"DPLCF has one round; the open round is {round}")
            return obfuscate(history, info.mechanism(), rng).to_bytes()  # type: ignore[arg-type]
        c = info.config
        V = check_item_matrix(self.item_matrix(), info.n_items, int(c["factors"]))
        role = FederatedClients(history, factors=int(c["factors"]), alpha=float(c["alpha"]),
                                reg=float(c["regularization"]), k=int(c["k"]),
                                clip=float(c["clip"]), exact=False,
                                mechanism=info.mechanism(),  # type: ignore[arg-type]
                                ledger=None, batch_size=1)
        (batch,) = list(role.step(V, round, rng))
        m = batch.to_messages()[0]
        cls = GradientReports if isinstance(m, GradientReports) else ValueReports
        payload = m.bits if isinstance(m, GradientReports) else m.values
        return cls(self.client_id, m.items, m.factors, payload).to_bytes()

    def report(self, history: object) -> bool:
        """Take part in the open round with ``history`` (1 x N, 0/1 or ratings): True once
        the proxy has the report, False if the ledger refuses (budget) or the protocol has
        no open round. Safe to call again (after a crash, a timeout): never charges twice,
        never sends a second, different report for a round."""
        h = self._history(history)
        state = self.proxy.round()
        if state["finished"] or not state["started"]:
            return False
        r = int(state["round"])
        pending = self.state_dir / f"pending-{r}.msg"
        resend = pending.exists()
        if not resend:
            try:
                self.ledger.charge(f"round-{r}", self._cost())
            except BudgetExceededError as e:
                log.info("not reporting in round %d: %s", r, e)
                return False
            atomic_write(pending, self._message(h, r))
        body = pending.read_bytes()
        Message.from_bytes(body)  # our own file: refuse to send anything torn
        try:
            self.proxy.submit(r, self.client_id, self.token, body)
        except ServiceError as e:
            if not (e.status == 409 and resend and "already submitted" in e.message):
                raise
        for old in self.state_dir.glob("pending-*.msg"):
            if old != pending:
                old.unlink(missing_ok=True)
        return True

    # -- on-device ranking -------------------------------------------------------------------

    def scores(self, history: object) -> np.ndarray:
        """Every item's score for this user, computed here from the broadcast."""
        h = self._history(history)
        info = self.info
        if info.family == "fmf":
            V = self.item_matrix()
            x = user_vectors(V, h, float(info.config["alpha"]),
                             float(info.config["regularization"]))
            return (x @ V.T)[0]
        c = info.config
        return np.asarray(local_scores(h, self.neighbours(), c["neighbourhood"],
                                       int(c["neighbours"]))[0]).ravel()

    def recommend(self, history: object, n: int = 10, exclude_seen: bool = True) -> np.ndarray:
        """The ``n`` best items for this user (best first, ties by the smaller item id), never
        leaving the device."""
        h = self._history(history)
        s = self.scores(h).astype(np.float64)
        if exclude_seen:
            s[h.indices] = -np.inf
        return top_k_row(s, min(int(n), s.size))
