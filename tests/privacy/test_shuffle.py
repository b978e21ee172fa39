"""Amplification by shuffling (FMT21): golden values, exactness, bounds and monotonicity."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from dprec.errors import DprecError
from dprec.privacy.shuffle import (
    MAX_CLONE_EPS0,
    clone_pair_pld,
    closed_form_epsilon,
    condition_holds,
    numerical_delta,
    numerical_epsilon,
    shuffled_epsilon,
)
from dprec.privacy.shuffle_attack import attack_lower_bound

# Golden values: README of the authors' code, github.com/apple/ml-shuffling-amplification
# (example.py: n = 1e5, eps0 = 4, delta = 1e-6, 10 bisection steps, step = 100).
REF_NUMERICAL_LOWER = 0.1675385583317841
REF_NUMERICAL_UPPER = 0.172790550755978
REF_CLOSED_FORM_CODE = 0.5378040242374512


def test_closed_form_golden_matches_paper_to_two_digits():
    eps = closed_form_epsilon(4.0, 100_000, 1e-6)
    assert round(eps, 2) == 0.54
    assert eps == pytest.approx(REF_CLOSED_FORM_CODE, rel=1e-12)


def test_closed_form_stated_variant_by_hand():
    # log(1 + tanh(2) (8 sqrt(e^4 log(4e6)) / sqrt(1e5) + 8 e^4 / 1e5)) = 0.5346
    e4 = math.exp(4.0)
    inner = 8 * math.sqrt(e4 * math.log(4e6)) / math.sqrt(1e5) + 8 * e4 / 1e5
    stated = closed_form_epsilon(4.0, 100_000, 1e-6, variant="stated")
    assert stated == pytest.approx(math.log(1 + (e4 - 1) / (e4 + 1) * inner), rel=1e-12)
    assert stated == pytest.approx(0.5346, abs=1e-4)
    with pytest.raises(DprecError, match="variant must be"):
        closed_form_epsilon(4.0, 100_000, 1e-6, variant="other")


def test_numerical_golden_within_reference_bracket():
    eps = numerical_epsilon(4.0, 100_000, 1e-6)
    assert round(eps, 2) == 0.17
    # our exact computation lies between the reference code's lower and upper values
    assert REF_NUMERICAL_LOWER <= eps <= REF_NUMERICAL_UPPER
    assert numerical_delta(eps, 4.0, 100_000) <= 1e-6
    assert numerical_delta(eps - 1e-4, 4.0, 100_000) > 1e-6


def _delta_brute_force(eps: float, eps0: float, n: int) -> float:
    """Hockey-stick divergence of FMT21's P and Q, summed over the full joint support."""
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    total = 0.0
    for c in range(n):
        w = stats.binom.pmf(c, n - 1, math.exp(-eps0))
        b = np.zeros(c + 2)
        b[: c + 1] = stats.binom.pmf(np.arange(c + 1), c, 0.5)  # A = a
        b_shift = np.roll(b, 1)  # A + 1 = a
        p = alpha * b_shift + (1 - alpha) * b
        q = (1 - alpha) * b_shift + alpha * b
        total += w * max(
            np.maximum(p - math.exp(eps) * q, 0).sum(), np.maximum(q - math.exp(eps) * p, 0).sum()
        )
    return total


@pytest.mark.parametrize(
    "eps0, n, eps", [(1.0, 50, 0.5), (3.0, 200, 1.0), (2.0, 300, 0.3), (0.5, 40, 0.2)]
)
def test_numerical_delta_equals_brute_force(eps0, n, eps):
    assert numerical_delta(eps, eps0, n) == pytest.approx(
        _delta_brute_force(eps, eps0, n), rel=1e-9, abs=1e-15
    )


def _shuffled_rr_delta(eps: float, eps0: float, n: int) -> float:
    """Exact delta of shuffled binary randomized response, user 1 flips 0 -> 1, others 0."""
    keep = math.exp(eps0) / (1 + math.exp(eps0))
    others = stats.binom.pmf(np.arange(n), n - 1, 1 - keep)  # count of 1s from n - 1 users
    p = np.zeros(n + 1)
    q = np.zeros(n + 1)
    p[:-1] += (1 - keep) * others
    p[1:] += keep * others
    q[:-1] += keep * others
    q[1:] += (1 - keep) * others
    return max(
        np.maximum(p - math.exp(eps) * q, 0).sum(), np.maximum(q - math.exp(eps) * p, 0).sum()
    )


