"""Statistical lower bounds on epsilon from a distinguisher's success.

Two-input audits (Jagielski, Ullman, Oprea, NeurIPS 2020; LDP-Auditor, Arcolezi and Gambs,
PETS 2024): run the mechanism ``n`` times on each of two neighbouring inputs, count how often
a fixed test says "input 1" (true positives on input 1, false positives on input 0) and
take Clopper-Pearson intervals at level ``alpha`` (two-sided, ``alpha/2`` per side, as
``statsmodels``' ``proportion_confint(method="beta")`` that LDP-Auditor uses). An
``(eps, delta)``-DP mechanism has TPR <= e^eps FPR + delta for every test, so with
confidence at least ``1 - alpha``

    eps >= eps_emp = ln((TPR_low - delta) / FPR_high).

One-run audits (Steinke, Nasr, Jagielski, NeurIPS 2023, "Privacy auditing with one (1)
training run", arXiv 2305.08846): ``m`` canaries, each included independently with
probability 1/2; the auditor guesses in/out for ``r`` of them and ``v`` guesses are right.
Under ``(eps, delta)``-DP (their Theorem 3 / Corollary 5.4, computed as in their Appendix D)

    P[W >= v] <= P[Bin(r, p) >= v] + 2 m delta max_{i=1..v} P[v - i <= Bin(r, p) < v] / i,

with p = e^eps / (1 + e^eps), and the lower bound is the largest eps whose p-value is below
``beta = 1 - confidence``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from dprec.errors import DprecError
from dprec.privacy.calibrate import bisect

__all__ = [
    "audit_ceiling",
    "clopper_pearson",
    "empirical_epsilon",
    "eps_lower_one_run",
    "p_value_one_run",
]


def _check_alpha(alpha: float) -> float:
    a = float(alpha)
    if not 0 < a < 1:
        raise DprecError(f"alpha must be in (0, 1), got {alpha}")
    return a


def _check_delta(delta: float) -> float:
    d = float(delta)
    if not 0 <= d < 1:
        raise DprecError(f"delta must be in [0, 1), got {delta}")
    return d


def clopper_pearson(k: ArrayLike, n: ArrayLike, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided ``1 - alpha`` interval for a binomial proportion (Clopper and Pearson
    1934): ``[Beta(alpha/2; k, n-k+1), Beta(1-alpha/2; k+1, n-k)]``, 0 at k = 0, 1 at k = n.

    Each end holds with probability at least ``1 - alpha/2``. Vectorised over ``k`` and ``n``.
    """
    a = _check_alpha(alpha)
    kk = np.asarray(k, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    if np.any(nn < 1) or np.any(kk < 0) or np.any(kk > nn) or np.any(kk != np.floor(kk)):
        raise DprecError("need integer counts 0 <= k <= n with n >= 1")
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(kk > 0, stats.beta.ppf(a / 2, np.maximum(kk, 1), nn - kk + 1), 0.0)
        high = np.where(kk < nn, stats.beta.ppf(1 - a / 2, kk + 1, np.maximum(nn - kk, 1)), 1.0)
    return low, high


def empirical_epsilon(tp: ArrayLike, n1: ArrayLike, fp: ArrayLike, n0: ArrayLike,
                      alpha: float, delta: float = 0.0) -> np.ndarray:
    """``max(0, ln((TPR_low - delta) / FPR_high))`` from ``tp`` of ``n1`` and ``fp`` of ``n0``
    (LDP-Auditor's estimator); 0 where ``TPR_low <= delta``. Valid at confidence ``1 - alpha``
    for a test fixed before the counts were drawn."""
    d = _check_delta(delta)
    tpr_low, _ = clopper_pearson(tp, n1, alpha)
    _, fpr_high = clopper_pearson(fp, n0, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(np.maximum(tpr_low - d, 0.0) / fpr_high)
    return np.maximum(np.nan_to_num(eps, nan=0.0, neginf=0.0), 0.0)


def audit_ceiling(trials: int, alpha: float, delta: float = 0.0) -> float:
    """The largest eps any two-input audit with ``trials`` per input can certify: a perfect
    test (TPR = 1, FPR = 0) gives ``ln((c - delta) / (1 - c))`` with ``c = (alpha/2)^(1/n)``,
    about ``ln(n / ln(2/alpha))`` (12.2 at n = 10^6, alpha = 0.01)."""
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise DprecError(f"trials must be an integer >= 1, got {trials!r}")
    return float(empirical_epsilon(int(trials), int(trials), 0, int(trials), alpha, delta))


def _check_one_run(m: int, r: int, v: int, delta: float) -> None:
    for name, value in (("m", m), ("r", r), ("v", v)):
        if isinstance(value, bool) or int(value) != value:
            raise DprecError(f"{name} must be an integer, got {value!r}")
    if not 0 <= v <= r <= m:
        raise DprecError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    _check_delta(delta)


def p_value_one_run(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """P-value of ``v`` correct guesses out of ``r`` (``m`` canaries) under ``(eps, delta)``-DP:
    Steinke, Nasr, Jagielski (NeurIPS 2023), Theorem 3 as evaluated in their Appendix D."""
    _check_one_run(m, r, v, delta)
    if not (math.isfinite(eps) and eps >= 0):
        raise DprecError(f"eps must be a finite number >= 0, got {eps}")
    if v == 0:
        return 1.0
    q = 1.0 / (1.0 + math.exp(-eps))  # accuracy of eps-DP randomized response
    tail = float(stats.binom.sf(v - 1, r, q))  # P[Bin(r, q) >= v]
    if delta == 0:
        return min(tail, 1.0)
    below = np.cumsum(stats.binom.pmf(v - np.arange(1, v + 1), r, q))  # P[v-i <= Bin < v]
    worst = float(np.max(below / np.arange(1, v + 1)))
    return min(tail + 2.0 * m * delta * worst, 1.0)


def eps_lower_one_run(m: int, r: int, v: int, delta: float, beta: float,
                      tol: float = 1e-6) -> float:
    """The largest eps rejected at level ``beta`` (p-value < beta), by bisection; 0 when even
    eps = 0 is not rejected. Confidence ``1 - beta`` (Steinke et al., Appendix D)."""
    _check_one_run(m, r, v, delta)
    b = _check_alpha(beta)
    if p_value_one_run(m, r, v, 0.0, delta) >= b:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value_one_run(m, r, v, hi, delta) < b:
        lo, hi = hi, 2 * hi
        if hi > 1e3:
            return lo
    return bisect(lambda eps: p_value_one_run(m, r, v, eps, delta) < b, lo, hi, tol)[0]
