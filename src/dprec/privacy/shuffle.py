"""Privacy amplification by shuffling (Feldman, McMillan, Talwar, FOCS 2021).

"Hiding among the clones: a simple and nearly optimal analysis of privacy amplification by
shuffling", arXiv 2012.12803 (FMT21). Setting: ``n`` users each send one report produced by
an ``eps0``-DP local randomizer (the randomizers may be chosen adaptively); a trusted proxy
shuffles the ``n`` reports. The shuffled output is ``(eps, delta)``-DP in the central sense
with ``eps`` much smaller than ``eps0``.

Two bounds are implemented:

- :func:`closed_form_epsilon`: Theorem 3.1 of FMT21 (two variants of its constant, see
  there). Valid when ``eps0 <= log(n / (16 log(2/delta)))`` (:func:`condition_holds`).
- :func:`numerical_epsilon`: the paper's numerical method (Section 4 and Appendix E). The
  "clone" reduction (FMT21 Theorem 3.2) says the shuffled output is ``(eps, delta)``-DP if
  the two distributions over pairs of counts

      P = (A + D, C - A + 1 - D),   Q = (A + 1 - D, C - A + D),
      C ~ Bin(n - 1, e^-eps0),  A ~ Bin(C, 1/2),  D ~ Bern(e^eps0 / (e^eps0 + 1)),

  are ``(eps, delta)``-indistinguishable. Here the hockey-stick divergence
  ``D_{e^eps}(P || Q)`` is computed exactly for every clone count ``c`` (the likelihood ratio
  is monotone in the first count, so the optimal test is a binomial tail) and averaged over
  ``C``; the binomial mass left out of the computed range of ``c`` is added in full, so the
  result is an upper bound. A bisection on ``eps`` returns the smallest ``eps`` (to ``tol``,
  rounded up) with ``delta(eps) <= delta``. Unlike the authors' reference code, no
  step-wise interval approximation over ``c`` is used, so one number is returned rather
  than a lower/upper pair; it lies between the reference code's lower and upper values.

- :func:`clone_pair_pld`: the privacy loss distribution (PLD, dp-accounting) of the clone pair
  ``(P, Q)`` itself, so that many shuffles compose tightly (used by
  :func:`~dprec.privacy.shuffle_guarantee.shuffled_guarantee` and the accountant).

FMF-LDP's per-user guarantee from these is :mod:`dprec.privacy.shuffle_guarantee`; a lower
bound on its true ``eps`` by one concrete pair, :mod:`dprec.privacy.shuffle_attack`.

The reports must be the only thing a user contributes to the shuffle and must come from
the same randomizer for every user (a report must not carry the sender's identity).
"""

from __future__ import annotations

import functools
import logging
import math

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import special, stats
from scipy.special import expit

from dprec.errors import DprecError, check_positive
from dprec.privacy.calibrate import bisect

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_CLONE_EPS0",
    "check_shuffle_args",
    "clone_pair_pld",
    "closed_form_epsilon",
    "condition_holds",
    "numerical_delta",
    "numerical_epsilon",
    "shuffled_epsilon",
]


MAX_CLONE_EPS0 = 700.0
"""Largest ``eps0`` the clone analysis accepts: ``e^eps0`` stays finite, and ``e^-eps0 < 1e-304``
means no clone ever appears, so shuffling cannot amplify anyway."""

_MAX_LOSS_BINS = 10_000_000  # loss grid of one clone PLD: [-eps0, eps0] / discretisation
_MAX_CELLS_PER_CHUNK = 4_000_000


def check_shuffle_args(eps0: float, n: int, delta: float | None = None) -> None:
    """Refuse an ``eps0`` that is not finite and > 0, an ``n`` that is not an integer >= 1,
    and a ``delta`` (when given) outside (0, 1)."""
    check_positive("eps0", eps0)
    if not math.isfinite(eps0):
        raise DprecError(f"eps0 must be finite, got {eps0}")
    if int(n) != n or n < 1:
        raise DprecError(f"n must be an integer >= 1, got {n}")
    if delta is not None and not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")


