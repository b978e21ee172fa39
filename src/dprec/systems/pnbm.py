"""PNBM, DPSGD-PNBM and DPPS-PNBM as rating predictors, with their privacy reports (seed 004).

Threat model (docs/architecture.md §4): a trusted curator sees the raw ratings and trains the item
similarity S centrally; DP bounds what the released S reveals about one rating (DPSGD-PNBM)
or one user (DPPS-PNBM). The item means r_bar, the rating pattern (who rated what: the user
filter, the caps, the neighbour lists) and each user's own ratings used to predict are not
covered; the reports say so.

DPSGD-PNBM's report is computed from events: every iteration, every training user undergoes
one ``LaplaceDpEvent`` whose L1 sensitivity counts all the gradient entries that user's
ratings reach, composed by basic composition (:class:`~dprec.privacy.accountant.
BasicAccountant`; the PLD accountant cannot discretise losses this large). DPPS-PNBM's one
sample is recorded per user as a pure release (``LocalReportDpEvent``, as DPPS-MF does) and
its levels are the accountant's, with the delta of the sampler marked unknown. Both are
analysed under replace-one adjacency (:class:`~dprec.privacy.adjacency.Adjacency`), which the
reports state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from dprec.iteration import IterationHook
from dprec.models.pnbm import DPPSPNBM, DPSGDPNBM, PNBM
from dprec.models.pnbm_config import DPPSPNBMConfig, DPSGDPNBMConfig, PNBMConfig
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.privacy.levels import PrivacyLevels, account
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.posterior import posterior_sample_epsilon
from dprec.systems.base import RatingPredictor
from dprec.systems.rating_baselines import ModelPredictor
from dprec.systems.spec import SystemSpec

__all__ = ["DPPSPNBMSystem", "DPSGDPNBMSystem", "PNBMSystem", "UnknownDeltaGuarantee",
           "dpps_report"]

THREAT_MODEL = (
    "trusted curator: sees the raw ratings and trains the item similarity S centrally; DP "
    "bounds what the released S reveals (central model). Not covered: the item means r_bar, "
    "the rating pattern (who rated what), and the user's own ratings used at prediction."
)
REPORT_DELTA = 1e-6
"""Target delta of the event-based levels (the DPSGD guarantee itself is pure)."""


@dataclass(frozen=True)
class UnknownDeltaGuarantee(Guarantee):
    """An (eps, delta) guarantee whose delta is not known.

    ``delta`` holds the only value that is proven, the vacuous 1.0; :meth:`to_json` writes
    ``"delta": null`` with ``delta_reason`` instead, and :meth:`describe` says "δ unknown".
    """

    delta_reason: str = ""

    def to_json(self) -> dict[str, object]:
        out = super().to_json()
        out["delta"] = None
        return out

    def describe(self) -> str:
        return super().describe().replace(f", δ={self.delta:.3g}", ", δ unknown")


class _PNBMSystem(ModelPredictor):
    """Shared wrapper: fit the model, predict through it."""

    model: PNBM | DPSGDPNBM | DPPSPNBM

    def diagnostics(self) -> dict[str, object]:
        if not self.model.is_fitted:
            return {}
        h = self.model.loss_history
        return {"iterations": len(h), "last_batch_mse": h[-1] if h else None,
                "neighbours_per_item": int(self.model.neighbours.shape[1])}


class PNBMSystem(_PNBMSystem):
    """``pnbm``: the non-private PNBM (S by SGD, Eq. 2-4)."""

    name = "pnbm"
    model_type = PNBM


class DPSGDPNBMSystem(_PNBMSystem):
    """``dpsgd-pnbm``: Algorithm 1, rating-level DP claimed (central model)."""

    name = "dpsgd-pnbm"
    model_type = DPSGDPNBM

    def __init__(self, name: str | None = None, config: DPSGDPNBMConfig | None = None) -> None:
        super().__init__(name, config)
        self.events: EventLog | None = None

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DPSGDPNBMSystem:
        events = EventLog(train.shape[0])

        def hook(t: int, state: object) -> None:
            self._record(events, t)
            if on_iteration is not None:
                on_iteration(t, state)

        super().fit(train, rng, on_iteration=hook)
        self.events = events
        return self

    def _record(self, log: EventLog, t: int) -> None:
        """Iteration t's events: each training user, one Laplace event whose sensitivity
        counts every gradient entry their ratings reach (worst case over mini-batches)."""
        model: DPSGDPNBM = self.model  # type: ignore[assignment]
        assert model.train_users_ is not None and model.touched_ is not None
        reach = model.touched_
        for a in np.unique(reach[reach > 0]):
            log.record(t, model.mechanism.dp_event(int(a)), model.train_users_[reach == a])

    def diagnostics(self) -> dict[str, object]:
        out = super().diagnostics()
        model: DPSGDPNBM = self.model  # type: ignore[assignment]
        if model.touched_ is not None and model.train_users_ is not None:
            mech = model.mechanism
            out.update({"train_users": int(model.train_users_.size),
                        "max_entries_reached": int(model.touched_.max()),
                        "noise_scale_first": mech.scale(1),
                        "noise_scale_last": mech.scale(mech.iterations)})
        return out

    def privacy_report(self) -> PrivacyReport | None:
        model: DPSGDPNBM = self.model  # type: ignore[assignment]
        if self.events is None or model.touched_ is None or model.train_users_ is None:
            return None
        cfg, mech = model.config, model.mechanism
        eps, K, gamma = float(cfg.epsilon), int(cfg.iterations), float(cfg.batch_fraction)
        acc = BasicAccountant()
        levels = account(self.events, REPORT_DELTA, accountant=acc, max_groups=100_000,
                         model="central")
        reach = int(model.touched_.max())
        most = int(np.max(model.train_ratings_))
        amplified = K * math.log1p(gamma * math.expm1(eps / (gamma * K)))
        claimed = Guarantee(
            epsilon=eps, level="event", sides="two", model="central",
            mechanism=f"Lap(gamma K DeltaF_t / eps) on every gradient entry, K={K}, "
                      f"gamma={gamma:g} (Algorithm 1)",
            notes=(
                "Theorem 1: each iteration is eps/(gamma K)-DP (DeltaF_t / b_t), sub-sampling "
                "with ratio gamma makes it eps/K, K iterations compose (basic) to eps",))
        true = replace(levels.event, notes=(
            *levels.event.notes,
            "neighbouring data: one rating's value replaced (the pattern of who rated what "
            "is public: the user filter, the floor C and the neighbour lists read it)",
            f"DeltaF_t = 2 e_max(t) phi / C bounds ONE gradient entry; one rating of user u "
            f"moves up to A_u entries (its own row at u's rated neighbours, and, through "
            f"x_ui in the predictions of u's other ratings, their rows), so the L1 "
            f"sensitivity is A_u DeltaF_t: eps_t(u) = A_u eps / (gamma K) (max A_u = {reach})",
            "no sub-sampling amplification credited: r_ui enters the gradient terms of u's "
            "other ratings, so its influence does not hinge on (u, i) being sampled",
            "the item means r_bar_j inside x_uj are computed without noise and treated as "
            "public (not accounted)",
            "the clamps are enforced: |e| <= e_max(t), |x_uj - p sgn s_ij| <= phi, "
            "|S_i| I_u floored at C",
        ))
        claimed_user = Guarantee(
            epsilon=most * eps, level="user", sides="two", model="central",
            mechanism="the paper's per-rating eps composed over a user's ratings",
            notes=(f"basic composition over the largest training profile ({most} ratings)",))
        body: dict[str, object] = {
            "levels": levels.to_json(),
            "adjacency": acc.adjacency.value,
            "events": self.events.to_json(),
            "claimed_user": claimed_user.to_json(),
            "paper_composition": {
                "per_iteration_per_entry": eps / (gamma * K),
                "after_subsampling_paper": eps / K,
                "after_subsampling_sound": math.log1p(gamma * math.expm1(eps / (gamma * K))),
                "run_paper": eps,
                "run_sound_amplification": amplified,
                "rule": "basic composition over K iterations of the sub-sampled Laplace "
                        "mechanism; the paper's gamma eps is below the sound "
                        "ln(1 + gamma (e^eps - 1)) for gamma < 1 (Balle et al. 2018)",
            },
        }
        return PrivacyReport(system=self.name, threat_model=THREAT_MODEL, true=true,
                             claimed=claimed, mechanisms=(mech.describe(),), extra=body)


class DPPSPNBMSystem(_PNBMSystem):
    """``dpps-pnbm``: Algorithm 2, user-level DP claimed by posterior sampling."""

    name = "dpps-pnbm"
    model_type = DPPSPNBM

    def diagnostics(self) -> dict[str, object]:
        out = super().diagnostics()
        model: DPPSPNBM = self.model  # type: ignore[assignment]
        if model.removed_ is not None:
            out.update({"ratings_removed_by_cap": model.removed_,
                        "max_user_ratings_trained": model.max_user_ratings_})
        return out

    def privacy_report(self) -> PrivacyReport | None:
        model: DPPSPNBM = self.model  # type: ignore[assignment]
        if not model.is_fitted or model.events is None:
            return None
        return dpps_report(self.name, model.config, model.events)


DELTA_REASON = (
    "delta = the L1 distance between the law of the released SGLD sample and the scaled "
    "posterior; it is not measured (K SGLD steps from a random start, no convergence "
    "certificate), and the paper assumes delta -> 0; stored internally as the vacuous 1.0"
)


def _unknown_delta(g: Guarantee, mechanism: str, notes: tuple[str, ...]
                   ) -> UnknownDeltaGuarantee:
    """The accountant's ``g`` with the sampler's unknown delta, ``mechanism`` and ``notes``
    added after the accountant's."""
    return UnknownDeltaGuarantee(epsilon=g.epsilon, delta=1.0, level=g.level, sides=g.sides,
                                 model=g.model, mechanism=mechanism, notes=(*g.notes, *notes),
                                 delta_reason=DELTA_REASON)


