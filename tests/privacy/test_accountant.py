"""Accountants: a contract every accountant passes, golden numbers, worst-case users."""

import json
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import brentq

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.privacy.accountant import UnsupportedEventError, event_sides
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import (
    BitFlipDpEvent,
    EventLog,
    LocalReportDpEvent,
    ShuffledReportDpEvent,
)
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.shuffle_guarantee import shuffled_guarantee


class _Mystery(dp_accounting.DpEvent):
    """An event no accountant knows."""


UNKNOWN = [
    _Mystery(),
    dp_accounting.UnsupportedDpEvent(),
    dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0)),
]


def _optimal_pure_composition(eps: float, k: int, delta: float) -> float:
    """Exact optimal k-fold composition of eps-DP (Kairouz, Oh, Viswanath 2015):
    loss eps (k - 2L), L ~ Bin(k, 1/(1 + e^eps)); delta(e) = E[(1 - e^(e - loss))_+]."""
    loss = eps * (k - 2 * np.arange(k + 1))
    w = stats.binom.pmf(np.arange(k + 1), k, 1 / (1 + math.exp(eps)))

    def excess(e: float) -> float:
        keep = loss > e
        return float(w[keep] @ -np.expm1(e - loss[keep])) - delta

    return brentq(excess, 0.0, k * eps, xtol=1e-12)


# -- the contract every accountant passes ------------------------------------------------------


@pytest.fixture(params=["pld", "basic"])
def accountant(request):
    return PldAccountant() if request.param == "pld" else BasicAccountant()


def test_contract_no_events_is_zero(accountant):
    c = accountant.compose([], 1e-6)
    assert c.epsilon == 0.0 and c.sides == "two"
    assert accountant.compose([(LocalReportDpEvent(1.0), 0)], 1e-6).epsilon == 0.0
    assert accountant.compose([(dp_accounting.NoOpDpEvent(), 5)], 1e-6).epsilon == 0.0


def test_contract_non_private_is_infinite(accountant):
    events = [(dp_accounting.NonPrivateDpEvent(), 1), (LocalReportDpEvent(1), 3)]
    c = accountant.compose(events, 1e-6)
    assert math.isinf(c.epsilon) and c.sides == "none"
    assert math.isinf(accountant.compose([(BitFlipDpEvent(0.5, 0.0), 1)], 1e-6).epsilon)


@pytest.mark.parametrize("event", UNKNOWN, ids=lambda e: type(e).__name__)
def test_contract_unknown_event_raises(accountant, event):
    assert not accountant.supports(event)
    with pytest.raises(UnsupportedEventError, match="supports"):
        accountant.compose([(LocalReportDpEvent(1.0), 1), (event, 1)], 1e-6)
    assert isinstance(UnsupportedEventError("x"), DprecError)


def test_contract_composite_events_expand(accountant):
    e = LocalReportDpEvent(0.5)
    direct = accountant.compose([(e, 6)], 1e-6).epsilon
    nested = dp_accounting.SelfComposedDpEvent(dp_accounting.ComposedDpEvent([e, e]), 3)
    assert accountant.supports(nested)
    assert accountant.compose([(nested, 1)], 1e-6).epsilon == pytest.approx(direct, rel=1e-12)
    with pytest.raises(DprecError, match="count must be an integer >= 0, got -1"):
        accountant.compose([(e, -1)], 1e-6)


def test_contract_account_paths(accountant):
    empty = account(EventLog(10), 1e-6, accountant)
    assert empty.user.epsilon == 0.0 and empty.event.epsilon == 0.0
    assert empty.user_basic is not None and empty.user_basic.epsilon == 0.0
    log = EventLog(3)
    log.record(0, LocalReportDpEvent(1.0), [0, 1])
    log.record(1, dp_accounting.NonPrivateDpEvent(), [1])
    levels = account(log, 1e-6, accountant)
    assert math.isinf(levels.user.epsilon) and levels.user.sides == "none"
    log.record(2, _Mystery(), [2])
    with pytest.raises(UnsupportedEventError):
        account(log, 1e-6, accountant)


