"""What an honest DPLCF upload can look like, from public parameters alone (issue 26 §2, §4).

An honest client holds a history h of s <= L items (L: the public history cap, N when there
is none) and flips each of its N bits independently: a 1 stays 1 with probability p, a 0
becomes 1 with probability q < p (:class:`~dprec.mechanisms.bitflip.BitFlip`). Two checks
follow, each with a stated bound on the chance of refusing an honest upload.

Validity range (:func:`ones_range`). The number of ones of the upload is
K_s = Binomial(s, p) + Binomial(N - s, q). Replacing one Bernoulli(q) term by a
Bernoulli(p) one makes K stochastically larger, so K_s is stochastically increasing in s:
for every honest s in [0, L],

    P(K_s < low) <= P(K_0 < low),   K_0 = Binomial(N, q),
    P(K_s > high) <= P(K_L > high), K_L = Binomial(L, p) + Binomial(N - L, q)
                                       (<=_st L + Binomial(N - L, q), the issue's bound).

``low`` is the largest count with P(K_0 < low) <= rate / 2 and ``high`` the smallest with
P(K_L > high) <= rate / 2, both from exact binomial laws (``scipy.stats.binom``; K_L by
direct convolution of the two pmfs, no normal approximation). An honest upload is refused
with probability at most ``rate``, whatever its history (:func:`refusal_probability` gives
the exact value for a history of s items). Without a cap (L = N) ``high`` is the upper
``rate / 2`` quantile of Binomial(N, p): the all-ones vector is still refused.

Frequent-itemset screening (Cao, Jia & Gong, USENIX Security 2021, Sec. 6, "detecting fake
users"). An honest upload contains a given set S of z items with probability at most p^z
(p > q; p^z when the user holds all of S), independently across users, so the number of
honest uploads containing S is stochastically below Binomial(n, p^z). With
``threshold`` the smallest t with C(N, z) P(Binomial(n, p^z) >= t) <= rate
(:func:`screen_threshold`), the chance that ANY z-itemset reaches ``threshold`` honest
uploads is at most ``rate`` (union bound over all C(N, z) sets): with no attacker, nothing
is dropped with probability >= 1 - rate. :func:`flagged_uploads` searches for such sets
greedily (seeded by the item pairs that co-occur most above independence) and flags every
upload that contains one; the search is a heuristic, the false-positive bound is not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom

from dprec.errors import DprecError
from dprec.selection import top_k, top_k_row

__all__ = [
    "BitLaw",
    "OnesRange",
    "flagged_uploads",
    "ones_counts",
    "ones_range",
    "refusal_probability",
    "screen_threshold",
]

_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], np.int64)


def _check_rate(rate: float) -> float:
    if not (isinstance(rate, (int, float)) and 0.0 < rate < 1.0):
        raise DprecError(f"the stated false-refusal rate must be in (0, 1), got {rate!r}")
    return float(rate)


@dataclass(frozen=True)
class BitLaw:
    """The public law of one honest upload: N bits, flips (p, q), at most ``cap`` true ones."""

    n_items: int
    p: float
    q: float
    cap: int

    def __post_init__(self) -> None:
        if isinstance(self.n_items, bool) or int(self.n_items) != self.n_items \
                or self.n_items < 1:
            raise DprecError(f"n_items must be an integer >= 1, got {self.n_items}")
        if not 0.0 <= self.q < self.p <= 1.0:
            raise DprecError(f"need 0 <= q < p <= 1, got p={self.p}, q={self.q}")
        if isinstance(self.cap, bool) or int(self.cap) != self.cap \
                or not 0 <= self.cap <= self.n_items:
            raise DprecError(f"the history cap must be an integer in [0, N = {self.n_items}], "
                             f"got {self.cap}")


def _ones_pmf(law: BitLaw, s: int) -> np.ndarray:
    """P(K_s = k), k = 0..N: Binomial(s, p) convolved with Binomial(N - s, q)."""
    n = law.n_items
    held = binom.pmf(np.arange(s + 1), s, law.p)
    other = binom.pmf(np.arange(n - s + 1), n - s, law.q)
    return np.convolve(held, other)


@dataclass(frozen=True)
class OnesRange:
    """Counts of ones an honest upload has, except with probability <= ``rate``."""

    low: int
    high: int
    rate: float

    def admits(self, packed: np.ndarray) -> np.ndarray:
        """bool per packed row (uint8, padding bits 0): low <= ones <= high."""
        ones = ones_counts(packed)
        return (ones >= self.low) & (ones <= self.high)


def ones_counts(packed: np.ndarray) -> np.ndarray:
    """int64 number of set bits in each row of a packed uint8 matrix."""
    return _POPCOUNT[np.asarray(packed, np.uint8)].sum(axis=1)


def ones_range(law: BitLaw, rate: float) -> OnesRange:
    """The validity range of the module docstring: refuses an honest upload with
    probability <= ``rate`` (each tail at most rate / 2, exact binomial laws)."""
    half = _check_rate(rate) / 2.0
    n = law.n_items
    below = binom.cdf(np.arange(n + 1), n, law.q)  # P(K_0 <= k)
    low = int(np.count_nonzero(below <= half))  # P(K_0 < low) = below[low - 1] <= half
    pmf = _ones_pmf(law, law.cap)
    at_least = np.append(np.cumsum(pmf[::-1])[::-1], 0.0)  # P(K_L >= k), k = 0..N+1
    high = int(np.flatnonzero(at_least[1:] <= half)[0])  # first k with P(K_L > k) <= half
    return OnesRange(low, high, float(rate))


def refusal_probability(law: BitLaw, bounds: OnesRange, s: int) -> float:
    """Exact P(an honest upload of a history of ``s`` items falls outside ``bounds``)."""
    if isinstance(s, bool) or int(s) != s or not 0 <= s <= law.n_items:
        raise DprecError(f"s must be an integer in [0, {law.n_items}], got {s}")
    pmf = _ones_pmf(law, int(s))
    return float(pmf[:bounds.low].sum() + pmf[bounds.high + 1:].sum())


def screen_threshold(n_uploads: int, n_items: int, p: float, z: int, rate: float) -> int:
    """Smallest t with C(N, z) P(Binomial(n, p^z) >= t) <= ``rate`` (n + 1: never flags)."""
    _check_rate(rate)
    if isinstance(z, bool) or int(z) != z or not 2 <= z <= n_items:
        raise DprecError(f"the itemset size z must be an integer in [2, N = {n_items}], got {z}")
    n = int(n_uploads)
    log_sets = gammaln(n_items + 1) - gammaln(z + 1) - gammaln(n_items - z + 1)
    t = np.arange(n + 1)
    tail = binom.logsf(t - 1, n, float(p) ** z)  # log P(Binomial >= t)
    ok = np.flatnonzero(log_sets + tail <= math.log(rate))
    return int(ok[0]) if ok.size else n + 1


def flagged_uploads(bits: np.ndarray, z: int, threshold: int, seeds: int = 200,
                    keep: float = 0.9) -> tuple[np.ndarray, list[np.ndarray]]:
    """Uploads that contain a z-itemset held by >= ``threshold`` uploads, and those sets.

    ``bits``: bool (n, N), one upload per row. Seeds: the ``seeds`` item pairs with the
    largest standardised co-occurrence excess (m11 - c_i c_j / n) / sqrt(c_i c_j / n + 1),
    ties by :func:`~dprec.selection.top_k`. From each seed, among the uploads not flagged
    yet, the set grows by the item most
    common among the uploads that hold the whole set (ties: the lower index) until it has z
    items; a seed is dropped as soon as fewer than ``threshold`` uploads hold its set.
    A flagged set then keeps growing while an item more keeps at least ``keep`` of its
    support (and ``threshold`` uploads): a coalition sharing more than z items (all-ones
    shares all N) is then cut from the honest uploads that happen to hold the first z.
    Only flagged uploads are dropped, so the false-positive bound is unchanged.
    Cost: one N x N Gram of the uploads, then column sums over the shrinking support.
    """
    x = np.asarray(bits, bool)
    n, n_items = x.shape
    flagged = np.zeros(n, bool)
    found: list[np.ndarray] = []
    if n < threshold or n_items < z:
        return flagged, found
    xf = x.astype(np.float32)
    m11 = (xf.T @ xf).astype(np.float64)
    col = np.diagonal(m11).copy()
    expect = np.outer(col, col) / n
    excess = (m11 - expect) / np.sqrt(expect + 1.0)
    excess[np.tril_indices(n_items)] = -np.inf
    flat = top_k(excess.reshape(1, -1), seeds)[0]
    for pair in flat:
        i, j = divmod(int(pair), n_items)
        if not np.isfinite(excess[i, j]) or m11[i, j] < threshold:
            continue
        chosen = [i, j]
        support = x[:, i] & x[:, j] & ~flagged  # each coalition is searched once
        while len(chosen) < z and support.sum() >= threshold:
            counts = x[support].sum(axis=0).astype(np.float64)
            counts[chosen] = -1.0
            chosen.append(int(top_k_row(counts, 1)[0]))
            support &= x[:, chosen[-1]]
        if len(chosen) == z and support.sum() >= threshold:
            while len(chosen) < n_items:
                counts = x[support].sum(axis=0).astype(np.float64)
                counts[chosen] = -1.0
                best = int(top_k_row(counts, 1)[0])
                if counts[best] < max(threshold, keep * support.sum()):
                    break
                chosen.append(best)
                support &= x[:, best]
            flagged |= support
            found.append(np.sort(np.asarray(chosen, np.int64)))
    return flagged, found
