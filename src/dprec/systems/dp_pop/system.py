"""dp-pop and ldp-pop: item popularity with a user-level guarantee, one list for every user.

dp-pop (issue 23 §3): each user contributes a k-hot vector (:mod:`.client`); one round of
summation with Skellam noise (:mod:`.server`) calibrated to the target per-user ``epsilon``
at ``delta``, where a k-hot vector has L1 sensitivity ``k`` and L2 sensitivity ``sqrt(k)``
and differs from the zero vector by +1 in k coordinates: accounted by
:class:`~dprec.privacy.pld_accountant.PldAccountant` from the run's event log (the exact PLD of k
unit shifts of Skellam noise; AKL21's RDP bound where smaller). The neighbouring relation
(:func:`adjacency_of`): ``secure``, zero-out (one user's vector replaced by zeros while their
device still sends its noise share, so both sides carry the same noise; under add/remove the
share would leave with the user and the two sums would carry different noise); ``trusted``,
add/remove one user (one central draw, independent of the data). The numbers are the same.
Both aggregations run on the round engine (:func:`~dprec.protocol.engine.run_protocol`) with
the same clients; ``trusted`` differs only in that the clients add no share and the server's
curator (:class:`~dprec.protocol.secure_sum.curator.Curator`) adds ``Sk(mu)``, so the
privacy report's events come from the engine's log either way.

ldp-pop: padding-and-sampling (Wang, Li, Jha, IEEE S&P 2018): a user pads their item set to
``pad`` with dummies (or samples ``pad`` of their items), picks one of the ``pad`` uniformly
and reports it by optimised unary encoding (Wang et al., USENIX Security 2017) over the
items plus one dummy value: one pure eps-LDP report per user. Counts are estimated as
``pad (c_i - n q) / (p - q)``.

Both publish a ranking (:func:`~dprec.systems.dp_pop.server.rank_items`); a user's score of
an item is minus its position, so every user gets the same list (the evaluation drops the
user's own training items, as for the popularity baseline).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.mechanisms.bitflip import BitFlip
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog, LocalReportDpEvent
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.privacy.pld_accountant import PldAccountant
from dprec.protocol.engine import Clients, run_protocol
from dprec.protocol.secure_sum.checks import validity_details
from dprec.protocol.secure_sum.curator import Curator
from dprec.protocol.secure_sum.in_process import total_outcomes
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.systems.base import NotFittedError, Ranker, check_history
from dprec.systems.dp_pop.calibration import (
    RoundCalibration,
    calibrate,
    contribution_check,
    round_check,
)
from dprec.systems.dp_pop.client import PopClients, no_proxy_key
from dprec.systems.dp_pop.config import DpPopConfig, LdpPopConfig
from dprec.systems.dp_pop.messages import PopularityModel
from dprec.systems.dp_pop.proxy import ExactSumProxy
from dprec.systems.dp_pop.server import PopularityServer, rank_items
from dprec.systems.reporting import (
    check_shares,
    privacy_report_from_log,
    secure_sum_report,
    share_record,
    simulation_only,
)

__all__ = ["DpPop", "DpPopConfig", "LdpPop", "LdpPopConfig", "SECURE_THREAT_MODEL",
           "TRUSTED_THREAT_MODEL", "adjacency_of"]

SECURE_THREAT_MODEL = (
    "secure sum: the server learns only the sum of the clients' noisy k-hot vectors; the "
    "server and the shuffling proxy do not collude; a coalition of the server and some "
    "clients learns only the sum of the others; the guarantee holds while at least "
    "min_honest clients are honest and contribute (their noise shares alone reach mu); "
    "zero-out adjacency: every enrolled device sends its noise share in the round, also one "
    "with no data, so a user's neighbour (their vector replaced by zeros) carries the same "
    "noise; a device that drops out takes its share with it, which the contributor count "
    "accounts for"
)
MALICIOUS_CLIENT = {
    "none": "a malicious client's contribution is not checked (shares mod q)",
    "prio3": "validity=prio3: in process the proof's predicate is applied to each "
             "plaintext vector; over the services every upload proves (Prio3, verified "
             "jointly by the proxy and the server, soundness 2^-128 or better) that each "
             "coordinate is in [-T, 1 + T], its sum in [-S, k + S] and ||y||^2 <= B2 "
             "(the numbers under validity); an invalid upload is refused with its reason "
             "and the round releases the rest. A malicious client can still send any "
             "vector inside those bounds: at ML-100K's setting (k = 50, n = 1,000, "
             "epsilon 1: T = 15, S = 341, B2 = 2,838) raise about 11 items by 16 each, or "
             "+1 on up to k + S = 391 items, or lower items by up to 15, and leave out "
             "its own noise (privacy rests on min_honest); it cannot shift every count by "
             "q/2 (docs/secure_sum.md, 'What a malicious client can still do')",
}
"""What the report says a malicious client can do, by ``validity``."""
TRUSTED_THREAT_MODEL = (
    "central: a trusted curator sees every user's k-hot vector, sums them and adds one "
    "Skellam draw; DP protects what the published ranking reveals; add/remove-one-user "
    "adjacency (the one draw does not depend on who is present)"
)
LDP_THREAT_MODEL = (
    "local: the untrusted server sees each user's one OUE report (padding-and-sampling)"
)


def validity_record(check: ContributionCheck | None) -> dict[str, object]:
    """The run JSON's record of the check (its bounds and what the truncation costs)."""
    if check is None:
        return {"check": "none"}
    c, tr = check.circuit, check.truncation
    assert tr is not None
    return {"check": "prio3 (plaintext predicate in process)", "coordinate_range":
            [c.low, c.high], "sum_range": list(c.sum_range) if c.sum_range else None,
            "l2_bound_sq": c.l2_bound_sq, "T": tr.coordinate_bound, "S": tr.sum_bound,
            "honest_refusal_bound": tr.total_tv + tr.clients * check.l2_tv,
            "note": "every honest share, simulated or on a device, is Skellam redrawn "
                    "until it meets T, S and B2: within total variation n (eta + eta_2) "
                    "of the untruncated share (delta_cost adds (1 + e^eps) times that to "
                    "delta)"}


