"""LaplaceMechanism: distribution (KS and chi-square over 200,000 draws, p-value floor 1e-4),
unbiasedness, the e^eps ratio bound at its exact boundary, and its accounting event."""

import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from dprec.errors import DprecError
from dprec.mechanisms.base import Mechanism, event_guarantee
from dprec.mechanisms.numeric import LaplaceMechanism
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import Guarantee
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant

N = 200_000
P_FLOOR = 1e-4


def _rng(*words: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([20240612, *words]))


# ---------------------------------------------------------------- distribution


@pytest.mark.parametrize("eps,low,high", [(0.1, 0.0, 1.0), (1.0, 0.0, 1.0), (3.0, 0.0, 1.0),
                                          (1.0, 1.0, 5.0)])
def test_samples_fit_the_laplace_law(eps, low, high):
    mech = LaplaceMechanism(eps, low, high)
    b = (high - low) / eps
    assert mech.scale == pytest.approx(b, rel=1e-15) and mech.sensitivity == high - low
    rng = _rng(1, int(eps * 10), int(low))
    for x in (low, 0.5 * (low + high), high):
        y = mech.sample(np.full(N, x), rng)
        assert stats.kstest(y, stats.laplace(loc=x, scale=b).cdf).pvalue > P_FLOOR
        assert stats.kstest(y, lambda t, v=x: mech.cdf(t, v)).pvalue > P_FLOOR
        # chi-square on 40 equal-mass bins of the claimed law
        edges = stats.laplace(loc=x, scale=b).ppf(np.linspace(0, 1, 41))
        observed, _ = np.histogram(y, bins=edges)
        assert stats.chisquare(observed, np.full(40, N / 40)).pvalue > P_FLOOR
        # unbiased, Var = 2 b^2
        assert abs(y.mean() - x) < 5 * math.sqrt(2 * b * b / N)
        assert y.var() == pytest.approx(float(mech.variance(x)), rel=0.03)
        assert float(mech.variance(x)) == pytest.approx(2 * b * b, rel=1e-15)


def test_density_and_cdf_are_the_laplace_law():
    mech = LaplaceMechanism(1.7, 0.0, 1.0)
    law = stats.laplace(loc=0.3, scale=1 / 1.7)
    t = np.linspace(-6, 7, 1001)
    np.testing.assert_allclose(mech.density(t, 0.3), law.pdf(t), rtol=1e-12)
    np.testing.assert_allclose(mech.cdf(t, 0.3), law.cdf(t), rtol=1e-12, atol=1e-15)
    assert np.array_equal(mech.estimate(np.array([0.5, -2.0])), [0.5, -2.0])


def test_the_goodness_of_fit_test_can_fail():
    mech = LaplaceMechanism(1.0)
    y = mech.sample(np.full(N, 0.5), _rng(2))
    assert stats.kstest(y, lambda t: mech.cdf(t, 0.45)).pvalue < P_FLOOR
    assert stats.kstest(y, lambda t: LaplaceMechanism(1.05).cdf(t, 0.5)).pvalue < P_FLOOR


def test_vectorised_over_mixed_inputs_and_shapes():
    mech = LaplaceMechanism(2.0)
    x = np.tile(np.array([0.0, 0.25, 1.0]), N // 3)
    y = mech(x, _rng(3))
    assert y.shape == x.shape and y.dtype == np.float64
    u = mech.cdf(y, x)  # probability integral transform over mixed inputs
    assert stats.kstest(u, "uniform").pvalue > P_FLOOR
    assert mech(x.reshape(-1, 3), _rng(3)).shape == (N // 3, 3)


# ---------------------------------------------------------------- privacy at the boundary


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5, 8.0])
def test_density_ratio_bound_exact(eps):
    mech = LaplaceMechanism(eps, 1.0, 5.0)
    xs = np.linspace(1.0, 5.0, 81)
    ts = np.linspace(-20.0, 26.0, 2001)
    log_dens = np.log(mech.density(ts[None, :], xs[:, None]))  # (x, t)
    worst = (log_dens.max(axis=0) - log_dens.min(axis=0)).max()
    assert worst <= eps * (1 + 1e-12)
    assert worst == pytest.approx(eps, rel=1e-12)  # attained
    # attained exactly for every y >= high, between x = high and x' = low
    above = ts[ts >= 5.0]
    ratio = mech.density(above, 5.0) / mech.density(above, 1.0)
    np.testing.assert_allclose(ratio, math.exp(eps), rtol=1e-12)
    inside = ts[(ts > 1.0) & (ts < 5.0)]
    assert np.all(mech.density(inside, 5.0) / mech.density(inside, 1.0) < math.exp(eps))


