"""Configs of the two DP rating-prediction MF trainers (seed 004) of :mod:`dprec.models.dp_mf`:
DP-SGD with perturbed errors and one posterior sample (SGLD), each validated at
construction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dprec.errors import DprecError
from dprec.models.als import _check_int
from dprec.models.funk_svd import _check_real
from dprec.privacy.posterior import posterior_sample_epsilon

__all__ = ["Calibration", "DPPSMFConfig", "DPSGDMFConfig"]

Calibration = Literal["paper", "exact"]


def _check_common(cfg: DPSGDMFConfig | DPPSMFConfig) -> None:
    _check_real("epsilon", cfg.epsilon, strictly_positive=True)
    _check_int("factors", cfg.factors, 0)
    _check_real("lr", cfg.lr, strictly_positive=True)
    _check_real("reg", cfg.reg, nonnegative=True)
    _check_int("epochs", cfg.epochs, 1)
    if not isinstance(cfg.biases, bool | np.bool_):
        raise DprecError(f"biases must be True or False, got {cfg.biases!r}")
    if cfg.factors == 0 and not cfg.biases:
        raise DprecError("factors must be >= 1 when biases is False (nothing to learn), "
                         "got factors=0")
    _check_real("init_std", cfg.init_std, nonnegative=True)
    _check_real("rating_min", cfg.rating_min)
    _check_real("rating_max", cfg.rating_max)
    if not cfg.rating_min < cfg.rating_max:
        raise DprecError(f"rating_min must be < rating_max, got rating_min={cfg.rating_min}, "
                         f"rating_max={cfg.rating_max}")
    if cfg.offset is not None:
        _check_real("offset", cfg.offset)


@dataclass(frozen=True)
class DPSGDMFConfig:
    """Hyper-parameters of :class:`DPSGDMF` (validated at construction).

    Defaults from seed 004's §5.1 grid for DPSGD-MF (d = 10, K = 10, lambda = 0.02), lr from
    its widened grid.
    """

    epsilon: float = 1.0
    """Per-rating eps of the whole training (> 0): each epoch's read of a rating costs
    eps / epochs (basic composition)."""
    factors: int = 10
    """Number of latent factors d (>= 0; 0 is a biases-only model and needs ``biases``)."""
    lr: float = 0.005
    """SGD learning rate of every step (> 0)."""
    reg: float = 0.02
    """L2 weight lambda applied to b_u, b_i, U_u and V_i at every step (>= 0)."""
    epochs: int = 10
    """Number of passes K over the ratings (>= 1); the Laplace scale grows linearly with it
    (the paper uses fewer for smaller eps)."""
    error_bound: float = 2.0
    """e_max: the noisy error is clamped to [-e_max, e_max] (> 0; post-processing, no cost)."""
    biases: bool = True
    """Learn g, b_u and b_i from the same noisy error (True) or the plain m + U_u . V_i
    (False)."""
    init_std: float = 0.1
    """Standard deviation of the N(0, init_std^2) initial factors (>= 0); biases start at 0."""
    rating_min: float = 1.0
    """Public lower end of the rating scale; ratings below are clipped up to it."""
    rating_max: float = 5.0
    """Public upper end of the rating scale; Dr = rating_max - rating_min is the sensitivity."""
    offset: float | None = None
    """The public offset m of every prediction; None = the midpoint of the rating range."""

    def __post_init__(self) -> None:
        _check_common(self)
        _check_real("error_bound", self.error_bound, strictly_positive=True)


@dataclass(frozen=True)
class DPPSMFConfig:
    """Hyper-parameters of :class:`DPPSMF` (validated at construction).

    Defaults: seed 004's §5.1 grid for DPPS-MF (xi = 0.3, tau = 200), lr from its widened grid.
    """

    epsilon: float = 1.0
    """User-level eps the sampler is calibrated for (> 0); see ``calibration``."""
    factors: int = 10
    """Number of latent factors d (>= 0; 0 is a biases-only model and needs ``biases``)."""
    lr: float = 2e-4
    """h_1 of the step h_t = lr t^-decay on the unscaled energy (> 0); the seed's eta_t is
    rho h_t / c, so its grid {2e-9 .. 8e-6} does not carry over."""
    decay: float = 0.3
    """xi in h_t = lr t^-xi (>= 0; the seed uses 0.3)."""
    temperature: float = 1e-4
    """rho: the SGLD noise is N(0, rho eta_t) (> 0). rho < 1 sharpens the target by 1 / rho and
    weakens the guarantee to eps / (2 rho) under the paper's calibration."""
    reg: float = 0.1
    """Prior precision lambda in E = sum (r - clip(r_hat))^2 + lambda |theta|^2 (>= 0)."""
    epochs: int = 20
    """Number of passes; each is ceil(n / batch_size) SGLD steps (>= 1)."""
    batch_size: int = 1000
    """L, ratings per mini-batch, drawn uniformly with replacement (>= 1)."""
    max_ratings: int = 200
    """tau: each user keeps at most this many ratings, the rest removed at random (>= 1)."""
    biases: bool = True
    """Sample g, b_u and b_i too (True) or the plain m + U_u . V_i (False)."""
    init_std: float = 0.1
    """Standard deviation of the N(0, init_std^2) initial factors (>= 0); biases start at 0."""
    rating_min: float = 1.0
    """Public lower end of the rating scale; ratings and predictions are clipped to it."""
    rating_max: float = 5.0
    """Public upper end of the rating scale; B = (rating_max - rating_min)^2 tau."""
    offset: float | None = None
    """The public offset m of every prediction; None = the midpoint of the rating range."""
    calibration: Calibration = "paper"
    """"paper": c = eps / (4 B), the seed's scaling (true eps = eps / (2 rho)); "exact":
    c = rho eps / (2 B), so that an exact sample is eps-DP."""

    def __post_init__(self) -> None:
        _check_common(self)
        _check_real("decay", self.decay, nonnegative=True)
        _check_real("temperature", self.temperature, strictly_positive=True)
        _check_int("batch_size", self.batch_size, 1)
        _check_int("max_ratings", self.max_ratings, 1)
        if self.calibration not in ("paper", "exact"):
            raise DprecError(f"calibration must be 'paper' or 'exact', got {self.calibration!r}")

    @property
    def bound(self) -> float:
        """B = (r_max - r_min)^2 tau, the bound on one user's squared errors (seed §4.3)."""
        return (self.rating_max - self.rating_min) ** 2 * self.max_ratings

    @property
    def scale(self) -> float:
        """c, the factor of the energy in the posterior exp(-(c / rho) E)."""
        if self.calibration == "exact":
            return self.temperature * self.epsilon / (2.0 * self.bound)
        return self.epsilon / (4.0 * self.bound)

    @property
    def target_scale(self) -> float:
        """beta = c / rho: the sampler targets exp(-beta sum (r - clip(r_hat))^2 - ...)."""
        return self.scale / self.temperature

    @property
    def true_epsilon(self) -> float:
        """eps of one exact sample, replace-one user: 2 beta B = 2 (c / rho) B
        (:func:`~dprec.privacy.posterior.posterior_sample_epsilon`)."""
        return posterior_sample_epsilon(self.target_scale, self.bound)
