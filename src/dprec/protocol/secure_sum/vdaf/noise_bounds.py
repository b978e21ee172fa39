"""The honest client's noise share, truncated so that the validity check can be written
for the noised vector ``y = v + z`` (issue 31 §1, option (a)), and what the truncation
costs the privacy accounting.

A client's share is ``z ~ Sk(mu)^d`` (``Poisson(mu) - Poisson(mu)`` per coordinate). An
honest client redraws ``z`` until ``|z_j| <= T`` for every ``j`` (and, where the circuit
bounds the sum, ``|sum_j z_j| <= S``; where it bounds the L2 norm, ``||v + z||_2^2 <=
B^2``). The redrawn share is the original conditioned on an event of probability
``1 - eta`` with, by the union bound,

    eta <= d P(|Sk(mu)| > T) + P(|Sk(d mu)| > S)  [+ the L2 term, see l2_bound_sq],

so its total-variation distance from the untruncated share is at most ``eta`` and that of
the ``n`` shares together at most ``n eta``. If the untruncated release is
``(epsilon, delta)``-DP, the truncated one is ``(epsilon, delta + (1 + e^epsilon) n eta)``-DP
(a coupling: ``P[M'(x) in E] <= P[M(x) in E] + n eta`` for every input ``x``): the accountant
adds :meth:`NoiseTruncation.delta_cost`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from dprec.errors import check_int, check_real
from dprec.protocol.secure_sum.errors import SecureSumError

__all__ = ["MAX_EXACT_MU", "TOO_MANY_DRAWS", "NoiseTruncation", "choose_truncation",
           "l2_bound_sq", "meets_truncation", "skellam_tail", "truncated_noise_share"]


MAX_EXACT_MU = 50.0
"""Above this Poisson rate the tail is Bernstein's bound, not the exact sum."""


def skellam_tail(mu: float, t: int) -> float:
    """``P(|Sk(mu)| > t)``, or an upper bound on it. For ``mu <= 50``: twice the sum of
    SciPy's Skellam pmf over ``t + 1, ..., t + 50 + 40 sqrt(mu)`` (the pmf, not ``sf = 1 -
    cdf``, which loses every digit below ``1e-16``; the terms past the window are
    negligible). For larger ``mu`` (where SciPy's pmf is slow): Bernstein's bound
    ``2 exp(-(t+1)^2 / (2 (2 mu + (t+1)/3)))`` (as in
    :func:`~dprec.protocol.secure_sum.params.noise_tail_bound`): ``T`` comes out slightly
    larger and the stated cost is an upper bound."""
    if mu == 0:
        return 0.0
    if mu > MAX_EXACT_MU:
        u = t + 1
        return float(min(1.0, 2.0 * math.exp(-u * u / (2.0 * (2.0 * mu + u / 3.0)))))
    width = int(50 + 40 * math.sqrt(mu))
    ks = np.arange(t + 1, t + 1 + width)
    return float(min(1.0, 2.0 * stats.skellam.pmf(ks, mu, mu).sum()))


@dataclasses.dataclass(frozen=True)
class NoiseTruncation:
    """The bounds an honest client's share satisfies and their total-variation cost."""

    mu_share: float
    """Poisson rate of each part of one client's share (variance ``2 mu``)."""
    dimension: int
    clients: int
    coordinate_bound: int
    """``T``: ``|z_j| <= T``."""
    sum_bound: int
    """``S``: ``|sum_j z_j| <= S``."""
    per_client_tv: float
    """``eta``: the probability that an untruncated share breaks a bound."""

    @property
    def total_tv(self) -> float:
        """``n eta``: the total-variation cost of all ``n`` truncated shares."""
        return self.clients * self.per_client_tv

    def delta_cost(self, epsilon: float) -> float:
        """What the accountant adds to ``delta``: ``(1 + e^epsilon) n eta``."""
        return (1.0 + math.exp(epsilon)) * self.total_tv


def choose_truncation(mu_share: float, dimension: int, clients: int,
                      total_tv: float = 2.0 ** -40) -> NoiseTruncation:
    """The smallest ``T`` and ``S`` whose joint cost is at most ``total_tv`` (half each)."""
    check_real("mu_share", mu_share, low=0.0)
    check_int("dimension", dimension, 1)
    check_int("clients", clients, 1)
    check_real("total_tv", total_tv, low=0.0, low_open=True)
    budget = total_tv / 2.0 / clients
    total_mu = dimension * mu_share
    t = _smallest_bound(lambda b: dimension * skellam_tail(mu_share, b) <= budget, mu_share)
    s = _smallest_bound(lambda b: skellam_tail(total_mu, b) <= budget, total_mu)
    eta = dimension * skellam_tail(mu_share, t) + skellam_tail(total_mu, s)
    return NoiseTruncation(float(mu_share), dimension, clients, t, s, eta)


