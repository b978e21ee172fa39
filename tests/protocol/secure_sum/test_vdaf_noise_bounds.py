"""The truncated noise share of the validity check (vdaf.noise_bounds): its bounds hold, its
cost is what it says, and the tail it is computed from is right."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dprec.protocol.secure_sum.vdaf.noise_bounds import (
    choose_truncation,
    l2_bound_sq,
    skellam_tail,
    truncated_noise_share,
)


def test_tail_matches_scipy_where_scipy_is_accurate() -> None:
    for mu, t in [(0.5, 1), (2.0, 3), (20.0, 10)]:
        assert skellam_tail(mu, t) == pytest.approx(2 * stats.skellam.sf(t, mu, mu), rel=1e-9)


def test_tail_is_accurate_below_double_precision_of_one_minus_cdf() -> None:
    """P(|Sk(0.05)| > 8) is about 2 * 0.05^9 / 9! (the leading term): far below 1e-16."""
    lead = 2 * math.exp(-0.1) * 0.05 ** 9 / math.factorial(9)
    assert skellam_tail(0.05, 8) == pytest.approx(lead, rel=0.01)


def test_truncation_meets_its_budget_and_is_tight() -> None:
    tr = choose_truncation(0.5, 1682, 1000, total_tv=2.0 ** -40)
    assert tr.total_tv <= 2.0 ** -40
    # one step less would break the coordinate budget
    assert 1682 * skellam_tail(0.5, tr.coordinate_bound - 1) > 2.0 ** -41 / 1000
    assert tr.delta_cost(1.0) == pytest.approx((1 + math.e) * tr.total_tv)


def test_truncated_share_stays_in_bounds() -> None:
    tr = choose_truncation(2.0, 200, 10, total_tv=1e-3)
    rng = np.random.default_rng(0)
    z = np.array([truncated_noise_share(tr, rng) for _ in range(200)])
    assert np.abs(z).max() <= tr.coordinate_bound
    assert np.abs(z.sum(axis=1)).max() <= tr.sum_bound
    assert z.var() == pytest.approx(4.0, rel=0.05)  # Sk(2) has variance 2 mu = 4


def test_l2_bound_holds_for_honest_draws_and_is_not_vacuous() -> None:
    """dp-pop-like: k = 50 ones plus Sk(0.45) shares over d = 1,682: every draw fits B^2, and
    B^2 is within 3 times the typical ||y||^2 (so a client cannot move many coordinates by
    the full range T + 1)."""
    d, k = 1682, 50
    tr = choose_truncation(0.45, d, 1000)
    bound_sq, eta = l2_bound_sq(math.sqrt(k), tr)
    rng = np.random.default_rng(1)
    v = np.zeros(d, dtype=np.int64)
    v[:k] = 1
    norms = [int(((v + z) ** 2).sum()) for z in
             (truncated_noise_share(tr, rng) for _ in range(200))]
    assert max(norms) <= bound_sq and eta == 2.0 ** -50
    assert bound_sq < 3 * np.mean(norms)