# -- golden numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, k, delta", [(0.1, 100, 1e-5), (1.0, 10, 1e-6), (0.5, 50, 1e-8), (0.7, 50, 1e-6)]
)
def test_pure_composition_is_the_optimal_composition(eps, k, delta):
    exact = _optimal_pure_composition(eps, k, delta)
    got = PldAccountant().compose([(LocalReportDpEvent(eps), k)], delta).epsilon
    np.testing.assert_allclose(got, exact, rtol=1e-4)
    assert got <= k * eps


def test_pure_composition_golden_value():
    # 100-fold composition of 0.1-DP at delta 1e-5 (basic 10, advanced 5.85)
    got = PldAccountant().compose([(LocalReportDpEvent(0.1), 100)], 1e-5).epsilon
    np.testing.assert_allclose(got, 4.30677, rtol=1e-4)


@pytest.mark.parametrize("eps, k, delta", [(1.0, 100, 1e-6), (0.5, 200, 1e-6), (2.0, 30, 1e-8)])
def test_symmetric_bit_flip_is_randomized_response(eps, k, delta):
    flip = BitFlip.symmetric(eps)
    acc = PldAccountant()
    ours = acc.compose([(flip.dp_event(), k)], delta).epsilon
    np.testing.assert_allclose(ours, _optimal_pure_composition(eps, k, delta), rtol=1e-4)
    # dp-accounting's binary randomized response with noise 2q keeps the bit w.p. 1 - q; it
    # rounds eps/interval up even when float error puts it a hair above the grid point
    theirs = dp_pld.from_randomized_response(2 * flip.q, 2).self_compose(k)
    assert ours - 1e-9 <= theirs.get_epsilon_for_delta(delta) <= ours + k * 1e-4
    rr = dp_accounting.RandomizedResponseDpEvent(2 * flip.q, 2)
    np.testing.assert_allclose(acc.compose([(rr, k)], delta).epsilon, ours, rtol=1e-9)


@pytest.mark.parametrize(
    "event, relation",
    [
        (dp_accounting.GaussianDpEvent(2.0), dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE),
        (dp_accounting.LaplaceDpEvent(5.0), dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE),
    ],
)
def test_dp_accounting_mechanisms_match_its_pld_accountant(event, relation):
    ref = dp_accounting.pld.PLDAccountant(relation)
    ref.compose(event, 40)
    ours = PldAccountant().compose([(event, 40)], 1e-6).epsilon
    np.testing.assert_allclose(ours, ref.get_epsilon(1e-6), rtol=1e-4)


def test_dplcf_user_level_pld_vs_basic():
    """N = 1682 bits, eps = 1 symmetric: basic N eps = 1682, PLD about 946 at delta 1e-6."""
    n_items, n_users = 1682, 943
    flip = BitFlip.symmetric(1.0)
    log = EventLog(n_users)
    log.record(0, flip.dp_event(), np.arange(n_users), count=n_items, unit="interaction")
    levels = account(log, 1e-6)
    exact = _optimal_pure_composition(1.0, n_items, 1e-6)
    assert exact == pytest.approx(945.699, abs=1e-3)
    # above e^709 dp-accounting's conversion returns a lattice point (losses step by 2 here)
    assert exact - 1e-9 <= levels.user.epsilon <= exact + 2.0
    assert levels.user.delta == 1e-6 and levels.user.level == "user" and levels.user.sides == "two"
    assert levels.user_basic is not None
    assert levels.user_basic.epsilon == pytest.approx(n_items * flip.epsilon)
    assert levels.user_basic.epsilon == pytest.approx(1682.0) and levels.user_basic.delta == 0
    # event level: one bit
    assert 1.0 - 1e-5 < levels.event.epsilon <= 1.0 and levels.event.level == "event"
    assert levels.user.model == "local"
    out = levels.to_json()
    assert set(out) == {"event", "user", "user_basic"}
    assert json.loads(json.dumps(out))["user_basic"]["epsilon"] == pytest.approx(1682.0)