def dpps_report(system: str, cfg: DPPSPNBMConfig, events: EventLog) -> PrivacyReport:
    """DPPS-PNBM's report: claimed (eps, (1 + e^eps) delta) per user (Theorem 2); true
    eps / (4 rho), read from the accountant's levels over ``events`` (one pure release per
    user, :attr:`DPPSPNBM.events <dprec.models.pnbm.DPPSPNBM.events>`).

    Algorithm 2's drift is eps/(4B) eta_t/2 times the gradient of (1/2) sum e^2 (seed Eq. 9:
    g_ui = e_ui dr_hat/dS) and its noise N(0, rho eta_t), so the chain targets
    exp(-beta sum e^2) with beta = eps / (8 B rho) (:attr:`DPPSPNBMConfig.target_scale`).
    One user's sum of squared errors lies in [0, B], so one exact sample is 2 beta B =
    eps / (4 rho)-DP per user, replace-one (:func:`~dprec.privacy.posterior.
    posterior_sample_epsilon`, the rule DPPS-MF uses too); beta B = eps / (8 rho) under
    add/remove-one. A rating's value enters the predictions of its user's other ratings, so
    one rating is only covered at the same eps, not at the "x = eps / tau" per-rating reading.
    """
    eps, rho, tau = float(cfg.epsilon), float(cfg.temperature), int(cfg.tau)
    B = cfg.loglik_bound
    beta = cfg.target_scale
    mechanism = (f"one SGLD sample of the posterior scaled by eps/(4B), B = (r_max - r_min)^2 "
                 f"tau = {B:g}, K={cfg.iterations}, rho={rho:g} (Algorithm 2)")
    assumption = ("the paper assumes the SGLD sample is exactly from the target (delta -> 0); "
                  "the guarantee is (eps, (1 + e^eps) delta) with delta unknown")
    claimed = UnknownDeltaGuarantee(
        epsilon=eps, delta=1.0, level="user", sides="two", model="central",
        mechanism=mechanism, delta_reason=DELTA_REASON,
        notes=("Theorem 2: (eps, (1 + e^eps) delta)-DP per user, delta -> 0 assumed",))
    acc = PldAccountant()
    levels = account(events, REPORT_DELTA, acc, model="central")
    true_eps = levels.user.epsilon
    add_remove = posterior_sample_epsilon(beta, B, Adjacency.ADD_REMOVE_ONE)
    notes = (
        assumption,
        f"the drift is eps/(4B) eta/2 times the gradient of (1/2) sum e^2 (g_ui = e_ui "
        f"dr_hat/dS, Eq. 9) and the noise N(0, rho eta) with rho = {rho:g}: the chain targets "
        f"exp(-beta sum e^2), beta = eps / (8 B rho) = {beta:.6g}",
        f"one user's sum of squared errors lies in [0, B]: one exact sample is 2 beta B = "
        f"eps / (4 rho) = {true_eps:.6g}-DP per user, replace-one (exponential mechanism; "
        f"Wang, Fienberg, Smola 2015, Thm 1), not eps; add/remove-one: beta B = "
        f"{add_remove:.6g}",
        f"a user's log-likelihood is bounded by B because r_hat is clipped to r_min..r_max "
        f"and the profile capped at tau = {tau} ratings (seeded uniform removal)",
        "neighbouring data: one user's ratings replaced (replace-one); the neighbour lists "
        "(most co-rated items) and the item means r_bar are computed without noise and "
        "treated as public",
        f"the paper's per-rating reading eps = x tau (x = {eps / tau:.6g}) does not hold per "
        "rating: a rating's value enters the predictions of its user's other ratings, so "
        "one rating is covered at the user-level eps only",
        "recorded per user as LocalReportDpEvent(eps): dprec's event for a pure eps-DP "
        "release, whose dominating pair dominates every pure eps-DP mechanism; nothing is "
        "local",
    )
    true = _unknown_delta(levels.user, mechanism, notes)
    event = _unknown_delta(levels.event, mechanism, (
        "one rating: the user-level bound (a rating moves all of its user's likelihood "
        "terms)", assumption))
    basic = (None if levels.user_basic is None else
             _unknown_delta(levels.user_basic, mechanism, ("a single release", assumption)))
    body: dict[str, object] = {
        "levels": PrivacyLevels(event=event, user=true, user_basic=basic).to_json(),
        "events": events.to_json(),
        "delta_reason": DELTA_REASON,
        "per_rating_reading": {
            "x": eps / tau, "tau": tau, "epsilon": f"{eps / tau:g} x {tau}",
            "holds_per_rating": False,
            "why": "a rating's value enters the predictions of its user's other ratings",
        },
        "loglik_bound": B,
        "temperature": rho,
        "target_scale": beta,
        "adjacency": acc.adjacency.value,
        "epsilon_add_remove_one": add_remove,
    }
    return PrivacyReport(system=system, threat_model=THREAT_MODEL, true=true, claimed=claimed,
                         mechanisms=({"name": "sgld-posterior-sample", "epsilon": eps,
                                      "loglik_bound": B, "temperature": rho, "tau": tau,
                                      "iterations": cfg.iterations},), extra=body)


