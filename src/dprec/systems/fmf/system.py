"""FCF and FMF-LDP as one simulated federated protocol (docs/architecture.md §2).

Each epoch: the server broadcasts V; every client solves its private x_u (client.user_vectors)
and either sends its exact item gradient (FCF, non-private) or k LDP reports of sampled
gradient entries (FMF-LDP, Algorithm 1) through the shuffling proxy; the server estimates the
mean gradient (server.estimate_mean_gradient) and descends ``server_steps`` times.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog, ShuffledReportDpEvent
from dprec.privacy.guarantee import Guarantee, PrivacyReport, reported_epsilon
from dprec.privacy.ledger import PrivacyLedger
from dprec.privacy.shuffle_attack import attack_lower_bound
from dprec.protocol.aggregation import make_aggregator
from dprec.protocol.engine import Clients, ShufflingProxy, Transport, run_protocol
from dprec.protocol.messages import GradientReports, ItemMatrix, ValueReports
from dprec.systems.base import NotFittedError, Ranker, check_history
from dprec.systems.central import factor_scores
from dprec.systems.fmf import cells, client, server
from dprec.systems.fmf.config import MAX_REPORT_SCALE, FMFConfig, Mechanism
from dprec.systems.fmf.defences import FMF_AGGREGATORS
from dprec.systems.reporting import privacy_report_from_log

__all__ = ["CELL_AGGREGATORS", "FMFConfig", "FederatedMF", "MAX_REPORT_SCALE", "Mechanism",
           "THREAT_MODEL", "folded_in_scores"]

log = logging.getLogger(__name__)

CELL_AGGREGATORS = tuple(FMF_AGGREGATORS)
"""The server aggregators of FMF-LDP's cell reports (:mod:`dprec.protocol.aggregation`)."""

THREAT_MODEL = (
    "untrusted server receives, each epoch, k single (item, factor, value) reports per user "
    "through a shuffling proxy that strips identities; x_u never leaves the device"
)