def test_asymmetric_bit_flip_is_one_sided_presence_epsilon():
    flip = BitFlip.asymmetric(1.0)
    assert event_sides(flip.dp_event()) == "one"
    log = EventLog(4)
    log.record(0, flip.dp_event(), np.arange(4), count=100, unit="interaction")
    levels = account(log, 1e-6)
    # the presence loss is deterministic: eps = 100 ln(p/q) exactly (up to delta)
    assert levels.user.sides == "one" and levels.event.sides == "one"
    np.testing.assert_allclose(levels.user.epsilon, 100.0, rtol=1e-4)
    np.testing.assert_allclose(levels.user.epsilon, 100 * flip.eps_presence, rtol=1e-4)
    assert levels.user_basic is not None and levels.user_basic.sides == "one"
    assert levels.user_basic.epsilon == pytest.approx(100 * flip.eps_presence)
    np.testing.assert_allclose(levels.event.epsilon, flip.eps_presence, rtol=1e-4)
    # mixing in a two-sided event keeps the composition one-sided
    log.record(1, LocalReportDpEvent(0.5), [0])
    assert account(log, 1e-6).user.sides == "one"


def _mixed_direction_epsilon(p: float, q: float, n: int, j: int, delta: float) -> float:
    """Exact eps of n bits of which j go 1 -> 0 and n - j go 0 -> 1 (brute force)."""
    up, down = math.log(p / q), math.log((1 - p) / (1 - q))
    a = np.arange(j + 1)[:, None]  # ones reported among the j bits that are 1 in x
    b = np.arange(n - j + 1)[None, :]  # ones reported among the n - j bits that are 0 in x
    loss = a * up + (j - a) * down - b * up - (n - j - b) * down
    prob = stats.binom.pmf(a, j, p) * stats.binom.pmf(b, n - j, q)
    loss, prob = loss.ravel(), prob.ravel()

    def excess(e: float) -> float:
        keep = loss > e
        return float(prob[keep] @ -np.expm1(e - loss[keep])) - delta

    return 0.0 if excess(0.0) <= 0 else brentq(excess, 0.0, float(loss.max()), xtol=1e-12)


@pytest.mark.parametrize("eps, n", [(1.0, 6), (2.0, 5), (0.5, 12)])
def test_oue_two_sided_bound_covers_every_mix_of_directions(eps, n):
    """A user's bits may flip both ways: the accountant gives the worst mix exactly (the
    symmetrised pair, which bounds every mix, is only a fallback)."""
    flip = BitFlip.oue(eps)
    delta = 1e-3
    ours = PldAccountant().compose([(flip.dp_event(), n)], delta).epsilon
    worst = max(_mixed_direction_epsilon(flip.p, flip.q, n, j, delta) for j in range(n + 1))
    assert ours == pytest.approx(worst, rel=1e-9, abs=1e-9)
    symmetrised = PldAccountant()._compose_pld({flip.dp_event(): n}, delta, "two", "two")
    assert worst - 1e-9 <= symmetrised.epsilon <= n * flip.epsilon + n * 1e-4
    one = PldAccountant().compose([(flip.dp_event(), 1)], 1e-12).epsilon
    assert flip.epsilon - 1e-9 <= one <= flip.epsilon  # the largest loss, less ~delta / p
    # and for symmetric flips the bound is tight: both directions are the same
    sym = BitFlip.symmetric(eps)
    tight = PldAccountant().compose([(sym.dp_event(), n)], delta).epsilon
    exact = max(_mixed_direction_epsilon(sym.p, sym.q, n, j, delta) for j in range(n + 1))
    np.testing.assert_allclose(tight, exact, rtol=1e-4, atol=1e-9)


