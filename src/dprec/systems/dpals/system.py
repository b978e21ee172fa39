"""dpals: DPALS and AdaDPALS on secure summation with distributed Skellam noise (issue 24).

The round loop (Chien, Jain, Krichene, Rendle, Song, Thakurta, Zhang, "Private Alternating
Least Squares", ICML 2021, Alg. 1; google-research ``dp_alternating_minimization/dpam.py``):

- round 0 (tail and adaptive weighting only): every client sends a k-hot sample of its items;
  the noisy sum gives the DP item counts its selection needs;
- rounds 1..steps: every client solves and clips its own vector from the published item
  factors and sends its quantised per-item statistics and global Gramian term
  (:mod:`.client`); the secure sum releases their noisy sums (:mod:`.simulation`); the server
  solves the item factors after the PSD projection (:mod:`.server`) and publishes them.

A user's vector never leaves the device (joint DP, the "billboard" model); scoring solves
it again from the user's history and the published factors. Every release is a
:class:`~dprec.privacy.skellam.SkellamDpEvent` with the sensitivities of the quantised
contribution against the zero vector (:mod:`.accounting`), recorded in the run's event log
and composed by :class:`~dprec.privacy.rdp_accountant.RdpAccountant` under zero-out adjacency
for the secure sum (a user's neighbour zeroes their statistics while their device still
sends its noise shares, so both sides carry the same noise) and add/remove one user for the
trusted curator (:func:`~dprec.systems.dpals.accounting.adjacency_of`; the same epsilon);
the noise is calibrated so that the whole run meets the target per-user epsilon at delta.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import NotFittedError
from dprec.iteration import IterationHook
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import PrivacyReport
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.protocol.engine import Clients
from dprec.protocol.secure_sum.checks import PROVED_CLIENT, validity_details
from dprec.protocol.secure_sum.messages import Upload
from dprec.systems.base import Ranker, check_history
from dprec.systems.dpals.accounting import Release, adjacency_of
from dprec.systems.dpals.client import solve_users
from dprec.systems.dpals.config import DpalsConfig
from dprec.systems.dpals.plan import (
    RunPlan,
    paper_steps,
    releases,
    round_check,
)
from dprec.systems.dpals.power_init import INIT_RELEASE, init_gamma
from dprec.systems.dpals.simulation import run_engine
from dprec.systems.dpals.statistics import stats_width, triangle_size
from dprec.systems.reporting import (
    secure_sum_report,
    share_record,
    simulation_only,
)

__all__ = ["SECURE_THREAT_MODEL", "TRUSTED_THREAT_MODEL", "Dpals", "DpalsConfig",
           "paper_steps"]

SECURE_THREAT_MODEL = (
    "secure sum: the server learns only the sums of the clients' noisy quantised statistics "
    "(per-item Gramians and right-hand sides as dense vectors over all items, the global "
    "Gramian, the k-hot item counts); user vectors never leave the device; the server and "
    "the shuffling proxy do not collude; a coalition of the server and some clients learns "
    "only the sum of the others; the guarantee holds while at least min_honest clients are "
    "honest and contribute (their noise shares alone reach mu); zero-out adjacency: every "
    "enrolled device sends its noise shares each round, also one with no data, so a user's "
    "neighbour (their statistics replaced by zeros) carries the same noise"
)
TRUSTED_THREAT_MODEL = (
    "central: a trusted curator sees every user's quantised statistics, sums them and adds "
    "one Skellam draw per release; DP protects what the published item factors reveal "
    "(joint DP: each user's own vector stays on the device); add/remove-one-user adjacency "
    "(the central draws do not depend on who is present)"
)


def _scale_of(release: str, gamma: float, gamma0: float) -> float:
    """The quantisation scale of ``release``: 1 (counts), ``gamma0`` (init_power) or
    ``gamma``: its noise in clip units is its standard deviation over this."""
    return {"item_counts": 1.0, INIT_RELEASE: gamma0}.get(release, gamma)


class Dpals(Ranker):
    """dpals (module docstring). ``transport`` (None: in process) carries the secure path's
    rounds: ``dprec simulate --transport http`` runs them through the services (the
    clients' uploads are the cryptographic secure sum's), ``--backend`` in shards."""

    networked = True
    transport: Any = None

    def __init__(self, name: str, config: DpalsConfig) -> None:
        self.name = name
        self.config = config
        self.events: EventLog | None = None
        self._V: np.ndarray | None = None
        self._fit_info: dict[str, object] = {}
        self._plan: RunPlan | None = None
        """The secure run's plan: one secure sum per round over the services (None for a
        trusted run)."""
        self._share_mu: dict[str, float] = {}
        """Each release's per-client share as the clients drew it (secure path)."""
        self.clients_hook: Callable[[Clients, int], Clients] | None = None
        """Wraps the simulated clients (secure path), e.g. malicious ones
        (:func:`dprec.protocol.sum_poisoning.poison_sum`)."""

    def releases(self, n_items: int) -> tuple[float, list[Release]]:
        """(gamma, the releases of one run) for ``n_items`` items (:func:`~.plan.releases`)."""
        return releases(self.config, n_items)

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> Dpals:
        """The run on the round engine (:mod:`.simulation`), for either aggregation: the
        clients' seed is drawn first, then the rounds run."""
        seed = int(rng.integers(0, 2 ** 63 - 1))
        run = run_engine(self.config, train, rng, seed, self.transport, on_iteration,
                         self)
        p, n = run.plan, train.shape[0]
        self._V, self.events = run.factors, run.events
        secure = self.config.aggregation == "secure"
        self._plan = p if secure else None
        self._share_mu = dict(run.share_mu)
        self._fit_info = {
            "n_clients": n, "n_items": train.shape[1], "gamma": p.gamma,
            "noise_multiplier": p.multiplier, "steps": self.config.n_steps,
            "items_bound": min(self.config.items_bound, train.shape[1]),
            **simulation_only(contributed_pairs=run.contributed_pairs,
                              clipped_fraction=run.clipped_fraction,
                              median_user_norm=run.median_user_norm),
            **({"upload_outcomes": run.upload_outcomes,
                "refused_reasons": run.refused_reasons} if secure else {}),
            "releases": [{"name": r.name, "mu": r.mu(p.multiplier), "l1_sensitivity": r.l1,
                          "l2_sensitivity": r.l2, "noise_ratio": r.ratio, "count": r.count,
                          "noise_std_clip_units": r.ratio * p.multiplier * r.l2 / _scale_of(
                              r.name, p.gamma, p.init_gamma)}
                         for r in p.releases],
        }
        return self

    @property
    def item_factors(self) -> np.ndarray:
        """(items, F) published item factors."""
        if self._V is None:
            raise NotFittedError(f"{self.name}: call fit before score")
        return self._V

    def user_factors(self, history: sp.csr_matrix) -> np.ndarray:
        """The vectors the devices solve from their histories and the published factors."""
        c = self.config
        return solve_users(self.item_factors, history, c.reg, c.unobserved_weight)

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        V = self.item_factors
        history, items, users = check_history(history, V.shape[0], items, users)
        U = self.user_factors(history)
        if items is None:
            return U @ V.T
        return np.einsum("bf,bcf->bc", U, V[items])

    def diagnostics(self) -> dict[str, object]:
        return dict(self._fit_info)

    def _secure_sum_params(self) -> dict[str, object]:
        from dprec.protocol.secure_sum.params import choose_params
        c, info = self.config, self._fit_info
        n, d, gamma = int(info["n_clients"]), int(info["n_items"]), float(info["gamma"])  # type: ignore[call-overload, arg-type]
        t = min(c.min_honest or n, n)
        weight = math.sqrt(c.k) if c.weighting == "adaptive" else 1.0
        shapes = {"item_statistics": (d * stats_width(c.factors),
                                      weight * max(1.0, c.rhs_weight), gamma),
                  "global_gramian": (triangle_size(c.factors), 1.0, gamma),
                  "item_counts": (d, 1.0, 1.0),
                  INIT_RELEASE: (d * c.factors, 1.0,
                                 init_gamma(min(c.items_bound, d), c.factors))}
        out: dict[str, object] = {}
        for r in info["releases"]:  # type: ignore[attr-defined]
            dim, bound, g = shapes[r["name"]]
            total_mu = r["mu"] * n / t
            p = choose_params(dimension=dim, expected_clients=n, clip=bound, gamma=g,
                              norm="linf", noise_variance=2.0 * total_mu)
            out[r["name"]] = {**p.to_json(), "q": p.modulus, "m": p.shares}
        out["note"] = ("parameters of each round's secure sum (clip = the largest coordinate "
                       "of one contribution, L-inf); the in-process simulation takes the "
                       "exact integer sum the secure sum yields")
        if self._plan is not None:
            out["deployed_rounds"] = [
                {"kind": r.kind, "releases": [s.name for s in r.segments],
                 "dimension": r.dimension, "q_bits": r.params.bits, "m": r.params.shares,
                 "upload_bytes": Upload.size(r.params)} for r in self._plan.rounds]
        return out

    def privacy_report(self) -> PrivacyReport | None:
        if self.events is None:
            return None
        c, info = self.config, self._fit_info
        secure = c.aggregation == "secure"
        n = int(info["n_clients"])  # type: ignore[call-overload]
        honest = (c.min_honest or n) if secure else None
        mechanisms = tuple(
            {"name": "skellam", "release": r["name"], "mu": r["mu"],  # type: ignore[index]
             "variance": 2 * r["mu"], "l1_sensitivity": r["l1_sensitivity"],  # type: ignore
             "l2_sensitivity": r["l2_sensitivity"], "rounds": r["count"],  # type: ignore
             "aggregation": c.aggregation,
             **(share_record(r["mu"], self._share_mu[r["name"]], honest)  # type: ignore
                if secure else {})}
            for r in info["releases"])  # type: ignore[attr-defined]
        bound = (f"per step: per-item statistics c_j (UT(u u^T), u) of at most "
                 f"{info['items_bound']} items ({c.weighting}, k = {c.k}, sum c_j^2 <= k, "
                 f"beta = {c.rhs_weight:g}) with u the user vector clipped to clip = {c.clip:g} "
                 f"and divided by it (||u||_2 <= 1), quantised at gamma = {info['gamma']:.6g}, "
                 f"and the global Gramian term UT(u u^T); sensitivities against the zero "
                 f"vector ({adjacency_of(c.aggregation).describe()}) in "
                 f"dprec.systems.dpals.accounting (randomised rounding included)")
        if c.uses_counts:
            bound += f"; once: a k-hot count vector of {c.count_k or c.k} items"
        if c.init == "power":
            bound += (f"; {c.init_iterations} power iteration(s) before the steps: a (a^T Q), "
                      f"a the unit-norm contribution weights, Q the client's own "
                      f"orthonormalisation of the broadcast factors (||.||_F <= 1)")
        if c.head_items is not None:
            bound += (f"; contributions among the {c.head_items} items of largest DP count "
                      f"only (post-processing of the counts)")
        details: dict[str, object] = {"noise_multiplier": info["noise_multiplier"],
                                      "steps": info["steps"]}
        proved = secure and c.validity == "prio3" and self._plan is not None
        if proved:
            assert self._plan is not None
            details.update(validity_details([round_check(self._plan, rp)
                                             for rp in self._plan.rounds], c.epsilon, c.delta))
        return secure_sum_report(
            self.name, aggregation=c.aggregation, epsilon=c.epsilon, delta=c.delta,
            log=self.events, threat_models=(SECURE_THREAT_MODEL, TRUSTED_THREAT_MODEL),
            mechanisms=mechanisms, contribution_bound=bound,
            details=details,
            assumptions={
                "min_honest": honest, "n_clients": n, "contributors": n,
                "server_proxy_collusion": False,
                "notes": ["the noise protecting a user is the sum of the honest clients' "
                          "shares: at least min_honest shares of Sk(mu / min_honest)",
                          PROVED_CLIENT if proved else
                          "a malicious client's contribution is not checked (shares mod q)",
                          "joint DP: a user's own vector is solved on the device, never sent",
                          "zero-out adjacency: a user's neighbour replaces their statistics "
                          "by zeros while their device still sends its noise shares (every "
                          "enrolled device sends them each round, also one with no data; the "
                          "participant list is public), so both neighbouring sums carry the "
                          "same noise; add/remove would take the user's shares out of the sum "
                          "too (different noise on the two sides, which the Skellam bound "
                          "does not cover)",
                          "contributors: the clients whose shares each round summed (in "
                          "process every enrolled client); a device that drops out takes its "
                          "shares with it, and the guarantee holds while at least min_honest "
                          "contributors are honest"],
            },
            secure_sum=self._secure_sum_params,
            accountant=RdpAccountant(adjacency_of(c.aggregation)))