def adjacency_of(aggregation: str) -> Adjacency:
    """The relation dp-pop is accounted under: zero-out for the secure sum (each client's
    noise share stays in the sum whatever its data), add/remove one user for the trusted
    curator's one draw (module docstring; the same epsilon for the same mu)."""
    return Adjacency.ZERO_OUT if aggregation == "secure" else Adjacency.ADD_REMOVE_ONE



class _RankedList(Ranker):
    """Scores = minus the item's position in one published ranking."""

    _rank_score: np.ndarray | None = None

    def _publish(self, counts: np.ndarray) -> None:
        self.noisy_counts = counts
        self.ranking = rank_items(counts)
        score = np.empty(counts.size, dtype=np.float64)
        score[self.ranking] = -np.arange(counts.size, dtype=np.float64)
        self._rank_score = score

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if self._rank_score is None:
            raise NotFittedError(f"{self.name}: call fit before score")
        s = self._rank_score
        history, items, users = check_history(history, s.size, items, users)
        if items is not None:
            return s[items]
        return np.broadcast_to(s, (history.shape[0], s.size)).copy()


class DpPop(_RankedList):
    """dp-pop (module docstring). ``transport`` (None: in process) carries the round:
    ``dprec simulate --transport http`` runs the secure path through the services, where the
    clients' uploads are the cryptographic secure sum's; a sharded backend (``dprec run
    --backend``) sums the clients' vectors in shards, for either aggregation."""

    networked = True
    transport: Any = None

    def __init__(self, name: str, config: DpPopConfig) -> None:
        self.name = name
        self.config = config
        self.events: EventLog | None = None
        self._timestamps: sp.csr_matrix | None = None
        self._fit_info: dict[str, object] = {}
        self._round: RoundCalibration | None = None
        self.clients_hook: Callable[[Clients, int], Clients] | None = None
        """Wraps the simulated clients, e.g. malicious ones of a secure sum
        (:func:`dprec.protocol.sum_poisoning.poison_sum`)."""

    @property
    def uses_timestamps(self) -> bool:
        """``sampling="recency"`` picks each user's k latest items."""
        return self.config.sampling == "recency"

    def set_timestamps(self, timestamps: sp.csr_matrix) -> None:
        """Each (user, item) interaction's time, for ``sampling="recency"`` (before fit)."""
        self._timestamps = sp.csr_matrix(timestamps)

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DpPop:
        """One round on the engine: the clients' k-hot vectors (with secure aggregation each
        plus its noise share), the in-process proxy's exact sum (or ``transport``'s), and
        the server's release (with ``aggregation=trusted`` its curator adds ``Sk(mu)``)."""
        c = self.config
        n, d = train.shape
        if c.n_clients is not None and c.n_clients != n:
            raise DprecError(f"n_clients = {c.n_clients}, but the training data has {n} "
                             "users: drop n_clients or match it")
        cal = calibrate(c, d, n)
        secure = c.aggregation == "secure"
        if secure:
            check_shares("counts", cal.mu, cal.share.mu, cal.min_honest)
        self._round = cal
        check = round_check(cal, d) if secure and c.validity == "prio3" else None
        threshold = cal.min_honest if secure else 1
        server = PopularityServer(d, n, threshold, cal.params, cal.share, check,
                                  None if secure else Curator(cal.mu))
        proxy = ExactSumProxy(threshold, check)
        clients = PopClients(train, np.arange(n), c.k, c.sampling,
                             cal.share if secure else None,
                             cal.mechanism.dp_event(cal.l1, cal.l2, int(cal.l1)),
                             (lambda: proxy.public_key) if secure else no_proxy_key,
                             cal.params if secure else None, self._timestamps,
                             devices=bool(getattr(self.transport, "device_clients", False)),
                             check=self._check(d, n) if secure else None, truncate=check)
        sim = self.clients_hook(clients, n) if self.clients_hook else clients
        self.events = EventLog(n)
        run = run_protocol(server, sim, 1, rng, self.events, proxy, self.transport)
        if not run.rounds or not run.rounds[0].updated:
            raise DprecError(f"the round released nothing: fewer than min_honest = "
                             f"{threshold} clients contributed")
        model = run.broadcast
        assert isinstance(model, PopularityModel)
        self._publish(model.counts.astype(np.float64))
        self._fit_info = self._info(cal, int(model.contributors), proxy, check, train)
        if on_iteration is not None:
            on_iteration(0, self)
        return self

    def _info(self, cal: RoundCalibration, contributors: int, proxy: ExactSumProxy,
              check: ContributionCheck | None, train: sp.csr_matrix) -> dict[str, object]:
        """The run's diagnostics: the round's numbers, and what the secure sum counted or
        (trusted) what the clients contributed."""
        n, d = train.shape
        info: dict[str, object] = {"n_clients": n, "n_items": d, "mu": cal.mu}
        if self.config.aggregation == "trusted":
            rows = sp.csr_matrix(train, copy=True)
            rows.eliminate_zeros()
            rows.sum_duplicates()
            contributed = int(np.minimum(np.diff(rows.indptr), self.config.k).sum())
            return {**info, "total_mu": cal.mu, "min_honest": None,
                    "l1_sensitivity": cal.l1, "l2_sensitivity": cal.l2,
                    **simulation_only(contributed_items=contributed)}
        return {**info, "total_mu": cal.share.mu * contributors, "min_honest": cal.min_honest,
                "contributors": contributors, "batches": len(proxy.batches),
                "upload_outcomes": total_outcomes(proxy.outcomes),
                "refused_reasons": dict(proxy.refused_reasons),
                "validity": validity_record(check),
                "l1_sensitivity": cal.l1, "l2_sensitivity": cal.l2}

    def _check(self, n_items: int, n_clients: int) -> ContributionCheck | None:
        """The validity check the clients prove over the services (None in process or
        with ``validity = none``)."""
        if self.transport is None:
            return None
        return contribution_check(self.config, n_items, n_clients)

    def diagnostics(self) -> dict[str, object]:
        return dict(self._fit_info)

    def _secure_sum_params(self) -> dict[str, object]:
        info, cal = self._fit_info, self._round
        assert cal is not None
        p = cal.params
        return {**p.to_json(), "q": p.modulus, "q_bits": p.bits, "m": p.shares,
                "gamma": p.gamma, "contributors": info["contributors"],
                "batches": info["batches"],
                "note": "parameters of the round's secure sum (clip 1 in L-inf: a k-hot "
                        "coordinate is 0 or 1; gamma = 1; m = 2 additive shares, one to the "
                        "proxy and one to the server); one batch per round. In process the "
                        "proxy forwards the exact integer sum the secure sum yields; over "
                        "the services the uploads are sealed and the server opens the sum"}

    def _validity_details(self) -> dict[str, object]:
        """``validity``: the check and its cost (:func:`validity_details`)."""
        c, info = self.config, self._fit_info
        check = contribution_check(c, int(info["n_items"]),  # type: ignore[call-overload]
                                   int(info["n_clients"]))  # type: ignore[call-overload]
        assert check is not None
        return validity_details([check], c.epsilon, c.delta)

    def privacy_report(self) -> PrivacyReport | None:
        if self.events is None:
            return None
        c, info = self.config, self._fit_info
        secure = c.aggregation == "secure"
        mu, l1, l2 = info["mu"], info["l1_sensitivity"], info["l2_sensitivity"]
        mechanisms: tuple[dict[str, object], ...] = (
            {"name": "skellam", "mu": mu, "variance": 2 * float(mu),  # type: ignore[arg-type]
             "l1_sensitivity": l1, "l2_sensitivity": l2, "k": c.k, "sampling": c.sampling,
             "aggregation": c.aggregation,
             **({**share_record(float(mu), self._round.share.mu,  # type: ignore[arg-type, union-attr]
                                int(info["min_honest"])),  # type: ignore[call-overload]
                 "total_mu": info["total_mu"]} if secure else {})},)
        return secure_sum_report(
            self.name, aggregation=c.aggregation, epsilon=c.epsilon, delta=c.delta,
            log=self.events, threat_models=(SECURE_THREAT_MODEL, TRUSTED_THREAT_MODEL),
            mechanisms=mechanisms,
            contribution_bound=f"a k-hot vector over items, k = {c.k} ({c.sampling}); "
                               f"L1 = {l1:g}, L2 = {l2:.6g} under "
                               f"{adjacency_of(c.aggregation).describe()}",
            assumptions={
                "min_honest": info["min_honest"], "n_clients": info["n_clients"],
                "contributors": info.get("contributors"),
                "server_proxy_collusion": False,
                "notes": ["the noise protecting a user is the sum of the honest clients' "
                          "shares: at least min_honest shares of Sk(mu / min_honest); the "
                          "proxy releases a round only once min_honest clients contributed "
                          "and the server refuses a sum of fewer",
                          "zero-out adjacency: a user's neighbour replaces their k-hot vector "
                          "by zeros while their device still sends its noise share (every "
                          "enrolled device sends one, also one with no data), so both "
                          "neighbouring sums carry the same noise; a device that drops out "
                          "takes its share with it: contributors counts the clients whose "
                          "shares the server summed, total_mu = contributors x share_mu, and "
                          "the guarantee holds while at least min_honest of them are honest",
                          "the server sees the sum of the contributors' noisy vectors only "
                          "(one batch per round); the proxy sees senders and mask seeds",
                          MALICIOUS_CLIENT[c.validity]],
            },
            details=self._validity_details() if secure and c.validity == "prio3" else None,
            secure_sum=self._secure_sum_params,
            accountant=PldAccountant(adjacency=adjacency_of(c.aggregation)))


