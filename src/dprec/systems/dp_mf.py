"""DPSGD-MF and DPPS-MF, seed 004's DP matrix-factorisation baselines, as rating systems.

Both are central: the curator sees the raw ratings and trains the model; DP protects what the
released factors and biases reveal, about one rating (DPSGD-MF, Berlioz et al. 2015) or one
user (DPPS-MF, Liu, Wang, Smola 2015). The models and their privacy arguments are in
:mod:`dprec.models.dp_mf`; here the event logs become reports (docs/architecture.md §4).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dprec.models.dp_mf import DPPSMF, DPSGDMF
from dprec.models.dp_mf_config import DPPSMFConfig, DPSGDMFConfig
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.privacy.levels import account
from dprec.systems.base import Recommender
from dprec.systems.rating_baselines import ModelPredictor
from dprec.systems.reporting import privacy_report_from_log
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS", "THREAT_MODEL", "DPPSMFSystem", "DPSGDMFSystem"]

THREAT_MODEL = (
    "central: a trusted curator sees the raw ratings and trains the model; DP protects what "
    "the released model (factors and biases) reveals, to anyone who sees it or its predictions"
)

REPORT_DELTA = 1e-6
"""Target delta of the PLD levels (DPSGD-MF's per-rating guarantee itself is pure)."""

_DELTA_NULL = (
    "unknown: the guarantee holds for an exact sample of the scaled posterior; a sample "
    "delta-far from it in total variation is (eps, (1 + e^eps) delta)-DP (seed 004 Thm 2), and "
    "the SGLD chain's delta is not measured. The paper assumes delta -> 0; so does this eps."
)


def _accounted(report: PrivacyReport) -> list[dict[str, object]]:
    """The guarantee dicts the accountant wrote into ``report.extra``."""
    return [g for g in report.extra["levels"].values() if g is not None]  # type: ignore


def _central(report: PrivacyReport) -> PrivacyReport:
    """Mark the accountant's levels as central (``privacy_report_from_log`` labels a log
    without shuffled reports "local")."""
    for g in _accounted(report):
        g["model"] = "central"
    return report


class _DPMF(ModelPredictor):
    """A DP-MF model behind the :class:`RatingPredictor` interface."""

    model: DPSGDMF | DPPSMF

    def diagnostics(self) -> dict[str, object]:
        return dict(self.model.diagnostics)

    def privacy_report(self) -> PrivacyReport | None:
        """None before fit, else :meth:`_report` of the fitted model's event log."""
        if self.model.events is None:
            return None
        return self._report(self.model)

    def _report(self, model: Any) -> PrivacyReport:
        raise NotImplementedError


class DPSGDMFSystem(_DPMF):
    """``dpsgd-mf``: eps-DP per rating value by a clamped Laplace-perturbed SGD error."""

    name = "dpsgd-mf"
    model_type = DPSGDMF

    def _report(self, model: DPSGDMF) -> PrivacyReport:
        c, mech, events = model.config, model.mechanism, model.events
        pure = account(events, REPORT_DELTA, BasicAccountant(), model="central")
        per_rating = pure.event
        label = f"{c.epochs} x Laplace(b={mech.scale:.6g}) on the SGD error, clamped to " \
                f"+-{c.error_bound:g}"
        claimed = Guarantee(c.epsilon, level="event", sides="two", model="central",
                            mechanism="SGD with a Laplace-perturbed error (Berlioz et al. 2015)",
                            notes=("as published: eps-DP per rating",))
        true = replace(per_rating, mechanism=label, notes=(
            *per_rating.notes,
            "event = the value of one rating changed within [rating_min, rating_max]; "
            "which (user, item) pairs are rated is not protected (public, as in Berlioz "
            "et al.)",
            f"each epoch reads a rating once through e + Lap(b), b = K Dr / eps = "
            f"{mech.scale:.6g}: eps/K = {mech.epsilon_per_read:.6g}-DP; the clamp and the "
            "update are post-processing",
            f"basic composition of the worst-case rating's reads in the event log (Dwork "
            f"& Roth Thm 3.16): pure ({per_rating.epsilon:.6g}, 0) per rating, the "
            "accountant's event_basic; levels.event is the PLD composition, an "
            "(eps, delta) at delta = 1e-6",
            "a user with n_u ratings undergoes n_u K reads: levels.user",
        ))
        counts = events.counts(mech.dp_event(), "interaction", "user")
        report = privacy_report_from_log(
            self.name, THREAT_MODEL, events, claimed, (mech.describe(),), true=true,
            delta=REPORT_DELTA,
            extra={"event_basic": pure.event.to_json(), "reads_per_rating": c.epochs,
                   "max_reads_per_user": int(counts.max()) if counts.size else 0})
        return _central(report)


class _SamplerReport(PrivacyReport):
    """A report whose deltas are unknown: JSON ``delta: null`` with the reason."""

    def to_json(self) -> dict[str, object]:
        out = super().to_json()
        for key in ("true", "claimed"):
            out[key]["delta"] = None  # type: ignore[index]
            out[key]["delta_reason"] = _DELTA_NULL  # type: ignore[index]
        return out


class DPPSMFSystem(_DPMF):
    """``dpps-mf``: one SGLD sample of the scaled MF posterior, user-level DP if exact."""

    name = "dpps-mf"
    model_type = DPPSMF

    def _report(self, model: DPPSMF) -> PrivacyReport:
        c = model.config
        eps = c.true_epsilon
        mech = {"name": "posterior-sampling-sgld", "calibration": c.calibration,
                "epsilon": c.epsilon, "tau": c.max_ratings, "B": c.bound, "c": c.scale,
                "temperature": c.temperature, "target": "exp(-(c / rho) E)"}
        claimed = Guarantee(
            c.epsilon, level="user", sides="two", model="central",
            mechanism="one SGLD sample of the posterior scaled by eps / (4 B)",
            notes=("as published (seed 004 Thm 2): (eps, (1 + e^eps) delta) per user, "
                   "delta -> 0 assumed",))
        calib = ("c = eps / (4 B) as in the paper: the one-sided squared error's range is B, "
                 "not 2 B, and the temperature sharpens the target by 1 / rho, so an exact "
                 f"sample is eps / (2 rho) = {eps:.6g}-DP"
                 if c.calibration == "paper" else
                 f"c = rho eps / (2 B) (calibration 'exact'): an exact sample is {eps:.6g}-DP")
        why = (
            "event = one user's ratings replaced (at most tau of them after the random "
            f"cap, tau = {c.max_ratings}); B = (r_max - r_min)^2 tau = {c.bound:g} bounds "
            "a user's sum of (r - clip(r_hat))^2",
            f"sensitivity of (c / rho) E to one user is (c / rho) B: 2 (c / rho) B = "
            f"{eps:.6g} (replace one user; add/remove one user gives half)",
            calib,
            "ASSUMPTION (the paper's): the SGLD iterate is an exact posterior sample "
            "(delta -> 0); delta is unknown, so the JSON has delta: null",
            "recorded as LocalReportDpEvent(eps): dprec's event for a pure eps-DP release, "
            "whose dominating pair dominates every pure eps-DP mechanism; nothing is local",
        )
        report = privacy_report_from_log(
            self.name, THREAT_MODEL, model.events, claimed, (mech,), true_level="user",
            model="central",
            extra={"per_rating_reading": {
                "claimed": f"{c.epsilon / c.max_ratings:.4g} x {c.max_ratings}",
                "true": f"{eps / c.max_ratings:.4g} x {c.max_ratings}",
                "note": "the paper's 'x x tau' axis (eps / tau per rating) is an average, not "
                        "a guarantee: one rating is protected only at the user-level eps",
            }})
        for g in _accounted(_central(report)):
            g["delta"] = None
            g["delta_reason"] = _DELTA_NULL
            g["notes"] = [*g["notes"], "assumes an exact posterior sample (delta -> 0); see "
                                       "delta_reason"]  # type: ignore[misc]
        true = replace(report.true, mechanism=f"exponential mechanism exp(-(c / rho) E), "
                                              f"c = {c.scale:.6g}, rho = {c.temperature:g}",
                       notes=(*report.true.notes, *why))
        return _SamplerReport(report.system, report.threat_model, true, report.claimed,
                              report.mechanisms, report.extra)


def _dpsgd(name: str, cfg: Any) -> Recommender:
    return DPSGDMFSystem(name, cfg)


def _dpps(name: str, cfg: Any) -> Recommender:
    return DPPSMFSystem(name, cfg)


SPECS: list[SystemSpec] = [
    SystemSpec("dpsgd-mf", DPSGDMFConfig, _dpsgd, "rating", True,
               "DPSGD-MF (Berlioz et al. 2015): SGD with a clamped Laplace-perturbed error, "
               "eps per rating (central)", {},
               # seed 004 §5.1; lr and epochs widened beyond the paper's {6e-4, 8e-4} and
               # [10, 50]: on an ML-100K fold lr = 5e-3 and K = 5 did better at eps <= 1
               {"lr": (6e-4, 8e-4, 2e-3, 5e-3), "epochs": (5, 10, 20, 30, 40, 50),
                "reg": (0.02, 0.2), "factors": (10, 15, 20)},
               paper={"lr": 8e-4}),
    SystemSpec("dpps-mf", DPPSMFConfig, _dpps, "rating", True,
               "DPPS-MF (Liu, Wang, Smola 2015): one SGLD sample of the eps/(4B)-scaled MF "
               "posterior, user level (central; delta of the sampler assumed 0)", {},
               # seed 004 §5.1; the paper's eta in {2e-9 .. 8e-6} is on another scale (see
               # DPPSMFConfig.lr), so there is no paper preset for it
               {"lr": (3e-5, 1e-4, 2e-4, 1e-3), "reg": (0.02, 0.05, 0.1, 0.2),
                "temperature": (1e-4, 6e-4, 4e-3, 3e-2), "factors": (10, 15, 20)}),
]
"""The registry entries (listed in ``dprec.systems.registry.SPEC_MODULES``)."""
