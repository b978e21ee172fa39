"""LaplaceRR (seed 001) as published: its law, and why its true guarantee is none.

For input x the output equals x with probability p = e^eps2/(1 + e^eps2); for any x' != x it
equals x with probability 0. The event {output = x} therefore has likelihood ratio p / 0, and
no finite eps (in particular not the claimed eps1 + eps2) bounds it. Statistical checks use
200,000 draws with a p-value floor of 1e-4.
"""

import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from dprec.errors import DprecError
from dprec.mechanisms.base import Mechanism, event_guarantee
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import LaplaceMechanism
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant

N = 200_000
P_FLOOR = 1e-4
RATINGS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])  # 1..5 stars min-max normalised


def _rng(*words: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([20240613, *words]))


# ---------------------------------------------------------------- the published law


@pytest.mark.parametrize("eps1,eps2", [(0.5, 0.1), (1.0, 1.0), (3.0, 2.0)])
def test_output_is_the_input_with_probability_p_else_laplace(eps1, eps2):
    mech = LaplaceRR(eps1, eps2)
    p = math.exp(eps2) / (1 + math.exp(eps2))
    assert mech.keep_prob == pytest.approx(p, rel=1e-15)
    rng = _rng(1, int(10 * eps1), int(10 * eps2))
    lap = LaplaceMechanism(eps1)
    for x in (0.0, 0.25, 1.0):
        y = mech.sample(np.full(N, x), rng)
        kept = y == x
        assert stats.binomtest(int(kept.sum()), N, p).pvalue > P_FLOOR
        # the rest is exactly the Laplace step's law
        assert stats.kstest(y[~kept], lambda t, v=x: lap.cdf(t, v)).pvalue > P_FLOOR
        # and the whole output follows the mixture's cdf (jump of p at x)
        u = rng.random(N)
        pit = np.where(kept, mech.cdf(x, x) - p * u, mech.cdf(y, x))  # randomised PIT
        assert stats.kstest(pit, "uniform").pvalue > P_FLOOR
        # unbiased, Var = (1 - p) 2 / eps1^2
        var = (1 - p) * 2 / eps1**2
        assert float(mech.variance(x)) == pytest.approx(var, rel=1e-14)
        assert abs(y.mean() - x) < 5 * math.sqrt(var / N)
        assert y.var() == pytest.approx(var, rel=0.05)


# ---------------------------------------------------------------- why the guarantee is none


@pytest.mark.parametrize("eps1,eps2", [(0.1, 0.1), (1.0, 1.0), (3.0, 3.0)])
def test_the_event_output_equals_x_has_an_unbounded_likelihood_ratio(eps1, eps2):
    mech = LaplaceRR(eps1, eps2)
    rng = _rng(2, int(10 * eps1))
    x = 0.75
    hits_x = int((mech.sample(np.full(N, x), rng) == x).sum())
    for other in (0.0, 0.5, 0.7499999, 1.0):
        # no other input ever produces the output x exactly (continuous Laplace part)
        assert int((mech.sample(np.full(N, other), rng) == x).sum()) == 0
        assert float(mech.atom(x, other)) == 0.0
    assert float(mech.atom(x, x)) == mech.keep_prob
    # P(y = x | x) is at least p - 5 se, while P(y = x | x') = 0 (95% upper bound 3/N from the
    # zero count): the observed ratio exceeds e^(claimed eps) by far, and e^eps for any eps
    # as N grows (it is p / 0)
    p_lower = hits_x / N - 5 * math.sqrt(mech.keep_prob * (1 - mech.keep_prob) / N)
    assert p_lower > 0.5
    assert p_lower / (3 / N) > math.exp(mech.claimed_epsilon)
    # the cdf jumps by p at t = x for input x and is continuous there for any x' != x
    jump = float(mech.cdf(x, x) - mech.cdf(np.nextafter(x, -1), x))
    assert jump == pytest.approx(mech.keep_prob, rel=1e-9)
    for other in (0.0, 0.5, 1.0):
        assert float(mech.cdf(x, other) - mech.cdf(np.nextafter(x, -1), other)) < 1e-12


def test_an_observer_reads_off_the_true_rating_whenever_a_report_is_on_the_grid():
    # ratings are on a 5-point grid; a report that lands on the grid is the true rating
    mech = LaplaceRR(1.0, 1.0)
    rng = _rng(3)
    x = RATINGS[rng.integers(0, 5, N)]
    y = mech.sample(x, rng)
    on_grid = np.isin(y, RATINGS)
    assert np.array_equal(y[on_grid], x[on_grid])  # never wrong
    assert stats.binomtest(int(on_grid.sum()), N, mech.keep_prob).pvalue > P_FLOOR
    # the honest Laplace step alone never lands on the grid
    assert not np.isin(mech.laplace.sample(x, rng), RATINGS).any()


def test_the_event_gives_no_guarantee_with_the_claim_beside_it():
    mech = LaplaceRR(1.0, 2.0)
    assert isinstance(mech, Mechanism)
    g = event_guarantee(mech)
    assert math.isinf(g.epsilon) and g.sides == "none" and g.level == "event"
    c = mech.claimed()
    assert (c.epsilon, c.sides) == (3.0, "two")
    assert mech.claimed_epsilon == 3.0
    ev = mech.describe()
    assert ev["true_epsilon"] == "none" and ev["claimed_epsilon"] == 3.0
    assert ev["keep_prob"] == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_dp_event_is_non_private_and_the_accountant_gives_infinity():
    mech = LaplaceRR(1.0, 1.0)
    event = mech.dp_event()
    assert event == dp_accounting.NonPrivateDpEvent()
    assert math.isinf(BasicAccountant().compose([(event, 1)]).epsilon)
    comp = PldAccountant().compose([(event, 1)], 1e-6)
    assert math.isinf(comp.epsilon) and comp.sides == "none"
    log = EventLog(2)
    log.record(0, event, [0, 1], count=20, unit="interaction")
    levels = account(log, 1e-6)
    for g in (levels.event, levels.user):
        assert math.isinf(g.epsilon) and g.sides == "none"


# ---------------------------------------------------------------- validation and determinism


@pytest.mark.parametrize("eps1,eps2,msg", [(0, 1, "eps1 must be > 0, got 0"),
                                           (1, -1, "eps2 must be > 0, got -1"),
                                           (1, float("inf"), "eps2 must be finite"),
                                           ("a", 1, "eps1 must be a number > 0")])
def test_bad_parameters(eps1, eps2, msg):
    with pytest.raises(DprecError, match=msg):
        LaplaceRR(eps1, eps2)
    with pytest.raises(DprecError, match="low must be < high"):
        LaplaceRR(1.0, 1.0, 1.0, 1.0)


def test_bad_inputs_and_determinism():
    mech = LaplaceRR(1.0, 1.0, 1.0, 5.0)
    with pytest.raises(DprecError, match=r"x must lie in \[1, 5\]"):
        mech.sample(np.array([1.0, 0.0]), _rng(4))
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator"):
        mech.sample(np.ones(2), None)
    x = np.linspace(1, 5, 1000)
    assert np.array_equal(mech(x, _rng(5)), mech(x, _rng(5)))
    assert not np.array_equal(mech(x, _rng(5)), mech(x, _rng(6)))
    assert mech.laplace.scale == 4.0
