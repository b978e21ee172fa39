"""The Laplace + "randomized response" rating perturbation of Laplace-RR-SVD, as published.

Seed 001 (Sec. IV-A, Eq. 4-5; docs/architecture.md §3). For a rating x min-max normalised to [0, 1]:

    r_LP = x + Lap(1/eps1);   report x with probability p = e^eps2 / (1 + e^eps2), else r_LP.

So the output has the law p * delta_x + (1 - p) * Laplace(x, 1/eps1): unbiased (both parts
have mean x), Var = (1 - p) * 2/eps1^2.

The paper claims (eps1 + eps2)-LDP by sequential composition. That is false: the second step
is not a randomized response over the inputs but a choice between the raw value and the
Laplace output, and the raw value is not private at all. For input x the output equals x
with probability >= p > 1/2, while for any x' != x it equals x with probability 0 (the
Laplace part is continuous), so the likelihood ratio of the event {output = x} is p / 0 and
no finite eps holds (docs/architecture.md §3). The best that holds is the trivial
(eps1, p)-DP: a delta >= 1/2 allows publishing the raw rating half of the time.

Implemented faithfully for reproduction; :meth:`LaplaceRR.dp_event` is dp-accounting's
``NonPrivateDpEvent`` (the accountant gives infinity, sides "none"), with the published claim
beside it (:meth:`LaplaceRR.claimed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dprec.errors import DprecError, PrivacyParameterError
from dprec.mechanisms.numeric import (
    LaplaceMechanism,
    ReportIsEstimate,
    _check_epsilon,
    _check_interval,
    _check_rng,
)
from dprec.privacy.guarantee import Guarantee

__all__ = ["LaplaceRR"]


def _check_named_epsilon(name: str, value: object) -> float:
    """:func:`_check_epsilon` with the parameter's own name in the message."""
    try:
        return _check_epsilon(value)
    except DprecError as e:
        raise PrivacyParameterError(str(e).replace("epsilon", name, 1)) from None


@dataclass(frozen=True)
class LaplaceRR(ReportIsEstimate):
    """Laplace-RR of seed 001: x with probability p = e^eps2/(1 + e^eps2), else x + Lap(b),
    b = (high - low)/eps1. Unbiased, Var = (1 - p) 2 b^2.

    Guarantee: none (the output equals the input with probability p, which no other input
    produces); published claim (eps1 + eps2)-LDP (:meth:`claimed`).
    """

    eps1: float
    """Budget of the Laplace step (> 0): noise scale b = (high - low)/eps1."""
    eps2: float
    """Budget the paper assigns to the "randomized response" step (> 0): p = e^eps2/(1+e^eps2)."""
    low: float = 0.0
    """Smallest possible input (public)."""
    high: float = 1.0
    """Largest possible input (public)."""
    name: str = field(default="laplace-rr", compare=False)
    """Label used in reports."""

    report_bits: ClassVar[int] = 32
    """Bits on the wire per report (one float32)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps1", _check_named_epsilon("eps1", self.eps1))
        object.__setattr__(self, "eps2", _check_named_epsilon("eps2", self.eps2))
        lap = LaplaceMechanism(self.eps1, self.low, self.high)
        object.__setattr__(self, "low", lap.low)
        object.__setattr__(self, "high", lap.high)

    @property
    def laplace(self) -> LaplaceMechanism:
        """The Laplace step, Lap((high - low)/eps1)."""
        return LaplaceMechanism(self.eps1, self.low, self.high)

    @property
    def keep_prob(self) -> float:
        """p = e^eps2 / (1 + e^eps2) (seed 001 Eq. 5), the probability of reporting x itself."""
        return 1.0 / (1.0 + math.exp(-self.eps2))

    @property
    def claimed_epsilon(self) -> float:
        """eps1 + eps2, the paper's claim."""
        return self.eps1 + self.eps2

    def sample(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """One report per entry of ``x``: x itself with probability p, else x + Lap(b)."""
        arr = _check_interval(x, self.low, self.high)
        gen = _check_rng(rng)
        noisy = self.laplace.sample(arr, gen)
        keep = gen.random(arr.shape) < self.keep_prob
        return np.where(keep, arr, noisy)

    def variance(self, x: ArrayLike) -> np.ndarray:
        """Var[y | x] = (1 - p) 2 b^2 for every x."""
        arr = _check_interval(x, self.low, self.high)
        return np.full(arr.shape, (1.0 - self.keep_prob) * 2.0 * self.laplace.scale**2)

    def atom(self, t: ArrayLike, x: ArrayLike) -> np.ndarray:
        """P(y = t exactly | x): p where t == x, else 0 (the Laplace part has no atoms)."""
        tt = np.asarray(t, dtype=np.float64)
        arr = _check_interval(x, self.low, self.high)
        return np.where(tt == arr, self.keep_prob, 0.0)

    def cdf(self, t: ArrayLike, x: ArrayLike) -> np.ndarray:
        """P(y <= t | x) = (1 - p) F_Lap(t; x, b) + p [t >= x] (a jump of p at t = x)."""
        tt = np.asarray(t, dtype=np.float64)
        p = self.keep_prob
        return (1.0 - p) * self.laplace.cdf(tt, x) + p * (tt >= np.asarray(x, np.float64))

    def claimed(self) -> Guarantee:
        """The paper's claim: (eps1 + eps2)-LDP per rating (false: :meth:`dp_event` is
        non-private, see the module docstring)."""
        return Guarantee(
            epsilon=self.claimed_epsilon,
            level="event",
            sides="two",
            model="local",
            mechanism=self._label(),
            notes=("as published (seed 001): (eps1 + eps2)-LDP per rating",),
        )

    def describe(self) -> dict[str, object]:
        """The parameters for the report's ``mechanisms`` list (true epsilon as the text
        "none": :meth:`dp_event` is non-private)."""
        return {"name": self.name, "eps1": self.eps1, "eps2": self.eps2,
                "keep_prob": self.keep_prob, "laplace_scale": self.laplace.scale,
                "claimed_epsilon": self.claimed_epsilon, "true_epsilon": "none",
                "low": self.low, "high": self.high, "report_bits": self.report_bits}

    def dp_event(self) -> dp_accounting.NonPrivateDpEvent:
        """``NonPrivateDpEvent()``: the accountant gives eps = inf for any count of reports."""
        return dp_accounting.NonPrivateDpEvent()

    def _label(self) -> str:
        return f"{self.name}(eps1={self.eps1:.6g}, eps2={self.eps2:.6g})"
