"""The exact (PLD) analysis of the Skellam mechanism on k unit shifts: never above the RDP
bound, never below the exact epsilon (1-D and a direct k-dimensional computation), within
the discretisation of it; its use by the PLD accountant and by the calibration."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import stats

from dprec.errors import DprecError
from dprec.privacy.accountant import UnsupportedEventError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import BitFlipDpEvent, EventLog
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.privacy.skellam import (
    SkellamDpEvent,
    calibrate_skellam_mu,
    skellam_epsilon,
    skellam_exact_epsilon,
    skellam_pld,
    skellam_tail_bound,
    skellam_tight_epsilon,
    skellam_unit_shift_pld,
)

IV = 1e-4
ADD_REMOVE = PldAccountant(adjacency=Adjacency.ADD_REMOVE_ONE)


def _pld_eps(mu: float, k: int, delta: float, count: int = 1, iv: float = IV) -> float:
    return float(skellam_pld(SkellamDpEvent.k_hot(mu, k), count, iv).get_epsilon_for_delta(delta))


def test_golden_numbers() -> None:
    """dp-accounting PLD at interval 1e-4 (against the RDP bound: 0.6249, 3.0909, 0.99977)."""
    np.testing.assert_allclose(_pld_eps(10.0, 1, 1e-3), 0.50320096, atol=1e-6)
    np.testing.assert_allclose(_pld_eps(1.0, 1, 1e-3), 1.54971505, atol=1e-6)
    np.testing.assert_allclose(_pld_eps(514.0, 50, 1e-6), 0.92910959, atol=1e-6)


@pytest.mark.parametrize("mu", [0.3, 1.0, 10.0, 100.0, 1000.0])
def test_pld_never_above_the_rdp_bound(mu: float) -> None:
    for k, count in ((1, 1), (1, 3), (5, 1), (5, 3), (50, 1)):
        event = SkellamDpEvent.k_hot(mu, k)
        dist = skellam_pld(event, count, IV)
        for delta in (1e-3, 1e-6):
            assert dist.get_epsilon_for_delta(delta) <= skellam_epsilon(event, delta, count), (
                mu, k, delta, count)


@pytest.mark.parametrize("mu", [0.5, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_one_shift_is_the_exact_epsilon_up_to_the_grid(mu: float, delta: float) -> None:
    """k = 1: exact <= PLD <= exact + one grid step (pessimistic rounding of each loss)."""
    exact = skellam_exact_epsilon(mu, delta, tol=1e-10)
    for iv in (1e-4, 1e-3):
        got = _pld_eps(mu, 1, delta, iv=iv)
        assert exact - 1e-9 <= got <= exact + iv + 1e-9, (mu, delta, iv, got - exact)


def _direct_product_epsilon(mu: float, k: int, delta: float, signs: tuple[int, ...]) -> float:
    """eps of (Sk(mu)^k + v, Sk(mu)^k), v = signs, by the hockey-stick divergence of the
    k-dimensional pmfs on a grid (exact convolution of pmfs, no PLD), bisection to 1e-10."""
    half = int(mu + 14 * math.sqrt(2 * mu) + 20)
    y = np.arange(-half - 1, half + 2)
    p = [stats.skellam.pmf(y - s, mu, mu) for s in signs]
    q = stats.skellam.pmf(y, mu, mu)
    upper = np.ones(1)
    lower = np.ones(1)
    for j in range(k):
        upper = np.multiply.outer(upper, p[j]).ravel()
        lower = np.multiply.outer(lower, q).ravel()

    def hockey(eps: float) -> float:
        return float(np.maximum(upper - math.exp(eps) * lower, 0.0).sum())

    lo, hi = 0.0, 8.0
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if hockey(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("mu,k", [(0.5, 2), (2.0, 2), (0.5, 3), (2.0, 3)])
def test_k_fold_composition_matches_the_direct_product(mu: float, k: int) -> None:
    """The k-fold 1-D PLD against the k-dimensional pmfs; a -1 shift and the reverse pair
    (the "remove" direction) give the same exact epsilon."""
    delta = 1e-3
    direct = _direct_product_epsilon(mu, k, delta, (1,) * k)
    got = _pld_eps(mu, k, delta)
    assert direct - 1e-8 <= got <= direct + k * IV + 1e-8, (got, direct)
    mixed = _direct_product_epsilon(mu, k, delta, (-1,) + (1,) * (k - 1))
    np.testing.assert_allclose(mixed, direct, atol=1e-8)


def test_reverse_direction_equals_the_forward_one() -> None:
    """(Sk, Sk + 1) vs (Sk + 1, Sk): dp-accounting's asymmetric PLD from both pmfs gives the
    same epsilon in the two directions, and our symmetric PLD matches it."""
    mu = 1.5
    y = np.arange(-60, 61)
    lower = dict(zip(y.tolist(), stats.skellam.logpmf(y, mu, mu).tolist(), strict=True))
    upper = dict(zip(y.tolist(), stats.skellam.logpmf(y - 1, mu, mu).tolist(), strict=True))
    both = pld.from_two_probability_mass_functions(lower, upper, value_discretization_interval=IV,
                                                   symmetric=False)
    fwd = both._pmf_remove.get_epsilon_for_delta(1e-4)  # noqa: SLF001
    rev = both._pmf_add.get_epsilon_for_delta(1e-4)  # noqa: SLF001
    np.testing.assert_allclose(fwd, rev, atol=2 * IV)
    np.testing.assert_allclose(skellam_unit_shift_pld(mu, IV).get_epsilon_for_delta(1e-4),
                               fwd, atol=1e-9)


def test_tail_bound_is_an_upper_bound() -> None:
    for mu, t in ((0.5, 5), (3.0, 20), (100.0, 80), (1000.0, 300)):
        sf = float(stats.skellam.sf(t - 1, mu, mu))
        assert sf <= skellam_tail_bound(mu, t) <= 1.0
    assert skellam_tail_bound(10.0, 0) == 1.0


def test_event_unit_shifts_validation() -> None:
    e = SkellamDpEvent.k_hot(5.0, 4)
    assert (e.l1_sensitivity, e.l2_sensitivity, e.unit_shifts) == (4.0, 2.0, 4)
    with pytest.raises(DprecError, match="k_hot"):
        SkellamDpEvent(5.0, 4.0, 1.0, 4)
    with pytest.raises(DprecError, match="unit_shifts"):
        SkellamDpEvent(5.0, 1.0, 1.0, 0)
    with pytest.raises(DprecError, match="unit_shifts"):
        skellam_pld(SkellamDpEvent(5.0, 1.0, 1.0))


def test_pld_accountant_uses_the_exact_analysis_for_k_hot_events() -> None:
    """dp-pop's log (one k-hot event per user, add/remove one user): PLD, not RDP."""
    mu, k, delta = 500.0, 50, 1e-6
    event = SkellamDpEvent.k_hot(mu, k)
    log = EventLog(4)
    for r in range(3):
        log.record(r, event, [0, 1, 2], unit="user")
    log.record(0, event, [3], unit="user")
    levels = account(log, delta, ADD_REMOVE)
    np.testing.assert_allclose(levels.user.epsilon, _pld_eps(mu, k, delta, count=3), rtol=1e-9)
    rdp = account(log, delta, RdpAccountant(Adjacency.ADD_REMOVE_ONE)).user.epsilon
    assert levels.user.epsilon < rdp
    assert any(n.startswith("analysis: PLD") for n in levels.user.notes)
    assert any(n.startswith("the RDP bound gives") for n in levels.user.notes)


