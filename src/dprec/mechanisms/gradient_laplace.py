"""DPSGD-PNBM's noise (seed 004, Algorithm 1, Eq. 6): the error clamp e_max(t), the
per-entry gradient sensitivity DeltaF_t and Laplace noise Lap(b_t) on every gradient entry,
b_t = gamma K DeltaF_t / eps. :class:`dprec.models.pnbm.DPSGDPNBM` trains with it.

Noise is float64 ``numpy`` sampling from the caller's Generator, fine for simulation; a
deployment should draw it from a CSPRNG with a snapping or discrete sampler (Mironov, CCS
2012).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dp_accounting
import numpy as np

from dprec.errors import check_int, check_real

__all__ = ["GradientLaplace", "error_bound", "gradient_sensitivity"]


def error_bound(t: int, phi: float) -> float:
    """e_max(t) = 0.5 + (phi - 1)/(t + 1), the clamp on |e_ui| at iteration t >= 1 (Eq. 6)."""
    check_int("t", t, 1)
    return 0.5 + (phi - 1.0) / (t + 1.0)


def gradient_sensitivity(t: int, phi: float, min_norm: float) -> float:
    """DeltaF_t = 2 e_max(t) phi / C (Eq. 6): the largest change of one gradient entry
    e_ui (x_uj - p_ui sgn s_ij) / max(|S_i| I_u, C) when one rating changes."""
    check_real("min_norm", min_norm, low=0.0, low_open=True)
    return 2.0 * error_bound(t, phi) * phi / min_norm


@dataclass(frozen=True)
class GradientLaplace:
    """Laplace noise on every entry of the SGD gradient (Algorithm 1, line 6).

    At iteration t (1-based) each entry gets independent Lap(b_t), density
    exp(-|z|/b_t)/(2 b_t), standard deviation sqrt(2) b_t, with
    b_t = gamma K DeltaF_t / eps and DeltaF_t = 2 e_max(t) phi / C. The paper's Theorem 1
    reads this as eps-DP per rating for the whole run: each iteration is eps/(gamma K)-DP,
    sub-sampling with ratio gamma makes it eps/K, and K iterations compose to eps. DeltaF_t
    bounds ONE entry; what one rating can move in total is :meth:`dp_event`'s business.
    """

    epsilon: float
    """Claimed per-rating epsilon of the whole run (> 0)."""
    iterations: int
    """K (>= 1)."""
    batch_fraction: float
    """gamma (in (0, 1])."""
    phi: float
    """r_max - r_min (> 0)."""
    min_norm: float
    """C (> 0)."""
    name: str = field(default="gradient-laplace", compare=False)

    def __post_init__(self) -> None:
        check_real("epsilon", self.epsilon, low=0.0, low_open=True)
        check_int("iterations", self.iterations, 1)
        check_real("batch_fraction", self.batch_fraction, low=0.0, low_open=True, high=1.0)
        check_real("phi", self.phi, low=0.0, low_open=True)
        check_real("min_norm", self.min_norm, low=0.0, low_open=True)

    def sensitivity(self, t: int) -> float:
        """DeltaF_t, the per-entry bound."""
        return gradient_sensitivity(t, self.phi, self.min_norm)

    def scale(self, t: int) -> float:
        """b_t = gamma K DeltaF_t / eps."""
        return self.batch_fraction * self.iterations * self.sensitivity(t) / self.epsilon

    def __call__(self, G: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
        """G + Lap(b_t) per entry (a new float64 array)."""
        G = np.asarray(G, dtype=np.float64)
        return G + rng.laplace(0.0, self.scale(t), G.shape)

    def dp_event(self, entries: int) -> dp_accounting.LaplaceDpEvent:
        """One iteration's event for a datum that can move ``entries`` gradient entries by
        at most DeltaF_t each: L1 sensitivity entries x DeltaF_t, so noise_multiplier =
        b_t / (entries DeltaF_t) = gamma K / (eps entries), the same at every t."""
        check_int("entries", entries, 1)
        return dp_accounting.LaplaceDpEvent(
            noise_multiplier=self.batch_fraction * self.iterations / (self.epsilon * entries))

    def describe(self) -> dict[str, object]:
        """The parameters for the report's ``mechanisms`` list."""
        return {"name": self.name, "epsilon": self.epsilon, "iterations": self.iterations,
                "batch_fraction": self.batch_fraction, "phi": self.phi,
                "min_norm": self.min_norm,
                "scale": "b_t = gamma K 2 (0.5 + (phi - 1)/(t + 1)) phi / (C eps)",
                "scale_first": self.scale(1), "scale_last": self.scale(self.iterations)}
