"""The Skellam mechanism's RDP bound (AKL21 Thm 3.5): golden numbers from the formula, and
the bound checked against the exact Renyi divergence of Skellam pmfs (never below it)."""

from __future__ import annotations

import functools
import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from dprec.errors import DprecError
from dprec.privacy.accountant import UnsupportedEventError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.privacy.skellam import (
    SkellamDpEvent,
    calibrate_skellam_mu,
    skellam_epsilon,
    skellam_rdp,
)


def test_rdp_golden_numbers_from_the_formula() -> None:
    """eps(a) = a D2^2/(4 mu) + min(((2a - 1) D2^2 + 6 D1)/(16 mu^2), 3 D1/(4 mu)), by hand:

    - mu=100, D1=D2=1, a=2: 2/400 + min(9/160000, 3/400) = 0.005 + 5.625e-5 = 0.00505625
    - mu=100, D1=D2=1, a=10: 10/400 + min(25/160000, 3/400) = 0.025 + 1.5625e-4 = 0.02515625
    - mu=2, D1=D2=1, a=2: 2/8 + min(9/64, 3/8) = 0.25 + 0.140625 = 0.390625
    - mu=1, D1=4, D2=2, a=3: 12/4 + min((5*4 + 24)/16, 12/4) = 3 + 2.75 = 5.75
    - mu=0.1, D1=D2=1, a=2: 2/0.4 + min(9/0.16, 3/0.4) = 5 + 7.5 = 12.5 (the second branch)
    """
    cases = [((100.0, 1.0, 1.0), 2, 0.00505625), ((100.0, 1.0, 1.0), 10, 0.02515625),
             ((2.0, 1.0, 1.0), 2, 0.390625), ((1.0, 4.0, 2.0), 3, 5.75),
             ((0.1, 1.0, 1.0), 2, 12.5)]
    for args, order, want in cases:
        got = skellam_rdp(SkellamDpEvent(*args), [order])[0]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _cks20_epsilon(rdp: np.ndarray, orders: np.ndarray, delta: float) -> float:
    """Canonne, Kamath, Steinke 2020 Prop. 12, written out independently."""
    eps = rdp + np.log1p(-1 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1)
    return float(np.min(eps))


def test_epsilon_golden_numbers() -> None:
    """(mu=100, D=1, delta=1e-6) -> eps 0.298324 (one round); 10 rounds add the curves."""
    e = SkellamDpEvent(100.0, 1.0, 1.0)
    orders = np.arange(2, 257, dtype=float)
    np.testing.assert_allclose(skellam_epsilon(e, 1e-6), 0.2983244704531193, rtol=1e-6)
    np.testing.assert_allclose(
        skellam_epsilon(e, 1e-6, orders=orders.astype(int).tolist()),
        _cks20_epsilon(skellam_rdp(e, orders.astype(int).tolist()), orders, 1e-6), rtol=1e-9)
    ten = _cks20_epsilon(10 * skellam_rdp(e, orders.astype(int).tolist()), orders, 1e-6)
    np.testing.assert_allclose(skellam_epsilon(e, 1e-6, count=10,
                                               orders=orders.astype(int).tolist()), ten,
                               rtol=1e-9)


@functools.cache
def _exact_rdp_1d(order: int, mu: float, shift: int) -> float:
    """D_a(Sk(mu) + shift || Sk(mu)) summed over the support (scipy's exact pmf)."""
    half = int(mu + 40 * math.sqrt(2 * mu) + 20 * order + 60)
    x = np.arange(-half, half + shift + 1)
    lp = stats.skellam.logpmf(x - shift, mu, mu)
    lq = stats.skellam.logpmf(x, mu, mu)
    ok = np.isfinite(lp) & np.isfinite(lq)
    return float(logsumexp(order * lp[ok] + (1 - order) * lq[ok]) / (order - 1))


MUS = (0.5, 1.0, 2.0, 5.0, 20.0)
ORDERS = (2, 3, 4, 8, 16, 32, 64)


@pytest.mark.parametrize("mu", MUS)
def test_bound_never_below_the_exact_divergence_1d(mu: float) -> None:
    for shift in (1, 2, 3):
        bound = skellam_rdp(SkellamDpEvent(mu, shift, shift), ORDERS)
        exact = np.array([_exact_rdp_1d(a, mu, shift) for a in ORDERS])
        assert np.all(exact > 0)
        assert np.all(bound >= exact), (mu, shift, bound - exact)


@pytest.mark.parametrize("diff", [(1, 1, 1, 1), (2, 1), (1,) * 9, (3, 0, 1)])
def test_bound_never_below_the_exact_divergence_vector(diff: tuple[int, ...]) -> None:
    """A vector shift: the divergence of a product is the sum over coordinates; the bound
    with D1 = sum |d_j| and D2 = ||d||_2 sits above it (k-hot: (1,) * k, D1 = k, D2 = sqrt k)."""
    d = np.array(diff)
    l1, l2 = float(np.abs(d).sum()), float(np.linalg.norm(d))
    for mu in (1.0, 5.0, 20.0):
        bound = skellam_rdp(SkellamDpEvent(mu, l1, l2), ORDERS)
        exact = np.array([sum(_exact_rdp_1d(a, mu, int(s)) for s in d if s) for a in ORDERS])
        assert np.all(bound >= exact), (mu, diff, bound - exact)