class FederatedMF(Ranker):
    """FCF (``exact=True``) or FMF-LDP; scores are x_u . v_i computed on the device.

    A T-round protocol on the engine: :class:`client.FederatedClients` report through the
    shuffling proxy (FMF-LDP) or straight to :class:`server.FactorServer` (FCF). A user
    unseen at training solves x_u from V and its own history, like every client does.
    """

    networked = True

    def __init__(self, name: str, config: FMFConfig) -> None:
        self.name = name
        self.config = config
        self.V: np.ndarray | None = None
        self._diag: dict[str, object] = {}
        self._n_users = 0
        self.events: EventLog | None = None
        self._rounds: list = []
        self.transport: Transport | None = None
        """How the protocol's messages travel: in this process (None) or between services
        (:class:`~dprec.services.transport.HttpTransport`); the same roles either way."""
        self.clients_hook: Callable[[Clients, int], Clients] | None = None
        """Wraps the simulated population (clients, n_users) before the run, e.g. with
        poisoned clients (:mod:`dprec.protocol.poisoning`); None: the clients as they are."""

    def poisoning_attack(self, poisoning: Any) -> tuple[Any, Any]:
        """The attack on this protocol's reports (:mod:`dprec.systems.fmf.attacks`) and
        ``poisoning`` completed from this config."""
        from dprec.systems.fmf.attacks import attack_for
        return attack_for(self.config, poisoning)

    def _mechanism(self) -> BinaryMechanism | PiecewiseMechanism | None:
        c = self.config
        if c.mechanism == "binary":
            return BinaryMechanism(c.epsilon)
        if c.mechanism == "piecewise":
            return PiecewiseMechanism(c.epsilon)
        return None

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> FederatedMF:
        c = self.config
        n_users, n_items = train.shape
        self._n_users = n_users
        mech = None if c.exact else self._mechanism()
        ledger = PrivacyLedger(c.user_budget, n_users) if c.user_budget is not None else None
        assigned = c.cells == "assigned" and not c.exact
        if assigned and self.transport is not None \
                and not getattr(self.transport, "checks_assigned_cells", False):
            raise DprecError("cells=assigned runs in process or over the services only: the "
                             "sharded backends do not check the assignment; drop --backend "
                             "or use cells=chosen")
        # the proxy's registration key (simulated: from the run's stream; over the services
        # the simulation hands it to the proxy, so both runs assign the same cells)
        key = rng.bytes(32) if assigned else b""
        clients = client.FederatedClients(
            train, factors=c.factors, alpha=c.alpha, reg=c.regularization, k=c.k, clip=c.clip,
            exact=c.exact, mechanism=mech, ledger=ledger, batch_size=c.batch_size,
            cell_tokens=cells.client_tokens(key, np.arange(n_users)) if assigned else None)
        srv = server.FactorServer(n_items, c.factors, c.lr, c.regularization, c.server_steps,
                                  c.clip, c.init_scale, mech,
                                  make_aggregator(c.aggregator, FMF_AGGREGATORS))
        proxy: ShufflingProxy | None = None
        if assigned:
            proxy = cells.CellCheckingProxy(c.shuffle_threshold, key, lambda: srv.V, c.k,
                                            n_items, c.factors)
        elif not c.exact:
            proxy = ShufflingProxy(c.shuffle_threshold)
        self.events = EventLog(n_users)

        def after_round(r: int, V: np.ndarray) -> None:
            self.V = V
            if on_iteration is not None:
                on_iteration(r, V)

        sim = self.clients_hook(clients, n_users) if self.clients_hook else clients
        run = run_protocol(srv, sim, c.epochs, rng, self.events, proxy=proxy,
                           transport=self.transport, on_iteration=after_round)
        self._rounds = run.rounds
        if run.rounds_without_update == c.epochs and not c.allow_no_update:
            why = ("every client was stopped by its ledger (user_budget "
                   f"{c.user_budget} < k x epsilon = {c.k * c.epsilon:g})"
                   if ledger is not None and not clients.reporting_rounds.any()
                   else f"the shuffler refused every round (fewer than shuffle_threshold = "
                        f"{c.shuffle_threshold} senders; {n_users} users)")
            raise DprecError(f"{self.name}: no round reached the server: {why}; fix that, or "
                             "pass --param allow_no_update=true to keep the untrained model")
        if run.rounds_without_update:
            log.warning("%s: %d of %d rounds did not update the model", self.name,
                        run.rounds_without_update, c.epochs)
        self.V = run.broadcast
        if c.exact:
            up = 0.0
        elif isinstance(mech, BinaryMechanism):
            up = float(GradientReports.serialized_size(c.k))
        else:
            up = float(ValueReports.serialized_size(c.k))
        self._diag = {
            "upload_bytes_per_client_epoch": up if run.rounds_without_update < c.epochs else 0.0,
            "paper_upload_bytes_per_client_epoch": 4 * c.k,
            "download_bytes_per_client_epoch": ItemMatrix.serialized_size(n_items, c.factors),
            "paper_download_floats_per_client_epoch": n_items * c.factors,
            "epochs_without_update": run.rounds_without_update,
            "clients_dropped_by_ledger": (int(np.sum(clients.reporting_rounds < c.epochs))
                                          if not c.exact else 0),
            "seconds_by_role": dict(run.seconds),
        }
        if isinstance(proxy, cells.CellCheckingProxy):
            self._diag["messages_refused_by_cell_check"] = proxy.refused
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        return folded_in_scores(self.name, self.V, history, items, users, self.config.alpha,
                                self.config.regularization)

    def diagnostics(self) -> dict[str, object]:
        return dict(self._diag)

    def privacy_report(self) -> PrivacyReport | None:
        c = self.config
        if c.exact or c.mechanism == "none" or self.events is None:
            return None
        mech = self._mechanism()
        assert mech is not None
        # the local reports each user really sent (the log's shuffled reports at their eps0,
        # basic composition): fewer than k x epochs after refused rounds or a spent budget
        spent = PrivacyLedger.from_log(self.events).spent
        epsilon_user = float(spent.max()) if spent.size else 0.0
        claimed = Guarantee(c.k * c.epsilon, level="user", sides="two", model="local",
                            mechanism=f"k={c.k} reports of eps={c.epsilon}",
                            notes=("as published: k x eps; the epochs are left out",))
        report = privacy_report_from_log(
            self.name, THREAT_MODEL, self.events, claimed, (mech.describe(),), delta=c.delta,
            extra={"local": {
                "epsilon_per_report": c.epsilon,
                "epsilon_per_round": c.k * c.epsilon,
                "epsilon_user": epsilon_user,
            }, "rounds": {
                "planned": c.epochs,
                "updated": sum(r.updated for r in self._rounds),
                "senders_per_round": [r.senders for r in self._rounds],
                "shuffle_threshold_senders": c.shuffle_threshold,
            }})
        return self._with_interval(report) if isinstance(mech, BinaryMechanism) else report

    def _with_interval(self, report: PrivacyReport) -> PrivacyReport:
        """Add ``bounds.user`` = {lower, upper, ...}: the attack lower bound beside the
        accountant's upper bound (``levels.user`` and ``true``, unchanged).

        Lower: :func:`~dprec.privacy.shuffle_attack.attack_lower_bound` for the user who reported in
        the most rounds, hidden among the largest round's senders (more rounds or fewer
        senders could only raise it, so this pair is one the run really allows)."""
        c = self.config
        assert self.events is not None
        keys, counts = self.events.count_matrix("user")
        shuffled = [j for j, (e, _) in enumerate(keys) if isinstance(e, ShuffledReportDpEvent)]
        rounds = int(counts[:, shuffled].sum(axis=1).max()) // c.k if shuffled else 0
        senders = max((r.senders for r in self._rounds if r.updated), default=0)
        upper = report.true.epsilon
        if rounds < 1 or senders < 1:
            return report
        lower = attack_lower_bound(c.epsilon, c.k, senders, rounds, c.delta)
        how = (f"exact PLD of one neighbouring pair, composed over {rounds} rounds: every other "
               f"user's clipped gradient entries -1, the target's all +1 vs all -1; the server "
               f"sees the number of +1 reports of a round, Bin(k, P(+1|x)) + "
               f"Bin((n - 1) k, P(+1|-1)), k={c.k}, n={senders} senders (worst-case clipped "
               "gradients, as the upper bound assumes)")
        interval: dict[str, object] = {
            "lower": reported_epsilon(lower, upper=False), "upper": reported_epsilon(upper),
            "delta": c.delta, "level": "user",
            "adjacency": f"{Adjacency.REPLACE_ONE.value} (one user's data replaced)",
            "summary": f"the true user-level eps at delta={c.delta:g} lies in "
                       f"[{lower:.4g}, {upper:.4g}]",
            "lower_from": how,
            "upper_from": "; ".join((report.true.mechanism, *report.true.notes)),
        }
        return replace(report, extra={**report.extra, "bounds": {"user": interval}})


def folded_in_scores(name: str, V: np.ndarray | None, history: sp.csr_matrix,
                     items: np.ndarray | None, users: np.ndarray | None, alpha: float,
                     reg: float) -> np.ndarray:
    """x_u . v_i for the released item factors V: each history row solves its own x_u
    (:func:`client.user_vectors`, the device's fold-in); NotFittedError before fit."""
    if V is None:
        raise NotFittedError(f"{name}: call fit before score")
    history, items, users = check_history(history, V.shape[0], items, users)
    return factor_scores(client.user_vectors(V, history, alpha, reg), V, items)
