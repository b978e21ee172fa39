"""Configs of the probabilistic neighbourhood model (PNBM, seed 004) and its two DP trainers
(:mod:`dprec.models.pnbm`): each validated at construction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dprec.errors import DprecError, check_int, check_real
from dprec.privacy.posterior import posterior_sample_epsilon

__all__ = ["DPPSPNBMConfig", "DPSGDPNBMConfig", "PNBMConfig"]


def _check_common(cfg: PNBMConfig | DPSGDPNBMConfig | DPPSPNBMConfig) -> None:
    check_int("neighbours", cfg.neighbours, 1)
    check_real("lr", cfg.lr, low=0.0, low_open=True)
    check_real("reg", cfg.reg, low=0.0)
    check_int("iterations", cfg.iterations, 1)
    check_real("batch_fraction", cfg.batch_fraction, low=0.0, low_open=True, high=1.0)
    check_real("init_scale", cfg.init_scale, low=0.0, low_open=True)
    check_real("min_norm", cfg.min_norm, low=0.0)
    check_real("rating_min", cfg.rating_min)
    check_real("rating_max", cfg.rating_max)
    if not cfg.rating_min < cfg.rating_max:
        raise DprecError(f"rating_min must be < rating_max, got {cfg.rating_min} and "
                         f"{cfg.rating_max}")


@dataclass(frozen=True)
class PNBMConfig:
    """Hyper-parameters of :class:`PNBM` (validated at construction)."""

    neighbours: int = 500
    """Nk: neighbours kept per item, the most co-rated items (paper: 500); >= 1, capped at
    n_items - 1."""
    lr: float = 0.002
    """eta, the SGD step of Eq. 4 (> 0); the gradient is a sum over the mini-batch."""
    reg: float = 0.005
    """lambda = alpha_S / alpha_R, the weight of |S|^2 (>= 0)."""
    iterations: int = 50
    """K, the number of mini-batch updates (>= 1)."""
    batch_fraction: float = 0.1
    """gamma = L / |R|: each update uses a uniform sample of this fraction of the ratings,
    without replacement (in (0, 1])."""
    init_scale: float = 1.0
    """beta: S starts at beta x (Pearson correlation) or beta x U(-0.1, 0.1) (> 0)."""
    init: Literal["pearson", "random"] = "pearson"
    """Initial similarity: Pearson correlation of the two items over their co-raters
    (centred by item means), or uniform noise as in the authors' (DP) code. The paper does
    not say for the non-private model; on ML-100K Pearson starts where random ends."""
    min_norm: float = 0.0
    """C: the denominator sum |s_ij| I_uj is floored at C (>= 0; 0 is Eq. 2 as printed)."""
    rating_min: float = 1.0
    """Lowest possible rating (public; every training rating must be >= it)."""
    rating_max: float = 5.0
    """Highest possible rating (public; > rating_min)."""

    def __post_init__(self) -> None:
        _check_common(self)
        if self.init not in ("pearson", "random"):
            raise DprecError(f"init must be 'pearson' or 'random', got {self.init!r}")


@dataclass(frozen=True)
class DPSGDPNBMConfig:
    """Hyper-parameters of :class:`DPSGDPNBM`, Algorithm 1 (validated at construction).

    Defaults inside the paper's Section 5.1 grid where it gives one (eta, lambda, beta, C,
    Nk); K and gamma are not given there (the authors' code runs full batches).
    """

    epsilon: float = 1.0
    """Claimed per-rating epsilon of the whole run (the paper's Theorem 1); > 0."""
    neighbours: int = 500
    """Nk: neighbours kept per item, the most co-rated items (paper: 500)."""
    lr: float = 0.4
    """eta in S <- S - eta (beta G + lambda S) (paper grid {0.1, 0.4}); > 0."""
    reg: float = 0.005
    """lambda (paper grid {0.05, 0.005}); >= 0."""
    iterations: int = 5
    """K, the number of noisy updates (paper: K in [1, 20], fewer for smaller eps); >= 1."""
    batch_fraction: float = 1.0
    """gamma = L / |R|, uniform mini-batches without replacement (in (0, 1])."""
    init_scale: float = 10.0
    """beta: S starts at beta x U(-0.1, 0.1) and the gradient is up-scaled by beta
    (paper grid {10, 20}); > 0."""
    min_norm: float = 10.0
    """C, the floor of |S_i| I_u that bounds the gradient (paper grid {10, 15}); > 0."""
    min_ratings: int = 21
    """Only users with at least this many training ratings train S (paper: more than 20)."""
    rating_min: float = 1.0
    """r_min (public)."""
    rating_max: float = 5.0
    """r_max (public); phi = r_max - r_min."""

    def __post_init__(self) -> None:
        check_real("epsilon", self.epsilon, low=0.0, low_open=True)
        _check_common(self)
        check_real("min_norm", self.min_norm, low=0.0, low_open=True)
        check_int("min_ratings", self.min_ratings, 1)


@dataclass(frozen=True)
class DPPSPNBMConfig:
    """Hyper-parameters of :class:`DPPSPNBM`, Algorithm 2 (validated at construction)."""

    epsilon: float = 1.0
    """Claimed user-level epsilon of the released sample (Theorem 2); > 0."""
    neighbours: int = 500
    """Nk: neighbours kept per item, the most co-rated items (paper: 500)."""
    lr: float = 1000.0
    """eta_1, the first SGLD step; eta_t = eta_1 t^-decay (> 0). The paper's grid
    {8e-8, 4e-7, 8e-6} fits the authors' code, whose drift is |R| times larger than
    Algorithm 2's; with Algorithm 2's eps/(4B) scaling such steps leave S at its start."""
    decay: float = 0.3
    """xi in eta_t = eta_1 t^-xi (paper: 0.3); in [0, 1]."""
    temperature: float = 0.006
    """rho: the injected noise is N(0, rho eta_t) (paper grid {0.001, 0.006, 0.09}); > 0.
    The chain then targets the scaled posterior to the power 1/rho."""
    reg: float = 0.02
    """lambda, the prior precision ratio (paper grid {0.02, 0.002}); >= 0."""
    iterations: int = 50
    """K, SGLD steps before the one released sample (the authors' code: 300); >= 1."""
    batch_fraction: float = 0.1
    """gamma = L / |R|: mini-batches of L ratings drawn with replacement (in (0, 1])."""
    init_scale: float = 1.0
    """S starts at init_scale x U(-0.1, 0.1) (the authors' code); > 0."""
    min_norm: float = 0.0
    """C, the floor of |S_i| I_u (>= 0)."""
    tau: int = 200
    """Ratings kept per user (a seeded uniform subset of larger profiles; paper: 200)."""
    prior: Literal["debiased", "exact"] = "debiased"
    """Prior term of the stochastic gradient: "debiased" applies lambda s_ij / H_ij only when
    items i and j both occur in the mini-batch (Eq. 10-13); "exact" applies lambda s_ij at
    every step."""
    rating_min: float = 1.0
    """r_min (public)."""
    rating_max: float = 5.0
    """r_max (public); B = (r_max - r_min)^2 tau."""

    def __post_init__(self) -> None:
        check_real("epsilon", self.epsilon, low=0.0, low_open=True)
        _check_common(self)
        check_real("decay", self.decay, low=0.0, high=1.0)
        check_real("temperature", self.temperature, low=0.0, low_open=True)
        check_int("tau", self.tau, 1)
        if self.prior not in ("debiased", "exact"):
            raise DprecError(f"prior must be 'debiased' or 'exact', got {self.prior!r}")

    @property
    def loglik_bound(self) -> float:
        """B = (r_max - r_min)^2 tau, the bound on one user's squared errors."""
        return (self.rating_max - self.rating_min) ** 2 * self.tau

    @property
    def target_scale(self) -> float:
        """beta = eps / (8 B rho): the sampler targets exp(-beta sum e^2 - ...).

        Algorithm 2's drift is eps/(4B) eta/2 times the gradient of (1/2) sum e^2 (g_ui =
        e_ui dr_hat/dS, seed Eq. 9) and its noise is N(0, rho eta), so the target is
        exp(-(eps / (4 B rho)) (1/2) sum e^2)."""
        return float(self.epsilon) / (8.0 * self.loglik_bound * float(self.temperature))

    @property
    def true_epsilon(self) -> float:
        """eps of one exact sample, replace-one user: 2 beta B = eps / (4 rho)
        (:func:`~dprec.privacy.posterior.posterior_sample_epsilon`)."""
        return posterior_sample_epsilon(self.target_scale, self.loglik_bound)


# -- data preparation --------------------------------------------------------------------------