def test_bound_is_close_to_exact_for_large_mu() -> None:
    """Not vacuous: at mu = 20 and orders <= 16 the bound is within 10% of the exact
    divergence."""
    orders = (2, 4, 8, 16)
    bound = skellam_rdp(SkellamDpEvent(20.0, 1.0, 1.0), orders)
    exact = np.array([_exact_rdp_1d(a, 20.0, 1) for a in orders])
    assert np.all(bound <= 1.1 * exact)


def test_rdp_accountant_composes_skellam_over_rounds_and_users() -> None:
    """User level, add/remove one user: R rounds of a k-hot contribution = R copies of
    Sk(mu) with (D1, D2) = (k, sqrt k); more rounds or more items cost more."""
    k, mu, rounds = 50, 600.0, 3
    event = SkellamDpEvent(mu, k, math.sqrt(k))
    log = EventLog(4)
    for r in range(rounds):
        log.record(r, event, [0, 1, 2])
    log.record(0, event, [3])
    levels = account(log, 1e-6, RdpAccountant(Adjacency.ADD_REMOVE_ONE))
    want = skellam_epsilon(event, 1e-6, count=rounds)
    np.testing.assert_allclose(levels.user.epsilon, want, rtol=1e-9)
    assert levels.user.epsilon > skellam_epsilon(event, 1e-6) > skellam_epsilon(
        SkellamDpEvent(mu, 1.0, 1.0), 1e-6)
    assert levels.user_basic is None


def test_skellam_and_gaussian_compose_by_adding_curves() -> None:
    acc = RdpAccountant(Adjacency.ADD_REMOVE_ONE)
    sk = SkellamDpEvent(100.0, 1.0, 1.0)
    g = dp_accounting.GaussianDpEvent(5.0)
    both = acc.compose([(sk, 1), (g, 2)], 1e-6).epsilon
    assert both > acc.compose([(sk, 1)], 1e-6).epsilon
    assert both > acc.compose([(g, 2)], 1e-6).epsilon
    orders = np.arange(2, 257)
    rdp = skellam_rdp(sk, orders.tolist()) + 2 * orders / (2 * 25.0)
    np.testing.assert_allclose(both, _cks20_epsilon(rdp, orders.astype(float), 1e-6),
                               rtol=1e-3)


def test_basic_accountant_refuses_skellam() -> None:
    """No pure epsilon; the PLD accountant's analysis is in test_skellam_pld.py."""
    e = SkellamDpEvent(10.0, 1.0, 1.0)
    with pytest.raises(UnsupportedEventError):
        BasicAccountant().compose([(e, 1)], 1e-6)
    assert PldAccountant().supports(e)


def test_calibration_is_the_smallest_mu_to_tolerance() -> None:
    for eps, k in ((1.0, 1), (0.5, 100), (4.0, 20)):
        mu = calibrate_skellam_mu(eps, 1e-6, k, math.sqrt(k), rtol=1e-6)
        assert skellam_epsilon(SkellamDpEvent(mu, k, math.sqrt(k)), 1e-6) <= eps
        less = mu / (1 + 2e-6)
        assert skellam_epsilon(SkellamDpEvent(less, k, math.sqrt(k)), 1e-6) > eps


def test_event_validation() -> None:
    with pytest.raises(DprecError, match="mu"):
        SkellamDpEvent(0.0, 1.0, 1.0)
    with pytest.raises(DprecError, match="l2_sensitivity must be <= l1"):
        SkellamDpEvent(1.0, 1.0, 2.0)
    with pytest.raises(DprecError, match="integer"):
        skellam_rdp(SkellamDpEvent(1.0, 1.0, 1.0), [2.5])


def test_k_items_compose_to_the_k_hot_vector_event() -> None:
    """Over the k items of a user: k copies of the one-item event (D1 = D2 = 1) have the
    same RDP curve, hence eps, as one k-hot event (D1 = k, D2 = sqrt k): both terms of the
    bound are linear in k when D2^2 = D1."""
    k, mu = 20, 300.0
    acc = RdpAccountant(Adjacency.ADD_REMOVE_ONE)
    items = acc.compose([(SkellamDpEvent(mu, 1.0, 1.0), k)], 1e-6).epsilon
    vector = acc.compose([(SkellamDpEvent(mu, k, math.sqrt(k)), 1)], 1e-6).epsilon
    np.testing.assert_allclose(items, vector, rtol=1e-9)
    assert vector > acc.compose([(SkellamDpEvent(mu, k - 1, math.sqrt(k - 1)), 1)],
                                1e-6).epsilon