def condition_holds(eps0: float, n: int, delta: float) -> bool:
    """True when FMT21 Theorem 3.1 applies: ``eps0 <= log(n / (16 log(2/delta)))``.

    (The authors' reference code checks the slightly stricter ``log(4/delta)`` variant.)
    """
    check_shuffle_args(eps0, n, delta)
    return eps0 <= math.log(n / (16.0 * math.log(2.0 / delta)))


def closed_form_epsilon(eps0: float, n: int, delta: float, variant: str = "reference") -> float:
    """Shuffled ``eps`` for ``n`` ``eps0``-DP reports at ``delta`` (FMT21, Theorem 3.1).

    With ``s = 8 sqrt(e^eps0 log(4/delta)) / sqrt(n) + 8 e^eps0 / n``:

    - ``variant="stated"``: ``eps = log(1 + (e^eps0 - 1) / (e^eps0 + 1) * s)``, Theorem 3.1
      as restated in the literature (e.g. Canonne's "Privacy doona" post).
    - ``variant="reference"`` (default): ``eps = log(1 + (1 - e^-eps0) /
      (1 + e^(-eps0 - log(1 + s))) * s)``, what the authors' reference code
      (apple/ml-shuffling-amplification) evaluates. Its factor is never smaller, so it is
      the conservative choice; it gives the published 0.5378 at ``n = 1e5, eps0 = 4,
      delta = 1e-6`` (the stated form gives 0.5346).

    The result is capped at ``eps0`` (shuffling is post-processing, so ``eps0`` always
    holds). Raises ``DprecError`` when :func:`condition_holds` is false.
    """
    if variant not in ("reference", "stated"):
        raise DprecError(f"variant must be 'reference' or 'stated', got {variant!r}")
    if not condition_holds(eps0, n, delta):
        raise DprecError(
            "eps0 must be <= log(n / (16 log(2/delta))) for the closed-form shuffling bound, "
            f"got eps0={eps0}, n={n}, delta={delta} "
            f"(limit {math.log(n / (16.0 * math.log(2.0 / delta))):.4g})"
        )
    e0 = math.exp(eps0)
    s = 8.0 * math.sqrt(e0 * math.log(4.0 / delta)) / math.sqrt(n) + 8.0 * e0 / n
    if variant == "stated":
        factor = math.tanh(eps0 / 2.0)  # (e^eps0 - 1) / (e^eps0 + 1)
    else:
        factor = -math.expm1(-eps0) / (1.0 + math.exp(-eps0) / (1.0 + s))
    return min(eps0, math.log1p(factor * s))


def _clone_range(eps0: float, n: int, tail: float) -> np.ndarray:
    """Clone counts ``c`` of ``Bin(n - 1, e^-eps0)`` outside which at most ``2 tail`` mass lies."""
    p = math.exp(-eps0)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    lo = int(stats.binom.ppf(tail, n - 1, p))
    hi = int(stats.binom.isf(tail, n - 1, p))
    lo = max(0, min(lo, n - 1))
    hi = max(lo, min(hi, n - 1))
    return np.arange(lo, hi + 1, dtype=np.int64)


