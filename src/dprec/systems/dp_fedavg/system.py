"""dp-fedavg: user-level DP-FedAvg (McMahan, Ramage, Talwar, Zhang, ICLR 2018) on FCF's
federated implicit MF, with the clients' updates summed by the secure sum and noised by
their Skellam shares (Agarwal, Kairouz, Liu, NeurIPS 2021); issue 24 §2.

FCF's round loop on the engine (:func:`dprec.protocol.engine.run_protocol`): the server
broadcasts V; every client solves its own x_u, computes its item gradient, clips it in L2,
quantises it and, if its own coin (rate q, Poisson sampling) says so, contributes it; every
client adds its noise share (:mod:`.client`); the server divides the noisy integer sum by
``gamma q N`` and takes FCF's descent step (:mod:`.server`). The noise ``mu`` is calibrated
so that ``rounds`` sampled releases meet the target per-user epsilon (:mod:`.accounting`),
and the event log records one sampled release per client and round, composed by
:class:`~dprec.privacy.sampled_skellam.SampledSkellamAccountant`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import InvalidParameterError
from dprec.iteration import IterationHook
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import PrivacyReport
from dprec.privacy.sampled_skellam import (
    SampledSkellamAccountant,
    gaussian_reference_epsilon,
    sampled_epsilon,
)
from dprec.privacy.skellam import SkellamDpEvent
from dprec.protocol.engine import run_protocol
from dprec.protocol.secure_sum.checks import PROVED_CLIENT, validity_details
from dprec.protocol.secure_sum.in_process import total_outcomes
from dprec.systems.base import Ranker
from dprec.systems.dp_fedavg.accounting import sampled_event, update_sensitivity
from dprec.systems.dp_fedavg.client import FedAvgClients
from dprec.systems.dp_fedavg.config import Aggregation, DpFedAvgConfig
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.dp_fedavg.plan import FedAvgPlan, plan_of, update_check
from dprec.systems.dp_fedavg.proxy import FedAvgSumProxy
from dprec.systems.dp_fedavg.server import FedAvgServer
from dprec.systems.fmf.system import folded_in_scores
from dprec.systems.reporting import (
    check_shares,
    secure_sum_report,
    share_record,
    simulation_only,
)

__all__ = ["Aggregation", "DpFedAvg", "DpFedAvgConfig", "SECURE_THREAT_MODEL",
           "TRUSTED_THREAT_MODEL"]


SECURE_THREAT_MODEL = (
    "secure sum: every client uploads each round (its quantised clipped item gradient if its "
    "own coin sampled it, else zeros, plus its Skellam share); the server learns only the sum "
    "and not who was sampled; user vectors never leave the device; the server and the "
    "shuffling proxy do not collude; a coalition of the server and some clients learns only "
    "the sum of the others; the guarantee holds while at least min_honest clients are honest "
    "and upload (their shares alone reach mu)"
)
TRUSTED_THREAT_MODEL = (
    "central: a trusted curator samples the clients (Poisson, rate q), sums their quantised "
    "clipped item gradients and adds one Skellam draw per round; DP protects what the "
    "published item factors reveal (each user's own vector stays on the device)"
)



class DpFedAvg(Ranker):
    """dp-fedavg (module docstring); scores are x_u . v_i, x_u solved on the device.
    ``transport`` (None: in process) carries the rounds, with the same numbers as in
    process: the services (``dprec simulate dp-fedavg --transport http``: each round a
    cryptographic secure sum, :mod:`.deploy`) or a sharded backend (``dprec run --backend
    local|ray``: the clients' integer vectors summed in the shards)."""

    networked = True
    transport: Any = None

    def __init__(self, name: str, config: DpFedAvgConfig) -> None:
        self.name = name
        self.config = config
        self.V: np.ndarray | None = None
        self.events: EventLog | None = None
        self._info: dict[str, object] = {}
        self._plan: FedAvgPlan | None = None

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DpFedAvg:
        c = self.config
        n, n_items = train.shape
        if c.min_honest is not None and c.min_honest > n:
            raise InvalidParameterError(f"min_honest must be <= the number of clients ({n}), "
                                        f"got {c.min_honest}")
        if c.n_clients is not None and c.n_clients != n:
            raise InvalidParameterError(f"n_clients = {c.n_clients}, but the training data has "
                                        f"{n} users: drop n_clients or match it")
        plan = plan_of(c, n_items, n)
        dim, gamma, mu = plan.dimension, plan.gamma, plan.mu
        if plan.share_mu is not None and plan.min_honest is not None:
            check_shares("update", mu, plan.share_mu, plan.min_honest)
        event = sampled_event(mu, dim, c.clip, gamma, c.rate)
        secure = c.aggregation == "secure"
        srv = FedAvgServer(n_items, c.factors, c.lr, c.reg, c.server_steps, c.init_scale,
                           gamma, c.rate * n, None if secure else mu, plan.params,
                           plan.min_honest or 1, n)
        check = update_check(plan, c.clip) if secure and c.validity == "prio3" else None
        proxy = FedAvgSumProxy(plan.min_honest or 1)  # honest clients only (``validity``)
        clients = FedAvgClients(
            train, factors=c.factors, alpha=c.alpha, reg=c.reg, clip=c.clip, gamma=gamma,
            rate=c.rate, share_mu=plan.share_mu, event=event, batch_size=c.batch_size,
            params=plan.params, proxy_key=lambda: proxy.public_key,
            devices=bool(getattr(self.transport, "device_clients", False)), check=check)
        self.events = EventLog(n)

        def after_round(r: int, model: FedAvgModel) -> None:
            self.V = model.factors_matrix
            if on_iteration is not None:
                on_iteration(r, self.V)

        run = run_protocol(srv, clients, c.rounds, rng, self.events, proxy, self.transport,
                           after_round)
        self.V = run.broadcast.factors_matrix
        self._plan = plan
        l1, l2 = update_sensitivity(dim, c.clip, gamma)
        self._info = {
            "n_clients": n, "n_items": n_items, "dimension": dim, "gamma": gamma, "mu": mu,
            "l1_sensitivity": l1, "l2_sensitivity": l2,
            "noise_std_clip_units": math.sqrt(2 * mu) / (gamma * c.clip),
            "noise_std_on_mean_gradient": math.sqrt(2 * mu) / (gamma * c.rate * n),
            "expected_contributors": c.rate * n,
            **simulation_only(sampled_per_round=(
                list(clients.sampled_per_round)
                if len(clients.sampled_per_round) == c.rounds else None)),
            "rounds_without_update": run.rounds_without_update,
            "upload_outcomes": total_outcomes(proxy.outcomes),
            "refused_reasons": dict(proxy.refused_reasons),
            "seconds_by_role": dict(run.seconds),
        }
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        return folded_in_scores(self.name, self.V, history, items, users, self.config.alpha,
                                self.config.reg)

    def diagnostics(self) -> dict[str, object]:
        return dict(self._info)

    def _secure_sum_params(self) -> dict[str, object]:
        assert self._plan is not None and self._plan.params is not None
        p = self._plan.params
        return {**p.to_json(), "q": p.modulus, "m": p.shares,
                "note": ("parameters of each round's secure sum over all N clients (each "
                         "uploads every round); the in-process simulation takes the exact "
                         "integer sum the secure sum yields")}

    def privacy_report(self) -> PrivacyReport | None:
        if self.events is None:
            return None
        c, info = self.config, self._info
        secure = c.aggregation == "secure"
        n = int(info["n_clients"])  # type: ignore[call-overload]
        honest = (c.min_honest or n) if secure else None
        mechanism = {"name": "skellam", "mu": info["mu"], "variance": 2 * info["mu"],  # type: ignore
                     "l1_sensitivity": info["l1_sensitivity"],
                     "l2_sensitivity": info["l2_sensitivity"], "rounds": c.rounds,
                     "sampling": "poisson", "rate": c.rate, "aggregation": c.aggregation,
                     **(share_record(info["mu"], self._plan.share_mu, honest)  # type: ignore
                        if secure else {})}
        details: dict[str, object] = {
            "sampling": {
                "kind": "poisson", "rate": c.rate, "expected_contributors": c.rate * n,
                "accounting": ("PoissonSampledDpEvent(q, SkellamDpEvent) per round: Zhu & Wang "
                               "ICML 2019 Thm 6 general upper bound on the AKL21 Skellam RDP"
                               if c.rate < 1 else "q = 1: every client every round, no "
                               "amplification"),
                "coin": ("each client's own, kept on the device; every client uploads (zeros "
                         "if unsampled) so the server cannot tell who was sampled"
                         if secure else "drawn by the trusted curator"),
                **({"analysis_gap": _analysis_gap(c, info)} if c.rate < 1 else {}),
            },
            "adjacency_note": (
                "zero-out: one user's data present or replaced by zeros, its device still "
                "uploading its noise share (the participant list is public); with Poisson "
                "sampling this is the add/remove pair of the subsampled release"
                if secure else "add/remove one user's data (the curator's noise is fixed)"),
        }
        proved = secure and c.validity == "prio3"
        if proved:
            assert self._plan is not None
            details.update(validity_details([update_check(self._plan, c.clip)] * c.rounds,
                                            c.epsilon, c.delta))
        return secure_sum_report(
            self.name, aggregation=c.aggregation, epsilon=c.epsilon, delta=c.delta,
            log=self.events, threat_models=(SECURE_THREAT_MODEL, TRUSTED_THREAT_MODEL),
            mechanisms=(mechanism,), details=details,
            contribution_bound=(
                f"per round: the item gradient (N F = {info['dimension']} coordinates) scaled "
                f"to L2 norm <= clip = {c.clip:g}, quantised at gamma = {info['gamma']:.6g} "
                "by randomised rounding; Delta_2 = gamma C + sqrt(N F), Delta_1 = min(sqrt(N F) "
                "Delta_2, Delta_2^2) against the zero vector (dprec.systems.dp_fedavg."
                "accounting)"),
            assumptions={
                "min_honest": honest, "n_clients": n, "server_proxy_collusion": False,
                "notes": ["the noise protecting a user is the sum of the honest clients' "
                          "shares: at least min_honest shares of Sk(mu / min_honest)",
                          PROVED_CLIENT if proved else
                          "a malicious client's contribution is not checked (shares mod q)",
                          "a user's own vector is solved on the device, never sent"],
            },
            secure_sum=self._secure_sum_params,
            accountant=SampledSkellamAccountant(
                Adjacency.ZERO_OUT if secure else Adjacency.ADD_REMOVE_ONE))


def _analysis_gap(c: DpFedAvgConfig, info: dict[str, Any]) -> dict[str, object]:
    """How loose this run's sampled bound is (issue 33 §5): the run's epsilon under the sound
    bound against dp-accounting's PLD of the Poisson-subsampled Gaussian of the same variance
    (:func:`~dprec.privacy.sampled_skellam.gaussian_reference_epsilon`; a reference, not a
    bound)."""
    event = SkellamDpEvent(float(info["mu"]), float(info["l1_sensitivity"]),
                           float(info["l2_sensitivity"]))
    bound = sampled_epsilon(sampled_event(event.mu, int(info["dimension"]), c.clip,
                                          float(info["gamma"]), c.rate), c.rounds, c.delta)
    reference = gaussian_reference_epsilon(event, c.rate, c.rounds, c.delta)
    return {
        "bound_epsilon": bound, "reference_epsilon": reference,
        "factor": bound / reference,
        "note": (f"sound but loose: the reported epsilon {bound:.3g} (Zhu-Wang's general "
                 f"bound on the Skellam RDP) is {bound / reference:.2f}x the {reference:.3g} "
                 "of a tight PLD of the Poisson-subsampled Gaussian of the same variance, a "
                 "reference, not a bound for Skellam; no tighter sound analysis of the "
                 "subsampled Skellam sum is implemented"),
    }
