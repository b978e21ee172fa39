"""Exact (eps, delta) of a whole bit vector flipped bit by bit (DPLCF, OUE) at user level.

A user's ``N`` bits are flipped independently in one go: a 1 is reported 1 with probability
``p``, a 0 with probability ``q`` (Gao et al. SIGIR 2020, Eq. 3; OUE: ``p = 1/2``,
``q = 1/(e^eps + 1)``, Wang et al. USENIX Security 2017). Neighbouring inputs are any two
vectors (replace-one user). Bits on which they agree have the same report law and add
nothing; each bit on which they differ adds a "presence" pair ``(Ber p, Ber q)`` (1 vs 0) or
an "absence" pair ``(Ber q, Ber p)`` (0 vs 1). Composing with a further pair never lowers a
hockey-stick divergence, so the worst pairs differ in all ``N`` bits, ``m`` of them in the
presence direction; the other direction of the same pair swaps ``m`` and ``N - m``. Hence

    delta(eps) = max over m in 0..N of E_P[(1 - e^(eps - L_m))_+].

With ``a = ln(p/q)``, ``b = ln((1-q)/(1-p))``, ``j`` presence bits reported 1 and ``l``
absence bits reported 0, the loss is ``L_m = (j + l)(a + b) - m b - (N - m) a``, and under
``P`` ``j ~ Bin(m, p)``, ``l ~ Bin(N - m, 1 - q)``: the law of ``s = j + l`` is one
convolution, evaluated exactly for every ``m``. Each binomial's tails beyond a mass
``tail`` are cut and their mass added to delta in full, so the result is an upper bound
(tight to ``tail``). The per-bit symmetrised pair that a generic PLD composes
(:class:`~dprec.privacy.pld_accountant.PldAccountant`) dominates every ``m`` at once, so it can
only be larger.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special, stats

from dprec.errors import DprecError

__all__ = ["MAX_EXACT_BITS", "bit_vector_delta", "bit_vector_epsilon"]

MAX_EXACT_BITS = 20_000
"""Largest vector the exact analysis accepts (its cost grows as N^2 sqrt(N) log(1/tail))."""
_BISECTIONS = 64


def _check(p: float, q: float, bits: int, delta: float | None) -> None:
    if not (0.0 < q < p < 1.0):
        raise DprecError(f"need 0 < q < p < 1 for a two-sided bit flip, got p={p}, q={q}")
    if isinstance(bits, bool) or int(bits) != bits or not 1 <= bits <= MAX_EXACT_BITS:
        raise DprecError(f"bits must be an integer in [1, {MAX_EXACT_BITS}], got {bits!r}")
    if delta is not None and not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")


def _windows(ns: np.ndarray, prob: float, tail: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per n in ``ns``: the window [lo, hi] of Bin(n, prob) outside which at most ``tail``
    mass per side lies, and the mass outside it (vectorised over n)."""
    lo = np.clip(np.nan_to_num(stats.binom.ppf(tail, ns, prob)), 0, ns).astype(np.int64)
    hi = np.clip(np.nan_to_num(stats.binom.isf(tail, ns, prob)), lo, ns).astype(np.int64)
    cut = stats.binom.cdf(lo - 1, ns, prob) + stats.binom.sf(hi, ns, prob)
    return lo, hi, np.where(ns > 0, cut, 0.0)


def _split_laws(p: float, q: float, bits: int,
                tail: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row m (presence bits): losses, P-probabilities (0-padded) and the P-mass cut."""
    a, b = math.log(p / q), math.log1p(-q) - math.log1p(-p)
    ms = np.arange(bits + 1)
    j_lo, j_hi, j_cut = _windows(ms, p, tail)
    l_lo, l_hi, l_cut = _windows(bits - ms, 1.0 - q, tail)
    log_fact = special.gammaln(np.arange(bits + 2) + 1.0)

    def pmf(lo: int, hi: int, n: int, pr: float) -> np.ndarray:
        k = np.arange(lo, hi + 1)
        return np.exp(log_fact[n] - log_fact[k] - log_fact[n - k]
                      + k * math.log(pr) + (n - k) * math.log1p(-pr))

    width = int((j_hi - j_lo + l_hi - l_lo).max()) + 1
    loss = np.full((bits + 1, width), -np.inf)
    prob = np.zeros((bits + 1, width))
    for m in range(bits + 1):
        row = np.convolve(pmf(j_lo[m], j_hi[m], m, p), pmf(l_lo[m], l_hi[m], bits - m, 1.0 - q))
        s = np.arange(row.size) + j_lo[m] + l_lo[m]
        loss[m, : row.size] = s * (a + b) - m * b - (bits - m) * a
        prob[m, : row.size] = row
    return loss, prob, j_cut + l_cut


class _Laws:
    """The (loss, P-probability) atoms of every split m, flattened; atoms with a loss at or
    below a known lower end of eps are dropped as the bisection raises it."""

    def __init__(self, loss: np.ndarray, prob: np.ndarray, cut: np.ndarray) -> None:
        keep = prob > 0
        self.rows = np.nonzero(keep)[0]
        self.loss, self.prob, self.cut = loss[keep], prob[keep], cut

    def delta(self, eps: float) -> float:
        over = self.loss > eps
        gain = self.prob[over] * -np.expm1(eps - self.loss[over])
        sums = np.bincount(self.rows[over], gain, minlength=self.cut.size) + self.cut
        return min(1.0, float(sums.max()))

    def drop_below(self, eps: float) -> None:
        keep = self.loss > eps
        self.rows, self.loss, self.prob = self.rows[keep], self.loss[keep], self.prob[keep]


def bit_vector_delta(eps: float, p: float, q: float, bits: int, tail: float = 1e-18) -> float:
    """delta(eps) of ``bits`` flips (p, q) of one vector, worst pair of vectors (an upper
    bound: binomial tails of mass ``tail`` per side are counted in full)."""
    _check(p, q, bits, None)
    return _Laws(*_split_laws(float(p), float(q), int(bits), tail)).delta(float(eps))


def bit_vector_epsilon(p: float, q: float, bits: int, delta: float,
                       tail: float | None = None) -> float:
    """Smallest eps with :func:`bit_vector_delta` <= ``delta`` (bisection, rounded up to
    ~1e-12 relative). ``tail`` defaults to ``delta * 1e-9``."""
    _check(p, q, bits, delta)
    tail = delta * 1e-9 if tail is None else float(tail)
    return _epsilon(float(p), float(q), int(bits), float(delta), tail)


@functools.lru_cache(maxsize=64)
def _epsilon(p: float, q: float, bits: int, delta: float, tail: float) -> float:
    """:func:`bit_vector_epsilon`, memoised: a pure function of its arguments that every fit
    of a run (seeds, folds, an eps sweep's seeds) asks again (0.25 s at 1,682 bits, about 7 s
    at 9,953)."""
    laws = _Laws(*_split_laws(p, q, bits, tail))
    if laws.delta(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, float(bits) * max(math.log(p / q), math.log1p(-q) - math.log1p(-p))
    if laws.delta(hi) > delta:
        return math.inf  # the cut tails alone exceed delta
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if laws.delta(mid) > delta:
            lo = mid
            laws.drop_below(lo)
        else:
            hi = mid
    return hi