def _hockey_stick_given_c(eps: float, eps0: float, c: np.ndarray) -> np.ndarray:
    """``D_{e^eps}(P_c || Q_c)`` for each clone count in ``c`` (exact, vectorised).

    Given ``C = c`` the first count is ``a = A + D`` under P and ``A + 1 - D`` under Q, with
    ``A ~ Bin(c, 1/2)``. ``P_c(a) / Q_c(a)`` increases with ``r = a / (c + 1 - a)``, so the
    set where ``P_c > e^eps Q_c`` is ``{a > beta (c + 1)}`` for a threshold ``beta``.
    """
    if eps >= eps0:
        return np.zeros(c.shape, dtype=float)
    alpha, alpha_bar = float(expit(eps0)), float(expit(-eps0))  # 1 - alpha without rounding
    ee = math.exp(eps)
    r_star = (ee * alpha - alpha_bar) / (alpha - ee * alpha_bar)
    # smallest a with a > beta (c + 1), beta = r/(1 + r), i.e. with c + 1 - a < (c + 1)/(1 + r):
    # computing beta itself rounds it to 1.0 once r > 2^53 (eps > ~37) and empties the region
    m = c + 2 - np.ceil((c + 1) / (1.0 + r_star)).astype(np.int64)
    sf_a = stats.binom.sf(m - 2, c, 0.5)  # P(A >= m - 1)
    sf_b = stats.binom.sf(m - 1, c, 0.5)  # P(A >= m)
    p_tail = alpha * sf_a + alpha_bar * sf_b
    q_tail = alpha_bar * sf_a + alpha * sf_b
    return np.maximum(p_tail - ee * q_tail, 0.0)


def numerical_delta(eps: float, eps0: float, n: int, tail: float = 1e-15) -> float:
    """Upper bound on the shuffled ``delta`` at ``eps`` via the clone reduction (FMT21 Thm 3.2).

    ``delta(eps) = sum_c Pr[C = c] D_{e^eps}(P_c || Q_c)`` plus the omitted mass of ``C``
    (at most ``2 tail``). The two directions of the divergence are equal here: reflecting the
    first count ``a -> c + 1 - a`` maps P onto Q.
    """
    check_shuffle_args(eps0, n)
    if eps < 0:
        raise DprecError(f"eps must be >= 0, got {eps}")
    c = _clone_range(eps0, n, tail)
    weights = stats.binom.pmf(c, n - 1, math.exp(-eps0))
    missing = max(0.0, 1.0 - float(weights.sum()))
    return min(1.0, float(weights @ _hockey_stick_given_c(eps, eps0, c)) + missing)


def numerical_epsilon(
    eps0: float, n: int, delta: float, tol: float = 1e-6, tail: float | None = None
) -> float:
    """Smallest shuffled ``eps`` (to ``tol``, rounded up) with ``numerical_delta <= delta``.

    FMT21 Section 4: bisection on ``eps`` over ``[0, eps0]`` using the monotone decrease of
    the hockey-stick divergence in ``eps``. ``tail`` is the mass of the clone count left out
    on each side (default ``delta * 1e-6``); it is added to ``delta`` in full.
    """
    check_shuffle_args(eps0, n, delta)
    check_positive("tol", tol)
    if eps0 >= MAX_CLONE_EPS0:
        return eps0  # e^-eps0 (n - 1) is negligible: no clone, no amplification
    tail = delta * 1e-6 if tail is None else tail
    c = _clone_range(eps0, n, tail)
    weights = stats.binom.pmf(c, n - 1, math.exp(-eps0))
    missing = max(0.0, 1.0 - float(weights.sum()))

    def delta_at(eps: float) -> float:
        return float(weights @ _hockey_stick_given_c(eps, eps0, c)) + missing

    if missing > delta:
        logger.warning("clone-count truncation mass %.3g exceeds delta %.3g", missing, delta)
        return eps0
    lo, hi = 0.0, eps0 - tol
    if delta_at(hi) > delta:
        return eps0  # no amplification worth reporting
    if delta_at(lo) <= delta:
        return 0.0
    return bisect(lambda eps: not delta_at(eps) <= delta, lo, hi, tol)[1]


def shuffled_epsilon(eps0: float, n: int, delta: float, method: str = "numerical") -> float:
    """Shuffled ``eps`` by ``method``: ``"numerical"`` (any ``eps0``) or ``"closed_form"``."""
    if method == "numerical":
        return numerical_epsilon(eps0, n, delta)
    if method == "closed_form":
        return closed_form_epsilon(eps0, n, delta)
    raise DprecError(f"method must be 'numerical' or 'closed_form', got {method!r}")