def test_worst_case_user_with_dropouts():
    e = LocalReportDpEvent(1.0)
    log = EventLog(6)
    log.record(0, e, [0, 1, 2, 3])
    log.record(1, e, [0, 1, 2])
    log.record(2, e, [0, 1])  # users 0 and 1 stayed three rounds; user 4, 5 never reported
    acc = PldAccountant()
    levels = account(log, 1e-6)
    expected = acc.compose([(e, 3)], 1e-6).epsilon
    np.testing.assert_allclose(levels.user.epsilon, expected, rtol=1e-12)
    assert expected < 3.0  # PLD beats basic here
    assert levels.user_basic is not None and levels.user_basic.epsilon == pytest.approx(3.0)
    assert levels.user.mechanism == "3 x LocalReportDpEvent(epsilon=1)"
    assert "3 distinct per-user event counts (1 composed)" in levels.user.notes[0]


def test_worst_case_over_incomparable_users():
    many, big = LocalReportDpEvent(0.2), LocalReportDpEvent(3.0)
    log = EventLog(3)
    log.record(0, many, [0], count=60)
    log.record(0, big, [1], count=1)
    acc = PldAccountant()
    a = acc.compose([(many, 60)], 1e-6).epsilon
    b = acc.compose([(big, 1)], 1e-6).epsilon
    levels = account(log, 1e-6)
    assert levels.user.epsilon == pytest.approx(max(a, b), rel=1e-12)
    assert "(2 composed)" in levels.user.notes[0]
    # too many incomparable users: their elementwise maximum is composed instead
    capped = account(log, 1e-6, max_groups=1)
    both = acc.compose([(many, 60), (big, 1)], 1e-6).epsilon
    assert capped.user.epsilon == pytest.approx(both, rel=1e-12)
    assert capped.user.epsilon > levels.user.epsilon
    assert any("elementwise maximum" in n for n in capped.user.notes)


def test_event_level_counts_one_bit_per_record_but_every_user_unit_copy():
    flip = BitFlip.symmetric(1.0).dp_event()
    log = EventLog(2)
    log.record(0, flip, [0, 1], count=50, unit="interaction")
    log.record(1, flip, [0], count=50, unit="interaction")
    acc = PldAccountant()
    levels = account(log, 1e-6)
    assert levels.event.epsilon == pytest.approx(acc.compose([(flip, 2)], 1e-6).epsilon)
    assert levels.user.epsilon == pytest.approx(acc.compose([(flip, 100)], 1e-6).epsilon)
    log.record(2, LocalReportDpEvent(0.5), [1], count=4, unit="user")
    levels = account(log, 1e-6)
    user1 = acc.compose([(flip, 1), (LocalReportDpEvent(0.5), 4)], 1e-6).epsilon
    assert levels.event.epsilon == pytest.approx(max(user1, acc.compose([(flip, 2)], 1e-6).epsilon))


def test_shuffled_events_use_the_clone_pld():
    log = EventLog(943)
    users = np.arange(943)
    for r in range(20):
        log.record(r, ShuffledReportDpEvent(2.5, 943), users, count=100)
    levels = account(log, 1e-6)
    direct = shuffled_guarantee(2.5, 943, 100, 20, 1e-6)
    assert levels.user.model == "shuffled" and levels.event.model == "shuffled"
    assert levels.user.epsilon == pytest.approx(direct.epsilon, rel=1e-9)
    assert levels.user.epsilon == pytest.approx(78.0435, rel=1e-4)
    assert levels.user_basic is not None and levels.user_basic.epsilon == pytest.approx(5000.0)
    assert any("local eps0" in n for n in levels.user_basic.notes)


def test_huge_eps0_shuffle_falls_back_to_local_and_mixing_too_wide_raises():
    acc = PldAccountant()
    c = acc.compose([(ShuffledReportDpEvent(1e6, 100), 3)], 1e-6)
    np.testing.assert_allclose(c.epsilon, 3e6, rtol=1e-9)
    assert any("local eps0 used" in n for n in c.notes)
    fine = PldAccountant(1e-7)  # eps = 10 spans 2e8 bins next to a non-lattice PLD
    with pytest.raises(DprecError, match="too wide"):
        fine.compose([(LocalReportDpEvent(10.0), 1), (dp_accounting.GaussianDpEvent(1.0), 1)], 1e-6)


