"""What one dpals user can change, and the noise that hides it (zero-out adjacency for the
secure sum, add/remove one user for the trusted curator: :func:`adjacency_of`).

The sensitivities below bound a user's contribution ``x`` against the zero vector, which is
both what zero-out replaces it by (the device still sends its noise share, so both sides
carry the same noise) and what its absence leaves under add/remove with one central draw;
the epsilon of a release is the same under either relation.

A client contributes its clipped vector in units of the clip, ``u = u_clipped / C`` with
``||u||_2 <= 1`` (the server multiplies Gramians by ``C^2`` and right-hand sides by ``C``, so
their noise is ``C^2`` and ``C`` times the multiplier, as ``s1 max_norm^2`` and ``s2 max_norm``
of the anchor), and weighs the right-hand side by ``beta`` (rhs_weight, the ratio of the two
noise levels). Notation: ``F`` factors, ``T = F (F + 1) / 2``,
``W = T + F``, ``k`` the budget (at most ``k`` items with weight 1, or adaptive weights with
``sum_j c_j^2 = k``), ``M`` the most items a user contributes to (``k``; ``max_items`` for
adaptive weights), ``gamma`` the quantisation scale.

Per-item statistics (one vector ``x`` over all items, ``c_j (UT(u u^T), beta u)`` on item
``j``): ``||UT(u u^T)||_2^2 = (||u||^4 + sum_a u_a^4) / 2 <= ||u||^4 <= 1`` and
``||UT(u u^T)||_1 = (||u||_1^2 + ||u||_2^2) / 2 <= (F + 1) / 2``, so

    ||x||_2 <= sqrt(k (1 + beta^2)),   ||x||_1 <= sqrt(M k) ((F + 1) / 2 + beta sqrt(F))

(``sum_j c_j <= sqrt(M sum_j c_j^2)``). The user sends ``v = R(gamma x)``; randomised
rounding moves each of the at most ``s = M W`` non-zero coordinates by less than 1 and leaves
zeros at zero, so by the triangle inequality

    Delta_2 = gamma sqrt(k (1 + beta^2)) + sqrt(M W),
    Delta_1 = gamma sqrt(M k) ((F + 1) / 2 + beta sqrt(F)) + M W.

Global Gramian (``UT(u u^T)``): ``Delta_2 = gamma + sqrt(T)``, ``Delta_1 = gamma (F + 1) / 2
+ T``. DP item counts (a k-hot vector, exact integers): ``Delta_1 = k``,
``Delta_2 = sqrt(k)``.

Each release adds ``Sk(mu)`` with ``mu = (rho z Delta_2)^2 / 2`` (standard deviation
``rho z Delta_2``: ``rho`` the release's noise ratio, ``z`` one common multiplier, as
DPALSAccountant.set_sigmas of google-research ``dp_alternating_minimization/dpam.py``);
:func:`calibrate` finds the smallest ``z`` whose RDP composition (AKL21 Thm 3.5, every step's
releases and the counts) meets the target epsilon at delta.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dprec.privacy.adjacency import Adjacency
from dprec.privacy.calibrate import smallest_noise
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.privacy.skellam import SkellamDpEvent
from dprec.systems.dpals.statistics import stats_width, triangle_size

__all__ = ["Release", "adjacency_of", "calibrate", "choose_gamma", "count_sensitivity",
           "gram_sensitivity", "item_stats_sensitivity", "releases_epsilon"]

ROUNDING_SLACK = 0.01
"""The automatic gamma keeps the rounding term of ``Delta_2`` within 1% of the exact part."""


def item_stats_sensitivity(k: float, max_items: int, factors: int, gamma: float,
                           rhs_weight: float = 1.0) -> tuple[float, float]:
    """(Delta_1, Delta_2) of the quantised per-item statistics (module docstring)."""
    s = max_items * stats_width(factors)
    l2 = gamma * math.sqrt(k * (1 + rhs_weight ** 2)) + math.sqrt(s)
    l1 = gamma * math.sqrt(max_items * k) * ((factors + 1) / 2
                                             + rhs_weight * math.sqrt(factors)) + s
    return l1, l2


def gram_sensitivity(factors: int, gamma: float) -> tuple[float, float]:
    """(Delta_1, Delta_2) of the quantised global Gramian term (module docstring)."""
    t = triangle_size(factors)
    return gamma * (factors + 1) / 2 + t, gamma + math.sqrt(t)


def count_sensitivity(k: int) -> tuple[float, float]:
    """(Delta_1, Delta_2) = (k, sqrt(k)) of a k-hot count vector."""
    return float(k), math.sqrt(k)


def choose_gamma(k: float, max_items: int, factors: int, rhs_weight: float = 1.0) -> float:
    """The smallest gamma with both rounding terms within :data:`ROUNDING_SLACK` of the
    exact parts: ``sqrt(M W) <= slack gamma sqrt(k (1 + beta^2))`` and
    ``sqrt(T) <= slack gamma``."""
    stats = math.sqrt(max_items * stats_width(factors) / (k * (1 + rhs_weight ** 2)))
    gram = math.sqrt(triangle_size(factors))
    return max(stats, gram) / ROUNDING_SLACK


@dataclass(frozen=True)
class Release:
    """One kind of release: sensitivities, noise ratio ``rho``, and how often it happens."""

    name: str
    l1: float
    l2: float
    ratio: float
    count: int

    def mu(self, multiplier: float) -> float:
        """``(rho z Delta_2)^2 / 2``: the Skellam parameter at common multiplier ``z``."""
        return (self.ratio * multiplier * self.l2) ** 2 / 2

    def event(self, multiplier: float) -> SkellamDpEvent:
        """The accounting event of one such release at multiplier ``z``."""
        return SkellamDpEvent(self.mu(multiplier), self.l1, self.l2)


def adjacency_of(aggregation: str) -> Adjacency:
    """The relation a run is accounted under: zero-out for the secure sum (each client's
    noise share stays in the sum whatever its data), add/remove one user for the trusted
    curator's central draws (module docstring)."""
    return Adjacency.ZERO_OUT if aggregation == "secure" else Adjacency.ADD_REMOVE_ONE


def releases_epsilon(releases: Sequence[Release], multiplier: float, delta: float,
                     adjacency: Adjacency = Adjacency.ADD_REMOVE_ONE) -> float:
    """Epsilon at ``delta`` of every release, composed by RDP under ``adjacency``."""
    acc = RdpAccountant(adjacency)
    return acc.compose([(r.event(multiplier), r.count) for r in releases], delta).epsilon


def calibrate(releases: Sequence[Release], epsilon: float, delta: float,
              rtol: float = 1e-6, adjacency: Adjacency = Adjacency.ADD_REMOVE_ONE) -> float:
    """The smallest common multiplier ``z`` (to ``rtol``, rounded up: more noise) whose
    composition under ``adjacency`` meets ``epsilon`` at ``delta``
    (:func:`dprec.privacy.calibrate.smallest_noise`)."""
    return smallest_noise(lambda z: releases_epsilon(releases, z, delta, adjacency), epsilon,
                          rtol=rtol, upper=1e12, what="noise multiplier")
