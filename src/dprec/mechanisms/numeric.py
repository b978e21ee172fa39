"""Local DP for one bounded number x in [-1, 1]: the one-bit report of FMF-LDP and the
piecewise mechanism.

``BinaryMechanism`` (Duchi, Jordan, Wainwright 2013/2018; FMF-LDP Algorithm 1, adapted from its
ref. [24]). With C = (e^eps + 1)/(e^eps - 1) = coth(eps/2):

    P(report +1 | x) = (x (e^eps - 1) + e^eps + 1) / (2 e^eps + 2) = (1 + x / C) / 2,

and the estimate ``report * C`` is unbiased, E = x, with Var = C^2 - x^2. The likelihood ratio
of either report between two inputs is at most (1 + 1/C)/(1 - 1/C) = e^eps, attained at
x = 1 versus x' = -1: eps-LDP, two-sided, per report.

``PiecewiseMechanism`` (Wang et al., ICDE 2019, "Collecting and analyzing multidimensional
data with local differential privacy", Algorithm 2). With s = e^{eps/2},
C = (s + 1)/(s - 1) = coth(eps/4), l(x) = (C + 1)/2 x - (C - 1)/2 and r(x) = l(x) + C - 1,
the output t in [-C, C] has the density

    p     = (e^eps - s)/(2 s + 2)   on [l(x), r(x)]      (mass s/(s + 1)),
    p/e^eps                         on [-C, l(x)) U (r(x), C],

so the density ratio between any two inputs is at most e^eps (eps-LDP, two-sided), and
E[t | x] = x with Var[t | x] = x^2/(s - 1) + (s + 3)/(3 (s - 1)^2) (Wang et al., Lemma 1).

Which has the lower variance (closed forms above): piecewise wins at input x exactly when

    x^2 < (3 s^3 - s^2 + s - 7) / (3 (s - 1) (s + 1)^2),    s = e^{eps/2}

(``variance_crossover``). At x = 0 that needs eps > 0.6094 (the root of 3 s^3 - s^2 + s = 7);
the worst cases (piecewise at |x| = 1, binary at x = 0) cross at eps = 1.2898, the 1.29 of
Wang et al.; at |x| = 1 binary always wins (ratio of variances (s + 1)^2 / (3 s) >= 4/3).
Thresholds on |x|: 0.627 at eps = 1, 0.826 at eps = 2, 0.862 at eps = 2.5, 0.952 at eps = 5.

``LaplaceMechanism`` (Dwork, McSherry, Nissim, Smith 2006; the Laplace step of Laplace-SVD,
seed 001 Eq. 4, docs/architecture.md §3) for x in a bounded interval [low, high] (sensitivity
Delta = high - low; 1 for ratings min-max normalised to [0, 1]): y = x + Lap(b), b = Delta/eps,
density exp(-|y - x|/b)/(2 b). Unbiased, Var = 2 b^2, unbounded output. The density ratio
between two inputs is exp((|y - x'| - |y - x|)/b) <= e^eps, attained for x = high, x' = low
and every y >= high: eps-LDP, two-sided, per report.

On the wire a binary report is one bit, a piecewise report one float32 (``report_bits``).
Sampling uses the explicit ``numpy.random.Generator`` it is given. Seeded generators are for
simulation only. A deployed client passes :func:`dprec.random.secure_generator` (ChaCha20
keyed from the operating system's CSPRNG, what ``dprec.client`` uses): a PCG64 stream seeded
from a secure source is not a CSPRNG (its outputs can reveal its state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dprec.errors import InvalidParameterError, PrivacyParameterError, as_float
from dprec.privacy.events import LocalReportDpEvent

__all__ = ["BinaryMechanism", "LaplaceMechanism", "OneReportMechanism", "PiecewiseMechanism",
           "ReportIsEstimate", "variance_crossover"]


def _check_epsilon(eps: Any) -> float:
    value = as_float(eps, f"epsilon must be a number > 0, got {eps!r}", PrivacyParameterError)
    if math.isnan(value):
        raise PrivacyParameterError(f"epsilon must be a number > 0, got {eps}")
    if not value > 0:
        raise PrivacyParameterError(f"epsilon must be > 0, got {eps}")
    if not math.isfinite(value):
        raise PrivacyParameterError(f"epsilon must be finite, got {eps}")
    return value


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameterError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_unit(x: ArrayLike, name: str = "x") -> np.ndarray:
    """``x`` as a float64 array, every value in [-1, 1] (NaN rejected); callers clip first."""
    return _check_interval(x, -1.0, 1.0, name)


def variance_crossover(epsilon: float) -> float:
    """The |x| below which ``PiecewiseMechanism`` has lower variance than ``BinaryMechanism``.

    Solves x^2/(s-1) + (s+3)/(3 (s-1)^2) = C^2 - x^2 with s = e^{eps/2}, C = coth(eps/2):
    x*^2 = (3 s^3 - s^2 + s - 7) / (3 (s - 1) (s + 1)^2). Returns 0.0 when piecewise never
    wins (eps <= 0.6094); the threshold is always below 1 and tends to 1 as eps grows.
    """
    e = _check_epsilon(epsilon)
    s = math.exp(e / 2.0)
    if math.isinf(s):
        return 1.0
    x2 = (3.0 * s**3 - s**2 + s - 7.0) / (3.0 * math.expm1(e / 2.0) * (s + 1.0) ** 2)
    return math.sqrt(min(x2, 1.0)) if x2 > 0 else 0.0


@dataclass(frozen=True)
class OneReportMechanism:
    """What every one-report eps-LDP mechanism here shares: ``epsilon`` (validated at
    construction), the report's wire size, its parameters for the report and its event,
    ``LocalReportDpEvent(epsilon)`` (pure LDP; a subclass with another event overrides it).
    """

    epsilon: float
    """Privacy parameter of one report (> 0)."""

    report_bits: ClassVar[int] = 32
    """Bits on the wire per report (one float32)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon))

    @property
    def report_bytes(self) -> float:
        """Bytes on the wire per report, ``report_bits / 8`` (one bit = 0.125)."""
        return self.report_bits / 8

    def describe(self) -> dict[str, object]:
        """The parameters for the report's ``mechanisms`` list."""
        return {"name": self.name, "epsilon": self.epsilon,  # type: ignore[attr-defined]
                "report_bits": self.report_bits}

    def dp_event(self) -> dp_accounting.DpEvent:
        """The accounting event of one report: ``LocalReportDpEvent(epsilon)`` (pure LDP)."""
        return LocalReportDpEvent(self.epsilon)


