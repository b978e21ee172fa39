"""Adaptive clipping of DP-PrivRec (seed 002, Algorithm 2 line 11; Andrew et al. 2021).

The server learns the clip bound S from a noisy count of unclipped updates:
beta~ = mean(b) + N(0, sigma_b^2), then

- linear (the paper): S <- S - alpha4 (beta~ - gamma), floored at a tiny positive value;
- geometric (Andrew et al., Alg. 1): S <- S exp(-alpha4 (beta~ - gamma)).

Both move S towards the gamma-quantile of the update norms. The noise on beta is what makes
the bound itself private; both rules are post-processing of beta~.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprec.errors import DprecError

__all__ = ["AdaptiveClip", "MIN_CLIP", "clip_rows"]

MIN_CLIP = 1e-6
"""The linear rule can step below zero; the bound is floored here (a bound must be > 0)."""


@dataclass
class AdaptiveClip:
    """The current bound ``value`` and its update rule."""

    value: float
    target_quantile: float
    lr: float
    rule: str = "linear"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.value) and self.value > 0):
            raise DprecError(f"initial clip must be finite and > 0, got {self.value}")
        if self.rule not in ("linear", "geometric"):
            raise DprecError(f"clip update must be 'linear' or 'geometric', got {self.rule!r}")

    def update(self, noisy_unclipped_fraction: float) -> float:
        """Apply one step given beta~; returns the new bound."""
        step = self.lr * (noisy_unclipped_fraction - self.target_quantile)
        if self.rule == "linear":
            self.value = max(MIN_CLIP, self.value - step)
        else:
            self.value = max(MIN_CLIP, self.value * math.exp(-step))
        return self.value


def clip_rows(deltas: np.ndarray, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row scaled by min(1, S / |row|); and 1[|row| <= S] per row."""
    norms = np.linalg.norm(deltas.astype(np.float64), axis=1)
    unclipped = norms <= bound
    scale = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return (deltas * scale[:, None]).astype(np.float32), unclipped