class LdpPop(_RankedList):
    """ldp-pop (module docstring)."""

    def __init__(self, name: str, config: LdpPopConfig) -> None:
        self.name = name
        self.config = config
        self.events: EventLog | None = None

    def mechanism(self) -> BitFlip:
        """OUE at the per-user epsilon (replace one value: ln p/q + ln (1-q)/(1-p) = eps)."""
        return BitFlip.oue(self.config.epsilon)

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> LdpPop:
        csr = sp.csr_matrix(train)
        csr.eliminate_zeros()
        n, d = csr.shape
        pad = int(self.config.pad)
        sizes = np.diff(csr.indptr)
        # padding-and-sampling: a real item w.p. min(|S|, l) / l, uniform among S; else dummy
        real = rng.random(n) < np.minimum(sizes, pad) / pad
        pick = csr.indptr[:-1] + np.floor(rng.random(n) * np.maximum(sizes, 1)).astype(np.int64)
        value = np.where(real & (sizes > 0), csr.indices[np.minimum(pick, csr.nnz - 1)], d)
        onehot = sp.csr_matrix((np.ones(n, np.int8), (np.arange(n), value)), shape=(n, d + 1))
        mech = self.mechanism()
        ones = np.asarray(mech(onehot, rng).sum(axis=0), dtype=np.float64).ravel()
        estimate = pad * (ones - n * mech.q) / (mech.p - mech.q)
        self.events = EventLog(n)
        self.events.record(0, LocalReportDpEvent(self.config.epsilon), np.arange(n))
        self._publish(estimate[:d])
        if on_iteration is not None:
            on_iteration(0, self)
        return self

    def privacy_report(self) -> PrivacyReport | None:
        if self.events is None:
            return None
        mech = self.mechanism()
        claimed = Guarantee(self.config.epsilon, 0.0, "user", "two", "local",
                            "padding-and-sampling + OUE")
        return privacy_report_from_log(
            self.name, LDP_THREAT_MODEL, self.events, claimed,
            ({"name": "padding-and-sampling + oue", "pad": self.config.pad, "p": mech.p,
              "q": mech.q},),
            extra={"contribution_bound": "one item (or a dummy) per user, OUE over the items "
                                         "plus one dummy value; replace-one adjacency"})
