"""DPLCF and its item-CF baselines as one simulated protocol (docs/architecture.md §1).

Clients obfuscate once (client.obfuscate), the server estimates similarities and publishes
neighbour lists (server.*), clients score with their true history (client.local_scores).
The variants differ only in the flip mechanism and the server's estimator:

| system     | flip        | estimator |
|------------|-------------|-----------|
| lcf-ub     | none        | naive (exact Jaccard on true data) |
| lcf-sp/ap  | sym / asym  | naive (Jaccard on obfuscated data) |
| dplcf-sp/ap| sym / asym  | unbiased (A^-1 m) |
| dplcf-oue  | OUE         | unbiased |
| dplcf-eb   | sym         | eb (empirical-Bayes shrinkage of n_hat11) |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.protocol.aggregation import make_aggregator
from dprec.protocol.engine import Clients, Transport, run_protocol
from dprec.systems.base import NotFittedError, Ranker, check_history
from dprec.systems.dplcf import client, server
from dprec.systems.dplcf.config import Flip, LocalItemCFConfig
from dprec.systems.dplcf.defences import DPLCF_AGGREGATORS
from dprec.systems.dplcf.messages import NeighbourLists
from dprec.systems.reporting import privacy_report_from_log

__all__ = ["Flip", "LocalItemCF", "LocalItemCFConfig", "THREAT_MODEL"]


THREAT_MODEL = (
    "untrusted server sees each user's obfuscated N-bit vector once; neighbour lists are "
    "user-independent; scoring happens on the device with the true history"
)



class LocalItemCF(Ranker):
    """Item-CF where the server only sees (obfuscated) bit vectors and clients score locally.

    The protocol is one round of the engine: :class:`client.ObfuscatingClients` upload,
    :class:`server.SimilarityServer` publishes neighbour lists. Scoring needs only the
    broadcast and the user's own history, so users unseen at training are scored too.
    """

    networked = True

    def __init__(self, name: str, config: LocalItemCFConfig) -> None:
        self.name = name
        self.config = config
        self.mechanism = config.mechanism()
        self._broadcast: NeighbourLists | None = None
        self._n_items: int | None = None
        self._diag: dict[str, object] = {}
        self.events: EventLog | None = None
        self.transport: Transport | None = None
        """How the protocol's messages travel: in this process (None) or between services
        (:class:`~dprec.services.transport.HttpTransport`); the same roles either way."""
        self._capped_users = 0
        self.clients_hook: Callable[[Clients, int], Clients] | None = None
        """Wraps the simulated population (clients, n_users) before the run, e.g. with
        poisoned clients (:mod:`dprec.protocol.poisoning`); None: the clients as they are."""

    def poisoning_attack(self, poisoning: Any) -> tuple[Any, Any]:
        """The attack on this protocol's uploads (:mod:`dprec.systems.dplcf.attacks`) and
        ``poisoning`` for it."""
        from dprec.systems.dplcf.attacks import attack_for
        return attack_for(poisoning)

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> LocalItemCF:
        cfg = self.config
        n_users, n_items = train.shape
        if cfg.neighbours >= n_items:
            raise DprecError(
                f"neighbours must be < number of items ({n_items}), got {cfg.neighbours}")
        clients = client.ObfuscatingClients(train, self.mechanism, cfg.batch_size,
                                            history_cap=cfg.history_cap)
        srv = server.SimilarityServer(n_items, self.mechanism, cfg.estimator, cfg.neighbours,
                                      cfg.neighbourhood == "user",
                                      make_aggregator(cfg.aggregator, DPLCF_AGGREGATORS),
                                      history_cap=cfg.history_cap)
        self._capped_users = (0 if cfg.history_cap is None else
                              int((np.diff(train.indptr) > cfg.history_cap).sum()))
        self.events = EventLog(n_users)
        sim = self.clients_hook(clients, n_users) if self.clients_hook else clients
        run = run_protocol(srv, sim, 1, rng, self.events, transport=self.transport,
                           on_iteration=on_iteration)
        if run.rounds_without_update:
            raise DprecError(f"{self.name}: no upload reached the server ({n_users} users)")
        run.broadcast.check_for(n_items, need_full=cfg.neighbourhood == "user")
        self._broadcast = run.broadcast
        self._n_items = n_items
        est = srv.estimate
        assert est is not None
        self._diag = {
            "clipped_pairs": est.clipped,
            "clipped_fraction": est.clipped / float(n_items * n_items),
            "upload_bytes_per_user": clients.upload_bytes / max(1, n_users),
            "download_bytes": self._broadcast.nbytes,
            "seconds_by_role": dict(run.seconds),
        }
        if est.shrinkage_phi is not None:
            self._diag["shrinkage_phi"] = est.shrinkage_phi
        if cfg.aggregator != "mean" or cfg.history_cap is not None:
            agg = srv.aggregator
            self._diag["aggregator"] = agg.spec
            self._diag["uploads_counted"] = srv.users_received
            for key in ("refused", "dropped"):
                if hasattr(agg, key):
                    self._diag[f"uploads_{key}"] = int(getattr(agg, key))
            self._diag["capped_users"] = self._capped_users
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if self._broadcast is None or self._n_items is None:
            raise NotFittedError(f"{self.name}: call fit before score")
        history, items, users = check_history(history, self._n_items, items, users)
        return client.local_scores(history, self._broadcast, self.config.neighbourhood,
                                   self.config.neighbours, items)

    @property
    def broadcast(self) -> NeighbourLists | None:
        return self._broadcast

    def diagnostics(self) -> dict[str, object]:
        return dict(self._diag)

    def privacy_report(self) -> PrivacyReport | None:
        if self.mechanism is None or self.events is None:
            return None
        mech = self.mechanism
        claimed = Guarantee(self.config.epsilon, level="event", sides="two", model="local",
                            mechanism=mech.name,
                            notes=("as published: eps-LDP per interaction bit",))
        return privacy_report_from_log(self.name, THREAT_MODEL, self.events, claimed,
                                       (mech.describe(),), true_level="event")