@dataclass(frozen=True)
class BinaryMechanism(OneReportMechanism):
    """One-bit report of x in [-1, 1]: +1 with probability (1 + x/C)/2, C = coth(eps/2)
    (FMF-LDP Algorithm 1, Duchi et al.); estimate ``report * C``, unbiased, Var = C^2 - x^2.

    eps-LDP per report, two-sided, local model (ratio e^eps attained at x = 1 vs x' = -1).
    """

    name: str = field(default="binary", compare=False)
    """Label used in reports."""

    report_bits: ClassVar[int] = 1
    """Bits on the wire per report (the sign)."""

    @property
    def scale(self) -> float:
        """C = (e^eps + 1)/(e^eps - 1) = coth(eps/2), the magnitude of every estimate."""
        return 1.0 / math.tanh(self.epsilon / 2.0)

    def prob_one(self, x: ArrayLike) -> np.ndarray:
        """P(report +1 | x) = (x (e^eps - 1) + e^eps + 1) / (2 e^eps + 2), computed as
        (1 + x tanh(eps/2)) / 2."""
        arr = _check_unit(x)
        return 0.5 * (1.0 + arr * math.tanh(self.epsilon / 2.0))

    def sample_bits(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """One report per entry of ``x``: a bool array, True meaning +1 (beta = 1)."""
        p = self.prob_one(x)
        gen = _check_rng(rng)
        return gen.random(p.shape) < p

    def estimate(self, bits: ArrayLike) -> np.ndarray:
        """The unbiased estimate of x from reports: +C for True (+1), -C for False (-1)."""
        arr = np.asarray(bits)
        if arr.dtype != np.bool_:
            if arr.dtype.kind not in "biuf" or not np.isin(arr, (0, 1)).all():
                raise InvalidParameterError(
                    f"bits must be booleans or 0/1 values, got dtype {arr.dtype}")
            arr = arr.astype(np.bool_)
        c = self.scale
        return np.where(arr, c, -c)

    def variance(self, x: ArrayLike) -> np.ndarray:
        """Var[estimate | x] = C^2 - x^2, computed as 1/sinh^2(eps/2) + (1 - x)(1 + x)
        (C^2 - 1 = 1/sinh^2(eps/2); no cancellation at large eps)."""
        arr = _check_unit(x)
        return 1.0 / math.sinh(self.epsilon / 2.0) ** 2 + (1.0 - arr) * (1.0 + arr)

    def __call__(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """Sample reports and return their unbiased estimates (float64, values +-C)."""
        return self.estimate(self.sample_bits(x, rng))


@dataclass(frozen=True)
class PiecewiseMechanism(OneReportMechanism):
    """Piecewise mechanism of Wang et al. (ICDE 2019, Algorithm 2) for x in [-1, 1].

    With s = e^{eps/2} and C = (s+1)/(s-1): output uniform on [l(x), r(x)] with probability
    s/(s+1), else uniform on [-C, l(x)) U (r(x), C]; l(x) = (C+1)/2 x - (C-1)/2,
    r(x) = l(x) + C - 1. Unbiased, Var = x^2/(s-1) + (s+3)/(3 (s-1)^2). eps-LDP per
    report, two-sided, local model (density ratio exactly e^eps between the two levels).
    """

    name: str = field(default="piecewise", compare=False)
    """Label used in reports."""

    @property
    def scale(self) -> float:
        """C = (e^{eps/2} + 1)/(e^{eps/2} - 1) = 1 + 2/(e^{eps/2} - 1); outputs lie in
        [-C, C]."""
        return 1.0 + self._width()

    @property
    def center_prob(self) -> float:
        """P(output in [l(x), r(x)]) = e^{eps/2}/(e^{eps/2} + 1)."""
        return 1.0 / (1.0 + math.exp(-self.epsilon / 2.0))

    @property
    def density_levels(self) -> tuple[float, float]:
        """(p, p / e^eps): the density on [l(x), r(x)] and on the rest of [-C, C], with
        p = (e^eps - e^{eps/2}) / (2 e^{eps/2} + 2) = e^{eps/2} tanh(eps/4) / 2."""
        t = math.tanh(self.epsilon / 4.0)
        return 0.5 * math.exp(self.epsilon / 2.0) * t, 0.5 * math.exp(-self.epsilon / 2.0) * t

    def interval(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(l(x), r(x)) = ((C+1)/2 x - (C-1)/2, (C+1)/2 x + (C-1)/2), written as
        x + (C-1)/2 (x -+ 1) so that l(-1) = -C and r(1) = C exactly."""
        arr = _check_unit(x)
        half = 0.5 * self._width()
        return arr + half * (arr - 1.0), arr + half * (arr + 1.0)

    def _width(self) -> float:
        """C - 1 = 2/(e^{eps/2} - 1), the length of [l(x), r(x)] (no cancellation)."""
        return 2.0 / math.expm1(self.epsilon / 2.0)

    def density(self, t: ArrayLike, x: ArrayLike) -> np.ndarray:
        """Output density f(t | x) (broadcast over ``t`` and ``x``): p on [l(x), r(x)],
        p / e^eps elsewhere in [-C, C], 0 outside."""
        tt = np.asarray(t, dtype=np.float64)
        left, right = self.interval(x)
        hi, lo = self.density_levels
        c = self.scale
        inside = (tt >= -c) & (tt <= c)
        return np.where((tt >= left) & (tt <= right), hi, np.where(inside, lo, 0.0))

    def cdf(self, t: ArrayLike, x: ArrayLike) -> np.ndarray:
        """P(output <= t | x), the integral of :meth:`density` (piecewise linear in t)."""
        tt = np.asarray(t, dtype=np.float64)
        left, right = self.interval(x)
        hi, lo = self.density_levels
        c = self.scale
        tc = np.clip(tt, -c, c)
        below = lo * (np.minimum(tc, left) + c)
        middle = hi * np.clip(tc - left, 0.0, right - left)
        above = lo * np.maximum(tc - right, 0.0)
        return np.clip(below + middle + above, 0.0, 1.0)

    def sample(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """One output per entry of ``x`` (float64, same shape); already unbiased for x."""
        arr = _check_unit(x)
        gen = _check_rng(rng)
        c, half = self.scale, 0.5 * self._width()
        left, right = arr + half * (arr - 1.0), arr + half * (arr + 1.0)
        center = gen.random(arr.shape) < self.center_prob
        u = gen.random(arr.shape)
        # Outside: a point v uniform on [0, C + 1), the two pieces laid end to end.
        v = u * (c + 1.0)
        left_len = left + c
        outside = np.where(v < left_len, v - c, right + (v - left_len))
        return np.where(center, left + (right - left) * u, outside)

    def variance(self, x: ArrayLike) -> np.ndarray:
        """Var[t | x] = x^2/(e^{eps/2} - 1) + (e^{eps/2} + 3)/(3 (e^{eps/2} - 1)^2)."""
        arr = _check_unit(x)
        sm1 = math.expm1(self.epsilon / 2.0)
        return arr**2 / sm1 + (sm1 + 4.0) / (3.0 * sm1**2)

    def __call__(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """Same as :meth:`sample`: the output is the unbiased estimate."""
        return self.sample(x, rng)


def _check_bound(name: str, value: Any) -> float:
    return as_float(value, f"{name} must be a finite number, got {value!r}", finite=True)


def _check_interval(x: ArrayLike, low: float, high: float, name: str = "x") -> np.ndarray:
    """``x`` as a float64 array, every value in [low, high] (NaN rejected); callers clip first."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be numeric values in [{low:g}, {high:g}], "
                                    f"got {x!r}") from None
    inside = (arr >= low) & (arr <= high)
    if not inside.all():
        bad = np.flatnonzero(~inside.ravel())
        raise InvalidParameterError(
            f"{name} must lie in [{low:g}, {high:g}] (clip first), got {arr.ravel()[bad[0]]} "
            f"at flat index {bad[0]} ({bad.size} value(s) outside)"
        )
    return arr


class ReportIsEstimate:
    """A mechanism whose report is its own unbiased estimate of x: ``mechanism(x, rng)`` is
    ``sample(x, rng)`` and ``estimate`` returns the reports as float64."""

    def __call__(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """Same as :meth:`sample`: the report is the unbiased estimate."""
        return self.sample(x, rng)  # type: ignore[attr-defined]

    def estimate(self, reports: ArrayLike) -> np.ndarray:
        """The unbiased estimate of x: the report itself (float64 copy)."""
        return np.array(reports, dtype=np.float64)


@dataclass(frozen=True)
class LaplaceMechanism(ReportIsEstimate, OneReportMechanism):
    """Laplace mechanism on one value x in [low, high] (Dwork et al. 2006; seed 001 Eq. 4).

    y = x + Lap(b) with b = (high - low)/eps: density exp(-|y - x|/b)/(2 b) on the real line,
    unbiased, Var = 2 b^2. eps-LDP per report, two-sided, local model: the density ratio
    between inputs is at most e^eps, attained at x = high vs x' = low for every y >= high.

    Sampling is in float64; a deployment should use a snapping or discrete Laplace sampler
    (floating-point Laplace noise leaks through its low-order bits, Mironov, CCS 2012).
    """

    low: float = 0.0
    """Smallest possible input (public)."""
    high: float = 1.0
    """Largest possible input (public); sensitivity = high - low."""
    name: str = field(default="laplace", compare=False)
    """Label used in reports."""

    def __post_init__(self) -> None:
        super().__post_init__()
        low, high = _check_bound("low", self.low), _check_bound("high", self.high)
        if not low < high:
            raise InvalidParameterError(f"low must be < high, got low={low}, high={high}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @property
    def sensitivity(self) -> float:
        """Delta = high - low, the largest change of the input."""
        return self.high - self.low

    @property
    def scale(self) -> float:
        """b = Delta / eps, the Laplace scale."""
        return self.sensitivity / self.epsilon

    def sample(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """One report x + Lap(b) per entry of ``x`` (float64, same shape)."""
        arr = _check_interval(x, self.low, self.high)
        gen = _check_rng(rng)
        return arr + gen.laplace(0.0, self.scale, arr.shape)

    def variance(self, x: ArrayLike) -> np.ndarray:
        """Var[y | x] = 2 b^2 for every x."""
        arr = _check_interval(x, self.low, self.high)
        return np.full(arr.shape, 2.0 * self.scale**2)

    def density(self, t: ArrayLike, x: ArrayLike) -> np.ndarray:
        """f(t | x) = exp(-|t - x|/b)/(2 b) (broadcast over ``t`` and ``x``)."""
        tt = np.asarray(t, dtype=np.float64)
        arr = _check_interval(x, self.low, self.high)
        b = self.scale
        return np.exp(-np.abs(tt - arr) / b) / (2.0 * b)

    def cdf(self, t: ArrayLike, x: ArrayLike) -> np.ndarray:
        """P(y <= t | x): e^{(t-x)/b}/2 below x, 1 - e^{-(t-x)/b}/2 above."""
        tt = np.asarray(t, dtype=np.float64)
        arr = _check_interval(x, self.low, self.high)
        z = (tt - arr) / self.scale
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)),
                        1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))

    def describe(self) -> dict[str, object]:
        """The parameters for the report's ``mechanisms`` list."""
        return {"name": self.name, "epsilon": self.epsilon, "low": self.low,
                "high": self.high, "scale": self.scale, "report_bits": self.report_bits}

    def dp_event(self) -> dp_accounting.LaplaceDpEvent:
        """``LaplaceDpEvent(noise_multiplier = b / Delta = 1/eps)`` (dp-accounting's Laplace
        event is for sensitivity 1; its PLD gives eps for one report)."""
        return dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.epsilon)