def test_gaussian_has_no_basic_level():
    log = EventLog(2)
    log.record(0, dp_accounting.GaussianDpEvent(3.0), [0, 1], count=5)
    levels = account(log, 1e-5)
    assert levels.user_basic is None and math.isfinite(levels.user.epsilon)
    assert not BasicAccountant().supports(dp_accounting.GaussianDpEvent(3.0))
    assert levels.to_json()["user_basic"] is None


def test_account_validation():
    with pytest.raises(DprecError, match="delta must be in"):
        account(EventLog(), 0.0)
    with pytest.raises(DprecError, match="max_groups must be an integer >= 1"):
        account(EventLog(), 1e-6, max_groups=0)
    with pytest.raises(DprecError, match="value_discretization_interval must be > 0"):
        PldAccountant(0.0)


@settings(max_examples=20, deadline=None)
@given(
    st.one_of(st.integers(5, 300).map(lambda i: i / 100), st.floats(0.05, 3.0)),
    st.integers(1, 200),
    st.sampled_from([1e-8, 1e-6, 1e-3]),
)
def test_pld_pure_composition_between_optimal_and_basic(eps, k, delta):
    assume(k * eps < 700)  # dp-accounting's eps-for-delta is exact below e^700
    got = PldAccountant().compose([(LocalReportDpEvent(eps), k)], delta).epsilon
    exact = _optimal_pure_composition(eps, k, delta)
    # FFT round-off (~1e-15 on delta) moves eps by ~1e-7 relative at delta = 1e-8
    assert exact * (1 - 1e-6) <= got <= k * (eps + 1e-4)


@settings(max_examples=12, deadline=None)
@given(st.floats(0.1, 2.0), st.integers(1, 30), st.integers(1, 30))
def test_more_events_never_lower_epsilon(eps, k, extra):
    acc = PldAccountant()
    flip = BitFlip.oue(eps).dp_event()
    fewer = acc.compose([(flip, k)], 1e-6).epsilon
    more = acc.compose([(flip, k), (LocalReportDpEvent(eps), extra)], 1e-6).epsilon
    assert fewer <= more + 1e-9


@pytest.mark.timeout(60)
def test_large_eps_laplace_events_compose_as_pure_and_quickly():
    """A Laplace event with eps 1e5 would need 2e9 PLD bins; it is composed as pure eps."""
    import dp_accounting as dpa

    from dprec.privacy.events import EventLog
    from dprec.privacy.levels import account
    log = EventLog(3)
    log.record(0, dpa.LaplaceDpEvent(1e-5), np.arange(3), count=10, unit="interaction")
    levels = account(log, 1e-6)
    assert levels.user.epsilon == pytest.approx(1e6, rel=1e-9)
    assert levels.event.epsilon == pytest.approx(1e5, rel=1e-9)


def test_basic_level_names_the_non_private_event_when_eps_is_infinite():
    """A one-sided flip is infinite in the two-sided direction that a non-private event
    forces; the basic level must still name the user whose event has no finite eps."""
    log = EventLog(3)
    log.record(0, BitFlipDpEvent(1.0, 0.3), [0, 1], count=30, unit="interaction")
    log.record(0, dp_accounting.NonPrivateDpEvent(), [2], count=1, unit="interaction")
    levels = account(log, 1e-6)
    assert levels.user_basic is not None and math.isinf(levels.user_basic.epsilon)
    assert levels.user_basic.sides == "none"
    assert levels.user_basic.mechanism == levels.user.mechanism == "1 x NonPrivateDpEvent()"
    # finite epsilons still pick the largest, whatever the sides
    log = EventLog(2)
    log.record(0, BitFlipDpEvent(1.0, 0.3), [0], count=2, unit="interaction")
    log.record(0, LocalReportDpEvent(5.0), [1], count=1, unit="user")
    basic = account(log, 1e-6).user_basic
    assert basic is not None and basic.epsilon == pytest.approx(5.0)