def test_ratio_bound_empirical_at_the_boundary():
    # P(y >= high | x = high) = 1/2 and P(y >= high | x = low) = e^-eps / 2: log-ratio = eps
    eps = 1.0
    mech = LaplaceMechanism(eps)
    rng = _rng(4)
    hi = (mech.sample(np.full(N, 1.0), rng) >= 1.0).mean()
    lo = (mech.sample(np.full(N, 0.0), rng) >= 1.0).mean()
    assert abs(hi - 0.5) < 5 * math.sqrt(0.25 / N)
    se = math.hypot(math.sqrt((1 - hi) / (hi * N)), math.sqrt((1 - lo) / (lo * N)))
    assert abs(math.log(hi / lo) - eps) < 5 * se
    # the same event for inputs closer together has a smaller ratio
    mid = (mech.sample(np.full(N, 0.5), rng) >= 1.0).mean()
    assert math.log(hi / mid) < eps - 5 * se


# ---------------------------------------------------------------- guarantee and accounting


def test_event_guarantee_and_describe():
    mech = LaplaceMechanism(2.0, 1.0, 5.0)
    assert isinstance(mech, Mechanism)
    g = event_guarantee(mech)
    assert isinstance(g, Guarantee)
    assert (g.epsilon, g.delta, g.level, g.sides, g.model) == (2.0, 0.0, "event", "two", "local")
    ev = mech.describe()
    assert ev["epsilon"] == 2.0 and ev["scale"] == 2.0 and ev["name"] == "laplace"
    assert mech.report_bits == 32 and mech.report_bytes == 4.0
    assert mech == LaplaceMechanism(2.0, 1.0, 5.0) and mech != LaplaceMechanism(2.0)
    with pytest.raises(AttributeError):
        mech.epsilon = 1.0  # frozen


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_dp_event_accounts_to_eps(eps):
    mech = LaplaceMechanism(eps, 1.0, 5.0)
    event = mech.dp_event()
    assert event == dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / eps)
    assert BasicAccountant().compose([(event, 1)]).epsilon == pytest.approx(eps, rel=1e-12)
    pld = PldAccountant().compose([(event, 1)], 1e-6)
    assert eps - 1e-5 <= pld.epsilon <= eps + 1e-4
    # per interaction eps; per user over n ratings: basic n eps, PLD below it
    log = EventLog(3)
    log.record(0, event, [0, 1], count=40, unit="interaction")
    log.record(0, event, [2], count=5, unit="interaction")
    levels = account(log, 1e-6)
    assert levels.event.epsilon == pytest.approx(eps, abs=1e-4)
    assert levels.user_basic is not None
    assert levels.user_basic.epsilon == pytest.approx(40 * eps, rel=1e-12)
    assert levels.user.epsilon <= 40 * eps + 1e-9


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("bad,msg", [(0, r"epsilon must be > 0, got 0"),
                                     (-1, r"epsilon must be > 0, got -1"),
                                     (float("nan"), r"epsilon must be a number > 0, got nan"),
                                     (float("inf"), r"epsilon must be finite"),
                                     ("abc", r"epsilon must be a number > 0"),
                                     (True, r"epsilon must be a number > 0")])
def test_bad_epsilon(bad, msg):
    with pytest.raises(DprecError, match=msg):
        LaplaceMechanism(bad)


@pytest.mark.parametrize("low,high,msg", [(1.0, 1.0, "low must be < high"),
                                          (2.0, 1.0, "low must be < high"),
                                          (float("-inf"), 1.0, "low must be a finite number"),
                                          (0.0, float("nan"), "high must be a finite number"),
                                          (0.0, "x", "high must be a finite number")])
def test_bad_interval(low, high, msg):
    with pytest.raises(DprecError, match=msg):
        LaplaceMechanism(1.0, low, high)


@pytest.mark.parametrize("bad", [1.5, -1e-9, float("nan"), float("inf")])
def test_bad_inputs_are_refused(bad):
    mech = LaplaceMechanism(1.0)
    x = np.array([0.0, 0.5, bad])
    rule = r"x must lie in \[0, 1\] \(clip first\), got .* index 2"
    for call in (lambda: mech.sample(x, _rng(5)), lambda: mech.variance(x),
                 lambda: mech.density(0.0, x), lambda: mech.cdf(0.0, x)):
        with pytest.raises(DprecError, match=rule):
            call()
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator"):
        mech.sample(np.zeros(3), 42)
    assert mech.sample(np.array([0.0, 1.0]), _rng(5)).shape == (2,)  # end points are valid


def test_same_seed_same_reports():
    mech, x = LaplaceMechanism(1.0), np.linspace(0, 1, 1000)
    assert np.array_equal(mech(x, _rng(7)), mech(x, _rng(7)))
    assert not np.array_equal(mech(x, _rng(7)), mech(x, _rng(8)))