def _pnbm(name: str, cfg: PNBMConfig) -> RatingPredictor:
    return PNBMSystem(name, cfg)


def _dpsgd(name: str, cfg: DPSGDPNBMConfig) -> RatingPredictor:
    return DPSGDPNBMSystem(name, cfg)


def _dpps(name: str, cfg: DPPSPNBMConfig) -> RatingPredictor:
    return DPPSPNBMSystem(name, cfg)


def _specs() -> list[SystemSpec]:
    return [
        SystemSpec("pnbm", PNBMConfig, _pnbm, "rating", False,
                   "PNBM: item-item NBM with S learned by SGD (seed 004, Eq. 2-4; non-private)",
                   {}, {"lr": (0.002, 0.02), "reg": (0.005, 0.05), "min_norm": (0.0, 1.0)}),
        SystemSpec("dpsgd-pnbm", DPSGDPNBMConfig, _dpsgd, "rating", True,
                   "DPSGD-PNBM: Laplace noise on PNBM's SGD gradient (Algorithm 1, per rating)",
                   {}, {"lr": (0.1, 0.4), "iterations": (1, 2, 5, 10, 20),
                        "reg": (0.05, 0.005), "init_scale": (10.0, 20.0),
                        "min_norm": (10.0, 15.0)}),
        SystemSpec("dpps-pnbm", DPPSPNBMConfig, _dpps, "rating", True,
                   "DPPS-PNBM: one SGLD sample of PNBM's scaled posterior (Algorithm 2, per user)",
                   {}, {"lr": (8e-8, 4e-7, 8e-6, 100.0, 1000.0), "reg": (0.02, 0.002),
                        "temperature": (0.001, 0.006, 0.09)}),
    ]


SPECS: list[SystemSpec] = _specs()
"""pnbm, dpsgd-pnbm and dpps-pnbm (the registry reads this list)."""