@pytest.mark.parametrize("eps0, n", [(1.0, 1000), (2.0, 5000), (4.0, 10_000)])
def test_bound_is_above_an_exact_shuffled_mechanism(eps0, n):
    """The clone bound holds for every eps0-randomizer, so for binary randomized response."""
    for eps in np.linspace(0.02, eps0, 12):
        assert _shuffled_rr_delta(eps, eps0, n) <= numerical_delta(eps, eps0, n) + 1e-15


@pytest.mark.parametrize(
    "eps0, n, delta",
    [(1.0, 10_000, 1e-6), (4.0, 100_000, 1e-6), (2.5, 50_000, 1e-8), (0.5, 1_000_000, 1e-6)],
)
def test_numerical_is_tighter_than_closed_form(eps0, n, delta):
    assert condition_holds(eps0, n, delta)
    assert numerical_epsilon(eps0, n, delta) <= closed_form_epsilon(eps0, n, delta)


def test_condition_boundary():
    n, delta = 100_000, 1e-6
    limit = math.log(n / (16 * math.log(2 / delta)))
    assert condition_holds(limit, n, delta)
    assert not condition_holds(limit + 1e-9, n, delta)
    with pytest.raises(DprecError, match="eps0 must be <= log"):
        closed_form_epsilon(limit + 1e-9, n, delta)
    assert closed_form_epsilon(limit, n, delta) <= limit


def test_no_amplification_when_clones_are_rare():
    # eps0 = 8 with n = 1000: about 0.3 expected clones, the bound stays near eps0
    eps = numerical_epsilon(8.0, 1000, 1e-6)
    assert 7.0 < eps <= 8.0


def test_shuffled_epsilon_dispatch_and_errors():
    assert shuffled_epsilon(4.0, 100_000, 1e-6, "closed_form") == closed_form_epsilon(
        4.0, 100_000, 1e-6
    )
    assert shuffled_epsilon(4.0, 100_000, 1e-6) == numerical_epsilon(4.0, 100_000, 1e-6)
    with pytest.raises(DprecError, match="method must be"):
        shuffled_epsilon(4.0, 100_000, 1e-6, "magic")
    with pytest.raises(DprecError, match="eps0 must be > 0, got -1"):
        numerical_epsilon(-1.0, 100, 1e-6)
    with pytest.raises(DprecError, match="delta must be in"):
        numerical_epsilon(1.0, 100, 0.0)
    with pytest.raises(DprecError, match="n must be an integer"):
        closed_form_epsilon(1.0, 10.5, 1e-6)


EPS0 = st.floats(0.1, 6.0)
LOG_N = st.integers(2, 6)
DELTA = st.sampled_from([1e-9, 1e-6, 1e-3])


@settings(max_examples=30, deadline=None)
@given(EPS0, st.floats(0.05, 2.0), LOG_N, DELTA)
def test_numerical_grows_with_eps0(eps0, extra, log_n, delta):
    n = 10**log_n
    tol = 1e-6
    lo = numerical_epsilon(eps0, n, delta, tol=tol)
    hi = numerical_epsilon(eps0 + extra, n, delta, tol=tol)
    assert lo <= hi + 2 * tol
    assert lo <= eps0 and hi <= eps0 + extra


@settings(max_examples=30, deadline=None)
@given(EPS0, st.integers(10, 100_000), st.integers(2, 10), DELTA)
def test_numerical_shrinks_with_n(eps0, n, factor, delta):
    tol = 1e-6
    assert (
        numerical_epsilon(eps0, n * factor, delta, tol=tol)
        <= numerical_epsilon(eps0, n, delta, tol=tol) + 2 * tol
    )