def test_pld_accountant_falls_back_to_rdp_without_unit_shifts() -> None:
    loose = SkellamDpEvent(500.0, 50.0, math.sqrt(50))
    comp = ADD_REMOVE.compose([(loose, 1), (dp_accounting.GaussianDpEvent(20.0), 2)], 1e-6)
    want = RdpAccountant(Adjacency.ADD_REMOVE_ONE).compose(
        [(loose, 1), (dp_accounting.GaussianDpEvent(20.0), 2)], 1e-6)
    assert comp.epsilon == want.epsilon
    assert comp.notes[0].startswith("analysis: RDP")
    with pytest.raises(UnsupportedEventError, match="unit_shifts"):
        PldAccountant().compose([(loose, 1), (BitFlipDpEvent(0.7, 0.3), 1)], 1e-6)


def test_pld_accountant_composes_skellam_with_other_events() -> None:
    """A k-hot Skellam event beside a Gaussian: the PLD composition, below the RDP one."""
    event = SkellamDpEvent.k_hot(200.0, 10)
    g = dp_accounting.GaussianDpEvent(10.0)
    both = ADD_REMOVE.compose([(event, 1), (g, 1)], 1e-6).epsilon
    assert both > ADD_REMOVE.compose([(event, 1)], 1e-6).epsilon
    assert both < RdpAccountant(Adjacency.ADD_REMOVE_ONE).compose([(event, 1), (g, 1)],
                                                                  1e-6).epsilon


def test_add_remove_pld_accountant_refuses_local_reports() -> None:
    assert not ADD_REMOVE.supports(BitFlipDpEvent(0.7, 0.3))
    assert PldAccountant().supports(BitFlipDpEvent(0.7, 0.3))
    assert ADD_REMOVE.adjacency is Adjacency.ADD_REMOVE_ONE
    with pytest.raises(DprecError, match="Adjacency"):
        PldAccountant(adjacency="add_remove_one")  # type: ignore[arg-type]


def test_tight_calibration_needs_less_noise() -> None:
    """dp-pop's setting (k = 50, eps 1, delta 1e-6): mu 513.78 by RDP, 448.25 by the PLD;
    the returned mu meets the target by the accountant's analysis, mu / (1 + 2 rtol) not."""
    k, eps, delta = 50, 1.0, 1e-6
    rdp_mu = calibrate_skellam_mu(eps, delta, k, math.sqrt(k))
    mu = calibrate_skellam_mu(eps, delta, k, math.sqrt(k), unit_shifts=k, rtol=1e-5)
    np.testing.assert_allclose(rdp_mu, 513.7779, rtol=1e-5)
    np.testing.assert_allclose(mu, 448.254, rtol=2e-5)
    got, analysis = skellam_tight_epsilon(SkellamDpEvent.k_hot(mu, k), delta)
    assert analysis == "pld" and got <= eps
    assert ADD_REMOVE.compose([(SkellamDpEvent.k_hot(mu, k), 1)], delta).epsilon <= eps
    assert skellam_tight_epsilon(SkellamDpEvent.k_hot(mu / (1 + 2e-5), k), delta)[0] > eps