def _clone_windows(eps0: float, n: int, tail: float, alpha: float, beta: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The clone counts ``c`` kept, their weights ``Pr[C = c]``, the window ``[a_lo, a_hi]``
    of first counts kept for each, and the P-mass outside (clone counts and first counts
    beyond the ``tail`` quantiles), which :func:`clone_pair_pld` counts as infinite loss."""
    p_clone = math.exp(-eps0)
    c = _clone_range(eps0, n, tail)
    w = stats.binom.pmf(c, n - 1, p_clone)
    c_missing = 0.0
    if n > 1:
        c_missing = float(
            stats.binom.cdf(c[0] - 1, n - 1, p_clone) + stats.binom.sf(c[-1], n - 1, p_clone)
        )
    # window of first counts a = A + {0, 1} kept for each c
    a_lo = np.maximum(np.nan_to_num(stats.binom.ppf(tail, c, 0.5)), 0).astype(np.int64)
    a_hi = np.minimum(np.nan_to_num(stats.binom.isf(tail, c, 0.5)).astype(np.int64) + 1, c + 1)
    # P-mass outside the window: A + 1 (prob alpha) or A (prob 1 - alpha) falls outside
    out_shift = stats.binom.cdf(a_lo - 2, c, 0.5) + stats.binom.sf(a_hi - 1, c, 0.5)
    out_same = stats.binom.cdf(a_lo - 1, c, 0.5) + stats.binom.sf(a_hi, c, 0.5)
    infinity_mass = c_missing + float(w @ (alpha * out_shift + beta * out_same))
    return c, w, a_lo, a_hi, infinity_mass


def _clone_losses(c: np.ndarray, w: np.ndarray, a_lo: np.ndarray, a_hi: np.ndarray,
                  alpha: float, beta: float, interval: float, half: int) -> np.ndarray:
    """P's mass on the loss grid ``(-half .. half) x interval`` (losses rounded up), summed
    over the clone counts ``c`` and their windows of first counts, in chunks of clone
    counts vectorised inside."""
    width = int((a_hi - a_lo).max()) + 1
    offsets = np.arange(width, dtype=np.int64)
    acc = np.zeros(2 * half + 1)
    log_fact = special.gammaln(np.arange(int(c[-1]) + 3) + 1.0)  # log k!, k <= c + 2
    step = max(1, _MAX_CELLS_PER_CHUNK // width)
    for s in range(0, c.size, step):  # chunks of clone counts, vectorised inside
        cc = c[s : s + step, None]
        a = a_lo[s : s + step, None] + offsets
        keep = a <= a_hi[s : s + step, None]
        a = np.where(keep, a, 0)
        b = cc + 1 - a
        # Bin(a; c, 1/2) and Bin(a - 1; c, 1/2) from the log-factorial table (0 off support)
        log_half = log_fact[cc] - cc * math.log(2.0)
        pmf_a = np.where(
            a <= cc, np.exp(log_half - log_fact[a] - log_fact[np.maximum(cc - a, 0)]), 0.0
        )
        pmf_prev = np.where(
            a >= 1, np.exp(log_half - log_fact[np.maximum(a - 1, 0)] - log_fact[b]), 0.0
        )
        prob = w[s : s + step, None] * (alpha * pmf_prev + beta * pmf_a)
        loss = np.log(alpha * a + beta * b) - np.log(beta * a + alpha * b)
        idx = np.ceil(loss / interval).astype(np.int64) + half
        acc += np.bincount(idx[keep], weights=prob[keep], minlength=acc.size)
    return acc


@functools.lru_cache(maxsize=32)
def clone_pair_pld(
    eps0: float,
    n: int,
    value_discretization_interval: float = 1e-4,
    tail_mass: float = 1e-15,
) -> pld.PrivacyLossDistribution:
    """PLD of FMT21's clone pair ``(P, Q)`` for one shuffle of ``n`` ``eps0``-DP reports.

    ``P = (A + D, C - A + 1 - D)``, ``Q = (A + 1 - D, C - A + D)`` with ``C ~ Bin(n - 1,
    e^-eps0)``, ``A ~ Bin(C, 1/2)``, ``D ~ Bern(e^eps0 / (e^eps0 + 1))``. At ``C = c`` and
    first count ``a`` (``b = c + 1 - a``) the privacy loss is

        log P/Q = log((alpha a + (1 - alpha) b) / ((1 - alpha) a + alpha b)),  alpha = expit(eps0),

    in ``[-eps0, eps0]``, and ``P(a, c) = Pr[C = c] (alpha Bin(a - 1; c, 1/2) + (1 - alpha)
    Bin(a; c, 1/2))``.

    Why composing this PLD is sound: FMT21 Thm 3.2 (for ``eps0``-DP local randomizers, which
    may be chosen adaptively) gives a post-processing ``Phi`` with ``S(X0) = Phi(P)`` and
    ``S(X1) = Phi(Q)`` for datasets differing in one user's data. By data processing every
    hockey-stick divergence of the shuffle is at most that of ``(P, Q)``: ``(P, Q)`` is a
    dominating pair. Reflecting the first count, ``a -> c + 1 - a``, maps ``P`` onto ``Q``, so
    both directions have the same PLD (the result is symmetric). Dominating pairs compose
    under adaptive composition (Zhu, Dong, Wang, AISTATS 2022, Thm 10), so the ``k``-fold
    self-composition bounds ``k`` shuffles whose randomizers depend on earlier outputs.

    Numerics (all pessimistic, so the result stays an upper bound): the clone counts outside
    ``Bin(n - 1, e^-eps0)`` quantiles and the counts ``A`` outside ``Bin(c, 1/2)`` quantiles
    (``tail_mass / 4`` per side each) are sent to loss ``+inf`` with their exact mass, and
    losses are rounded up to multiples of ``value_discretization_interval`` (dp-accounting's
    privacy-bucket estimate). Cached on all four arguments; treat the result as read-only.
    """
    check_shuffle_args(eps0, n)
    check_positive("value_discretization_interval", value_discretization_interval)
    if not 0 < tail_mass < 1e-3:
        raise DprecError(f"tail_mass must be in (0, 1e-3), got {tail_mass}")
    if eps0 >= MAX_CLONE_EPS0:
        raise DprecError(
            f"eps0 must be < {MAX_CLONE_EPS0:g} for the clone analysis (no clones appear, "
            f"use the local bound), got {eps0}"
        )
    half = int(math.ceil(eps0 / value_discretization_interval)) + 1
    if 2 * half + 1 > _MAX_LOSS_BINS:
        raise DprecError(
            f"eps0 / value_discretization_interval must be <= {_MAX_LOSS_BINS // 2}, got "
            f"{eps0} / {value_discretization_interval}; use a coarser discretisation"
        )
    n = int(n)
    alpha, beta = float(expit(eps0)), float(expit(-eps0))
    c, w, a_lo, a_hi, infinity_mass = _clone_windows(eps0, n, tail_mass / 4.0, alpha, beta)
    acc = _clone_losses(c, w, a_lo, a_hi, alpha, beta, value_discretization_interval, half)
    nonzero = np.flatnonzero(acc)
    probs = acc[nonzero[0] : nonzero[-1] + 1].copy()
    probs.setflags(write=False)
    logger.debug("clone PLD eps0=%g n=%d: %d bins, inf %.3g", eps0, n, probs.size, infinity_mass)
    pmf = pld_pmf.DensePLDPmf(
        value_discretization_interval, int(nonzero[0] - half), probs, infinity_mass, True
    )
    return pld.PrivacyLossDistribution(pmf)