@settings(max_examples=50, deadline=None)
@given(EPS0, st.floats(0.01, 1.0), st.integers(1000, 10**7), DELTA)
def test_closed_form_monotone_and_capped(eps0, extra, n, delta):
    assume(condition_holds(eps0 + extra, n, delta))
    a = closed_form_epsilon(eps0, n, delta)
    assert a <= closed_form_epsilon(eps0 + extra, n, delta)
    assert closed_form_epsilon(eps0, 2 * n, delta) <= a
    assert 0 < a <= eps0
    stated = closed_form_epsilon(eps0, n, delta, variant="stated")
    assert stated <= a  # the reference-code variant is the conservative one


# -- the clone pair's privacy loss distribution ------------------------------------------------


def _clone_pair_exact(eps0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact (unrounded) privacy losses and P-probabilities of the clone pair, full support."""
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    losses, probs = [], []
    for c in range(n):
        w = stats.binom.pmf(c, n - 1, math.exp(-eps0))
        b = np.zeros(c + 2)
        b[: c + 1] = stats.binom.pmf(np.arange(c + 1), c, 0.5)
        b_shift = np.roll(b, 1)
        p = w * (alpha * b_shift + (1 - alpha) * b)
        q = w * ((1 - alpha) * b_shift + alpha * b)
        losses.append(np.log(p / q))
        probs.append(p)
    return np.concatenate(losses), np.concatenate(probs)


def _exact_delta(losses: np.ndarray, probs: np.ndarray, eps: float) -> float:
    keep = losses > eps
    return float(probs[keep] @ -np.expm1(eps - losses[keep]))


@pytest.mark.parametrize(
    "eps0, n, delta",
    [
        (4.0, 100_000, 1e-6),
        (2.5, 943, 1e-6),
        (2.5, 50_000, 1e-6),
        (1.0, 1000, 1e-8),
        (6.0, 5000, 1e-6),
    ],
)
def test_clone_pld_single_shuffle_reproduces_the_numerical_bound(eps0, n, delta):
    interval, tol = 1e-4, 1e-6
    got = clone_pair_pld(eps0, n, interval).get_epsilon_for_delta(delta)
    bound = numerical_epsilon(eps0, n, delta, tol=tol)
    # numerical_epsilon is exact to tol (rounded up); the PLD rounds each loss up by < interval
    assert bound - tol - 1e-9 <= got <= bound + interval


def test_clone_pld_golden_value():
    got = clone_pair_pld(4.0, 100_000).get_epsilon_for_delta(1e-6)
    assert round(got, 4) == 0.1698
    assert REF_NUMERICAL_LOWER <= got <= REF_NUMERICAL_UPPER


@pytest.mark.parametrize("eps0, n", [(1.0, 30), (2.0, 60), (0.5, 8)])
def test_clone_pld_brackets_the_exact_hockey_stick(eps0, n):
    """Both directions (the pair is symmetric), every eps: exact <= PLD <= exact one bin lower."""
    interval = 1e-4
    pld = clone_pair_pld(eps0, n, interval)
    losses, probs = _clone_pair_exact(eps0, n)
    for eps in np.linspace(0.0, eps0, 9):
        exact = _delta_brute_force(eps, eps0, n)  # max over both directions
        assert exact == pytest.approx(_exact_delta(losses, probs, eps), abs=1e-12)
        got = pld.get_delta_for_epsilon(eps)
        assert exact - 1e-12 <= got <= _exact_delta(losses, probs, eps - interval) + 1e-12
    assert pld.get_delta_for_epsilon(-60.0) == pytest.approx(1.0, abs=1e-9)  # all mass kept


def test_clone_pld_composition_matches_exact_convolution():
    eps0, n, k, interval = 1.5, 12, 3, 1e-4
    losses, probs = _clone_pair_exact(eps0, n)
    total_l, total_p = losses, probs
    for _ in range(k - 1):
        total_l = np.add.outer(total_l, losses).ravel()
        total_p = np.multiply.outer(total_p, probs).ravel()
    composed = clone_pair_pld(eps0, n, interval).self_compose(k)
    for eps in (0.5, 1.5, 3.0):
        exact = _exact_delta(total_l, total_p, eps)
        got = composed.get_delta_for_epsilon(eps)
        assert exact - 1e-12 <= got <= _exact_delta(total_l, total_p, eps - k * interval) + 1e-12


def test_clone_pld_is_at_least_as_tight_as_randomized_response():
    # n = 1: no clones, the pair is binary randomized response with eps0
    assert clone_pair_pld(1.0, 1).get_epsilon_for_delta(1e-6) == pytest.approx(1.0, abs=1e-4)
    assert clone_pair_pld(2.0, 1000).get_epsilon_for_delta(1e-6) < 2.0


def test_huge_eps0():
    with pytest.raises(DprecError, match="eps0 must be < 700"):
        clone_pair_pld(1e6, 100)
    with pytest.raises(DprecError, match="coarser discretisation"):
        clone_pair_pld(20.0, 100, 1e-6)
    with pytest.raises(DprecError, match="eps0 must be finite"):
        clone_pair_pld(math.inf, 100)
    assert numerical_epsilon(1e6, 100, 1e-6) == 1e6
    assert numerical_epsilon(MAX_CLONE_EPS0 - 1, 100, 1e-6) > MAX_CLONE_EPS0 - 1.001


def test_numerical_epsilon_no_false_amplification_at_large_eps0():
    """Regression: beta = r/(1+r) rounded to 1.0 for eps > ~37, emptying the rejection region,
    so eps0 = 50 with 2e-20 expected clones came out as 37.3."""
    assert numerical_epsilon(50.0, 100, 1e-6) > 50.0 - 1e-5
    assert numerical_delta(40.0, 50.0, 100) == pytest.approx(1.0 - math.exp(-10.0), rel=1e-9)


def test_clone_pld_keeps_the_mass_it_cuts_at_infinity():
    """A large tail_mass cuts visible mass from the clone and count windows; it must come
    back as loss +inf (delta above eps0, where no finite loss reaches, is that mass)."""
    eps0, n, tail = 2.0, 50, 5e-4
    one = clone_pair_pld(eps0, n, 1e-3, tail_mass=tail)
    cut = one.get_delta_for_epsilon(eps0 + 1.0)
    assert 1e-6 < cut <= tail
    assert math.isinf(one.get_epsilon_for_delta(cut / 2))
    assert clone_pair_pld(eps0, n, 1e-3).get_delta_for_epsilon(eps0 + 1.0) < 1e-14


def _exact_pair_epsilon(eps0, k, n, rounds, delta):
    """eps of the attack's pair by brute force: the joint law of the per-round counts."""
    up, dn = math.exp(eps0) / (1 + math.exp(eps0)), 1 / (1 + math.exp(eps0))
    others = stats.binom.pmf(np.arange((n - 1) * k + 1), (n - 1) * k, dn)
    p1 = np.convolve(stats.binom.pmf(np.arange(k + 1), k, up), others)
    p0 = np.convolve(stats.binom.pmf(np.arange(k + 1), k, dn), others)
    a, b = p1, p0
    for _ in range(rounds - 1):
        a, b = np.outer(a, p1).ravel(), np.outer(b, p0).ravel()

    def hockey(e):
        return max(float(np.maximum(a - math.exp(e) * b, 0).sum()),
                   float(np.maximum(b - math.exp(e) * a, 0).sum()))

    lo, hi = 0.0, rounds * k * eps0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if hockey(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("eps0, k, n, rounds", [(1.0, 2, 3, 3), (2.5, 3, 5, 2), (0.5, 1, 8, 4)])
def test_attack_lower_bound_is_the_pairs_exact_epsilon_rounded_down(eps0, k, n, rounds):
    exact = _exact_pair_epsilon(eps0, k, n, rounds, 1e-3)
    ours = attack_lower_bound(eps0, k, n, rounds, 1e-3)
    assert exact - rounds * 1e-4 - 1e-9 <= ours <= exact + 1e-9


def test_attack_lower_bound_at_the_audited_setting():
    """FMF-LDP on ML-100K (943 users, k = 100, 20 epochs, eps0 = 2.5, delta = 1e-6): the
    attack certifies 32.6; the clone bound says 78.04."""
    lower = attack_lower_bound(2.5, 100, 943, 20, 1e-6)
    assert lower == pytest.approx(32.615, abs=2e-3)
    with pytest.raises(DprecError, match="rounds"):
        attack_lower_bound(2.5, 100, 943, 0, 1e-6)