def _smallest_bound(ok, mu: float) -> int:
    """The smallest integer ``b >= 0`` with ``ok(b)``, ``ok`` monotone (doubling, then
    bisection: ``O(log b)`` tail evaluations)."""
    high = max(1, int(math.sqrt(2 * mu)))
    while not ok(high):
        high *= 2
    low = -1  # ok(low) is False or low is below the range
    while high - low > 1:
        mid = (low + high) // 2
        if mid >= 0 and ok(mid):
            high = mid
        else:
            low = mid
    return high


def l2_bound_sq(vector_bound: float, truncation: NoiseTruncation, eta: float = 2.0 ** -50
                ) -> tuple[int, float]:
    """``(B^2, eta_2)``: a bound ``||v + z||_2^2 <= B^2`` for every ``||v||_2 <=
    vector_bound`` that an honest truncated share breaks w.p. at most ``eta_2 = eta`` (to a
    factor ``1 + O(eta)`` for the other truncation events). Bernstein on ``sum_j z_j^2``:
    the ``z_j^2`` are independent, in ``[0, T^2]``, with mean at most ``2 mu`` and variance
    at most ``E z^4 = 2 mu + 12 mu^2`` (Skellam's cumulants ``k2 = k4 = 2 mu``; conditioning
    on ``|z_j| <= T`` only lowers both), so with ``L = ln(1/eta)``
    ``||z||^2 <= 2 mu d + sqrt(2 d (2 mu + 12 mu^2) L) + (2/3) T^2 L``; for ``mu <= 50`` the
    smaller Chernoff bound on the exact truncated pmf (:func:`_chernoff_square_sum`); then
    the triangle inequality."""
    tr = truncation
    mu, d, log_terms = tr.mu_share, tr.dimension, math.log(1 / eta)
    noise_sq = (2 * mu * d + math.sqrt(2 * d * (2 * mu + 12 * mu * mu) * log_terms)
                + 2.0 / 3.0 * tr.coordinate_bound ** 2 * log_terms)
    if 0 < mu <= MAX_EXACT_MU:
        noise_sq = min(noise_sq, _chernoff_square_sum(mu, tr.coordinate_bound, d, log_terms))
    return math.ceil((vector_bound + math.sqrt(noise_sq)) ** 2), eta


def _chernoff_square_sum(mu: float, t: int, d: int, log_terms: float) -> float:
    """``min_lambda (d ln E[e^(lambda z^2)] + L) / lambda`` over a grid, ``z`` the
    coordinate-truncated ``Sk(mu)`` (its exact pmf, renormalised): Chernoff's bound on
    ``sum_j z_j^2`` exceeded w.p. at most ``e^-L``."""
    ks = np.arange(-t, t + 1)
    pmf = stats.skellam.pmf(ks, mu, mu)
    pmf = pmf / pmf.sum()
    lams = np.geomspace(1e-4, 20.0 / max(1, t * t), 400)
    log_mgf = np.log((pmf[None, :] * np.exp(lams[:, None] * ks[None, :] ** 2)).sum(axis=1))
    return float(((d * log_mgf + log_terms) / lams).min())


def meets_truncation(truncation: NoiseTruncation, z: np.ndarray, check_sum: bool = True,
                     vector: np.ndarray | None = None, l2_bound_sq: int | None = None
                     ) -> bool:
    """Whether the share ``z`` meets the bounds an honest share is redrawn to (module
    docstring): ``|z_j| <= T``, ``|sum z| <= S`` (``check_sum``) and ``||vector + z||^2 <=
    l2_bound_sq`` (when given)."""
    tr = truncation
    if np.abs(z).max(initial=0) > tr.coordinate_bound or (
            check_sum and abs(int(z.sum())) > tr.sum_bound):
        return False
    if l2_bound_sq is not None:
        y = np.asarray(vector, dtype=np.int64) + z
        if int(y @ y) > l2_bound_sq:
            return False
    return True


TOO_MANY_DRAWS = ("noise draws all broke the truncation bounds, which an honest draw does "
                  "with probability eta per draw: check mu and T")


def truncated_noise_share(truncation: NoiseTruncation, rng: np.random.Generator,
                          check_sum: bool = True, vector: np.ndarray | None = None,
                          l2_bound_sq: int | None = None, max_draws: int = 64,
                          draw: Callable[[int, np.random.Generator], np.ndarray] | None = None
                          ) -> np.ndarray:
    """An honest client's share ``Sk(mu)^d`` redrawn until it meets the bounds
    (:func:`meets_truncation`). ``rng`` is the client's own generator (a CSPRNG on a
    device). ``draw(d, rng)``: the share when its coordinates have different ``mu`` (dpals'
    segments, each at most the truncation's ``mu_share``, so the bounds hold at most at its
    cost); default ``Sk(mu_share)^d``."""
    tr = truncation
    for _ in range(max_draws):
        z = draw(tr.dimension, rng) if draw is not None else \
            rng.poisson(tr.mu_share, tr.dimension) - rng.poisson(tr.mu_share, tr.dimension)
        if meets_truncation(tr, z, check_sum, vector, l2_bound_sq):
            return z.astype(np.int64)
    raise SecureSumError(f"{max_draws} {TOO_MANY_DRAWS}")
