"""The Gaussian mechanism: a query plus ``N(0, sigma^2 I)``, ``sigma = z * Delta``.

``Delta`` is the query's L2 sensitivity under the neighbouring relation the caller analyses
(:class:`~dprec.privacy.adjacency.Adjacency`) and ``z`` the noise multiplier; one release is
dp-accounting's ``GaussianDpEvent(z)`` (Dwork & Roth 2014, Thm A.1; the accountants compose it
exactly). Several Gaussian queries on the same data are one Gaussian query with
``1/z^2 = sum 1/z_i^2`` (their joint query has sensitivity ``sqrt(sum Delta_i^2)`` after
scaling each to noise 1; Dong, Roth, Su 2022, Cor. 3.3: ``mu = sqrt(sum mu_i^2)``, ``mu = 1/z``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dprec.errors import InvalidParameterError, check_positive

__all__ = ["Gaussian", "joint_event"]


class Gaussian:
    """Adds ``N(0, (z * sensitivity)^2)`` to every coordinate of a query's answer."""

    def __init__(self, noise_multiplier: float, sensitivity: float = 1.0) -> None:
        check_positive("noise_multiplier", noise_multiplier)
        check_positive("sensitivity", sensitivity)
        if not (math.isfinite(noise_multiplier) and math.isfinite(sensitivity)):
            raise InvalidParameterError(f"noise_multiplier and sensitivity must be finite, "
                                        f"got {noise_multiplier}, {sensitivity}")
        self.noise_multiplier = float(noise_multiplier)
        self.sensitivity = float(sensitivity)

    @property
    def sigma(self) -> float:
        """Standard deviation of the noise: ``z * Delta``."""
        return self.noise_multiplier * self.sensitivity

    def noise(self, rng: np.random.Generator, size: int | tuple[int, ...] | None = None
              ) -> np.ndarray | float:
        """Noise of shape ``size`` (a float when None), drawn from ``rng``."""
        return rng.normal(0.0, self.sigma, size)

    def apply(self, value: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """``value + N(0, sigma^2 I)``."""
        v = np.asarray(value, dtype=np.float64)
        return v + rng.normal(0.0, self.sigma, v.shape)

    def __call__(self, value: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """:meth:`apply` (the :class:`~dprec.mechanisms.base.Mechanism` interface)."""
        return self.apply(value, rng)

    def dp_event(self) -> dp_accounting.GaussianDpEvent:
        """One release: ``GaussianDpEvent(z)`` (the event depends on ``z`` only)."""
        return dp_accounting.GaussianDpEvent(self.noise_multiplier)

    def describe(self) -> dict[str, object]:
        """A small record of the mechanism for reports."""
        return {"mechanism": "gaussian", "noise_multiplier": self.noise_multiplier,
                "sensitivity": self.sensitivity, "sigma": self.sigma}


def joint_event(mechanisms: Sequence[Gaussian]) -> dp_accounting.GaussianDpEvent:
    """The event of Gaussian queries on the same data released together: one
    ``GaussianDpEvent`` with ``z = (sum z_i^-2)^(-1/2)`` (exact, not an upper bound)."""
    if not mechanisms:
        raise InvalidParameterError("joint_event needs at least one Gaussian mechanism")
    return dp_accounting.GaussianDpEvent(
        1.0 / math.sqrt(sum(m.noise_multiplier ** -2 for m in mechanisms)))
