import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dprec.errors import DprecError
from dprec.mechanisms.base import Mechanism, event_guarantee
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism, variance_crossover
from dprec.privacy.events import LocalReportDpEvent
from dprec.privacy.guarantee import Guarantee
from dprec.privacy.pld_accountant import PldAccountant

XS = (-1.0, -0.3, 0.0, 0.7, 1.0)
N = 200_000
P_FLOOR = 1e-4


def _integral(fn, a: float, b: float, points=()) -> float:
    inner = [p for p in points if a < p < b]
    return integrate.quad(fn, a, b, points=inner or None, limit=200)[0]


def _rng(*words: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([20240611, *words]))


# ---------------------------------------------------------------- unbiasedness and variance


@pytest.mark.parametrize("mech_cls", [BinaryMechanism, PiecewiseMechanism])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.5])
def test_unbiased_with_closed_form_variance(mech_cls, eps):
    mech = mech_cls(eps)
    rng = _rng(int(eps * 10), mech_cls is PiecewiseMechanism)
    for x in XS:
        est = mech(np.full(N, x), rng)
        var = float(mech.variance(x))
        assert abs(est.mean() - x) < 5 * math.sqrt(var / N), (x, est.mean())
        assert est.var() == pytest.approx(var, rel=0.05), x


def test_vectorised_over_mixed_inputs():
    rng = _rng(1)
    x = np.tile(np.array(XS), N // 5)
    for mech in (BinaryMechanism(1.0), PiecewiseMechanism(1.0)):
        est = mech(x, rng)
        assert est.shape == x.shape and est.dtype == np.float64
        for v in XS:
            sel = est[x == v]
            assert abs(sel.mean() - v) < 5 * math.sqrt(float(mech.variance(v)) / sel.size)
        assert mech(x.reshape(-1, 5), rng).shape == (N // 5, 5)


def test_binary_estimate_values_and_shapes():
    mech = BinaryMechanism(2.5)
    c = (math.exp(2.5) + 1) / (math.exp(2.5) - 1)
    assert mech.scale == pytest.approx(c, rel=1e-14)
    bits = mech.sample_bits(np.array([[0.1, -0.2], [1.0, -1.0]]), _rng(2))
    assert bits.dtype == np.bool_ and bits.shape == (2, 2)
    assert np.array_equal(mech.estimate(np.array([True, False])), [c, -c])
    assert np.array_equal(mech.estimate(np.array([1, 0])), [c, -c])
    with pytest.raises(DprecError, match="bits must be booleans or 0/1"):
        mech.estimate(np.array([2, 0]))


def test_piecewise_closed_form_variance_matches_density_integral():
    for eps in (0.3, 1.0, 2.5, 6.0):
        mech = PiecewiseMechanism(eps)
        c = mech.scale
        for x in XS:
            lo, hi = (float(b) for b in mech.interval(x))
            moments = [
                _integral(lambda t, k=k, m=mech, v=x: t**k * float(m.density(t, v)), -c, c,
                          (lo, hi))
                for k in (0, 1, 2)
            ]
            mass, mean, second = moments
            assert mass == pytest.approx(1.0, abs=1e-12)
            assert mean == pytest.approx(x, abs=1e-10)
            assert second - mean**2 == pytest.approx(float(mech.variance(x)), rel=1e-10)


def test_piecewise_matches_wang_parameters():
    eps = 2.0
    mech = PiecewiseMechanism(eps)
    s = math.exp(eps / 2)
    c = (s + 1) / (s - 1)
    assert mech.scale == pytest.approx(c, rel=1e-14)
    hi, lo = mech.density_levels
    assert hi == pytest.approx((math.exp(eps) - s) / (2 * s + 2), rel=1e-14)
    assert hi / lo == pytest.approx(math.exp(eps), rel=1e-14)
    assert mech.center_prob == pytest.approx(s / (s + 1), rel=1e-14)
    left, right = mech.interval(np.array([-1.0, 0.0, 1.0]))
    assert np.allclose(left, [-c, -(c - 1) / 2, 1.0], rtol=1e-14)
    assert np.allclose(right, [-1.0, (c - 1) / 2, c], rtol=1e-14)
    x = np.linspace(-1, 1, 11)
    assert np.allclose(mech.variance(x), x**2 / (s - 1) + (s + 3) / (3 * (s - 1) ** 2), rtol=1e-13)


# ---------------------------------------------------------------- privacy at the boundary


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5, 8.0])
def test_binary_ratio_bound_exact(eps):
    mech = BinaryMechanism(eps)
    grid = np.linspace(-1.0, 1.0, 401)
    p1 = mech.prob_one(grid)
    formula = (grid * (math.exp(eps) - 1) + math.exp(eps) + 1) / (2 * math.exp(eps) + 2)
    assert np.allclose(p1, formula, rtol=1e-13, atol=0)
    bound = math.exp(eps)
    for p in (p1, 1.0 - p1):
        ratio = p[:, None] / p[None, :]
        assert ratio.max() <= bound * (1 + 1e-12)
    assert float(mech.prob_one(1.0) / mech.prob_one(-1.0)) == pytest.approx(bound, rel=1e-12)
    assert float((1 - mech.prob_one(-1.0)) / (1 - mech.prob_one(1.0))) == pytest.approx(
        bound, rel=1e-12
    )


def test_binary_ratio_bound_empirical():
    eps = 1.0
    mech = BinaryMechanism(eps)
    rng = _rng(3)
    grid = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    phat = np.array([mech.sample_bits(np.full(N, x), rng).mean() for x in grid])
    se = np.sqrt(phat * (1 - phat) / N)
    assert np.all(np.abs(phat - mech.prob_one(grid)) < 5 * se)
    # log-ratio of the extreme inputs equals eps within sampling error (delta method)
    for p_hi, p_lo, se_hi, se_lo in ((phat[-1], phat[0], se[-1], se[0]),
                                     (1 - phat[0], 1 - phat[-1], se[0], se[-1])):
        log_ratio = math.log(p_hi / p_lo)
        se_log = math.hypot(se_hi / p_hi, se_lo / p_lo)
        assert abs(log_ratio - eps) < 5 * se_log
    # no pair of inputs exceeds e^eps beyond sampling error
    log_p = np.log(np.concatenate([phat, 1 - phat]).reshape(2, -1))
    se_log = (se / np.concatenate([phat, 1 - phat]).reshape(2, -1))
    diff = log_p[:, :, None] - log_p[:, None, :]
    se_diff = np.hypot(se_log[:, :, None], se_log[:, None, :])
    assert np.all(diff <= eps + 5 * se_diff)


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5, 8.0])
def test_piecewise_density_ratio_bound_exact(eps):
    mech = PiecewiseMechanism(eps)
    c = mech.scale
    xs = np.linspace(-1.0, 1.0, 81)
    ts = np.linspace(-c, c, 1001)
    dens = mech.density(ts[None, :], xs[:, None])  # (x, t)
    assert dens.min() > 0
    ratio = dens.max(axis=0) / dens.min(axis=0)
    bound = math.exp(eps)
    assert ratio.max() <= bound * (1 + 1e-12)
    assert ratio.max() == pytest.approx(bound, rel=1e-12)  # attained
    assert float(mech.density(c, 1.0) / mech.density(c, -1.0)) == pytest.approx(bound, rel=1e-12)
    assert np.all(mech.density(np.array([-c - 1e-9, c + 1e-9]), 0.3) == 0)
    # the density integrates to one for every x (piecewise constant: exact Riemann sums)
    left, right = mech.interval(xs)
    hi, lo = mech.density_levels
    assert np.allclose(hi * (right - left) + lo * (2 * c - (right - left)), 1.0, rtol=1e-12)


def test_piecewise_cdf_is_integral_of_density():
    mech = PiecewiseMechanism(1.5)
    c = mech.scale
    for x in XS:
        ts = np.linspace(-c - 0.5, c + 0.5, 41)
        breaks = [float(b) for b in mech.interval(x)] + [-c, c]
        num = np.array([_integral(lambda u, v=x: float(mech.density(u, v)), -c - 1, t, breaks)
                        for t in ts])
        assert np.allclose(mech.cdf(ts, x), num, atol=1e-9)


@pytest.mark.parametrize("eps", [0.5, 2.5])
def test_piecewise_samples_fit_density(eps):
    mech = PiecewiseMechanism(eps)
    c = mech.scale
    rng = _rng(4, int(eps * 10))
    for x in XS:
        t = mech.sample(np.full(N, x), rng)
        assert t.min() >= -c and t.max() <= c
        assert stats.kstest(t, lambda u, v=x: mech.cdf(u, v)).pvalue > P_FLOOR
        # chi-square on 40 equal-width bins, expected mass from integrating ``density``
        edges = np.linspace(-c, c, 41)
        breaks = [float(b) for b in mech.interval(x)]
        expected = np.array([
            _integral(lambda u, v=x: float(mech.density(u, v)), a, b, breaks)
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        ])
        observed, _ = np.histogram(t, bins=edges)
        assert expected.sum() == pytest.approx(1.0, abs=1e-9)
        assert stats.chisquare(observed, expected * N).pvalue > P_FLOOR


def test_piecewise_mixed_inputs_probability_integral_transform():
    mech = PiecewiseMechanism(1.0)
    rng = _rng(5)
    x = rng.uniform(-1, 1, N)
    u = mech.cdf(mech.sample(x, rng), x)
    assert stats.kstest(u, "uniform").pvalue > P_FLOOR


def test_samplers_detect_a_wrong_density():
    # the goodness-of-fit test can fail: samples for x = 0.7 do not fit the density for x = 0.6
    mech = PiecewiseMechanism(2.5)
    t = mech.sample(np.full(N, 0.7), _rng(6))
    assert stats.kstest(t, lambda u: mech.cdf(u, 0.6)).pvalue < P_FLOOR


def test_same_seed_same_reports():
    x = np.linspace(-1, 1, 1000)
    for mech in (BinaryMechanism(1.0), PiecewiseMechanism(1.0)):
        assert np.array_equal(mech(x, _rng(7)), mech(x, _rng(7)))
        assert not np.array_equal(mech(x, _rng(7)), mech(x, _rng(8)))


# ---------------------------------------------------------------- variance comparison


def _var_binary(eps, x):
    c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    return c * c - x * x


def _var_piecewise(eps, x):
    s = math.exp(eps / 2)
    return x * x / (s - 1) + (s + 3) / (3 * (s - 1) ** 2)


def test_variance_crossover_at_zero_and_worst_case():
    # at x = 0 piecewise wins iff eps > 0.6094 (root of 3 s^3 - s^2 + s = 7, s = e^{eps/2})
    eps0 = optimize.brentq(lambda e: _var_piecewise(e, 0) - _var_binary(e, 0), 0.05, 5, xtol=1e-14)
    assert eps0 == pytest.approx(0.609352493, abs=1e-8)
    s0 = math.exp(eps0 / 2)
    assert 3 * s0**3 - s0**2 + s0 - 7 == pytest.approx(0, abs=1e-10)
    for eps in (0.61, 1.0, 2.5, 5.0):
        assert PiecewiseMechanism(eps).variance(0.0) < BinaryMechanism(eps).variance(0.0)
    assert PiecewiseMechanism(0.6).variance(0.0) > BinaryMechanism(0.6).variance(0.0)
    # worst cases (PM at |x| = 1, binary at x = 0) cross at eps = 1.29, as Wang et al. state
    eps_w = optimize.brentq(lambda e: _var_piecewise(e, 1) - _var_binary(e, 0), 0.05, 5)
    assert eps_w == pytest.approx(1.2898, abs=1e-4)
    # at |x| = 1 binary always wins: Var_PM / Var_binary = (s + 1)^2 / (3 s) >= 4/3
    for eps in (0.1, 1.0, 2.5, 10.0, 30.0):
        s = math.exp(eps / 2)
        ratio = PiecewiseMechanism(eps).variance(1.0) / BinaryMechanism(eps).variance(1.0)
        assert float(ratio) == pytest.approx((s + 1) ** 2 / (3 * s), rel=1e-10)
        assert ratio > 4 / 3 - 1e-12


@pytest.mark.parametrize("eps,golden", [(0.5, 0.0), (1.0, 0.62746), (2.0, 0.82567),
                                        (2.5, 0.86177), (5.0, 0.95176)])
def test_variance_crossover_in_x(eps, golden):
    xstar = variance_crossover(eps)
    assert xstar == pytest.approx(golden, abs=1e-5)
    pm, bm = PiecewiseMechanism(eps), BinaryMechanism(eps)
    if xstar > 0:
        assert float(pm.variance(xstar)) == pytest.approx(float(bm.variance(xstar)), rel=1e-10)
        grid = np.linspace(-1, 1, 2001)
        below = np.abs(grid) < xstar - 1e-9
        above = np.abs(grid) > xstar + 1e-9
        assert np.all(pm.variance(grid[below]) < bm.variance(grid[below]))
        assert np.all(pm.variance(grid[above]) > bm.variance(grid[above]))
    else:
        grid = np.linspace(-1, 1, 2001)
        assert np.all(pm.variance(grid) > bm.variance(grid))


# ---------------------------------------------------------------- guarantee, event, wire


def test_event_guarantee_describe_and_wire_size():
    b, p = BinaryMechanism(2.5), PiecewiseMechanism(2.5)
    for mech, bits in ((b, 1), (p, 32)):
        assert isinstance(mech, Mechanism)
        g = event_guarantee(mech)
        assert isinstance(g, Guarantee)
        got = (g.epsilon, g.delta, g.level, g.sides, g.model)
        assert got == (2.5, 0.0, "event", "two", "local")
        assert mech.describe()["epsilon"] == 2.5 and mech.describe()["name"] == mech.name
        assert mech.report_bits == bits and mech.report_bytes == bits / 8
    assert b.report_bytes == 0.125 and p.report_bytes == 4.0
    assert b == BinaryMechanism(2.5) and b != BinaryMechanism(2.0)
    with pytest.raises(AttributeError):
        b.epsilon = 1.0  # frozen


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("mech_cls", [BinaryMechanism, PiecewiseMechanism])
@pytest.mark.parametrize("bad,msg", [(0, r"epsilon must be > 0, got 0"),
                                     (-1, r"epsilon must be > 0, got -1"),
                                     (float("nan"), r"epsilon must be a number > 0, got nan"),
                                     (float("inf"), r"epsilon must be finite"),
                                     ("abc", r"epsilon must be a number > 0"),
                                     (True, r"epsilon must be a number > 0")])
def test_bad_epsilon(mech_cls, bad, msg):
    with pytest.raises(DprecError, match=msg):
        mech_cls(bad)


@pytest.mark.parametrize("bad", [1.5, -1.0000001, float("nan"), float("inf")])
def test_bad_input_values(bad):
    x = np.array([0.0, 0.2, bad])
    rng = _rng(9)
    b, p = BinaryMechanism(1.0), PiecewiseMechanism(1.0)
    calls = (lambda: b.sample_bits(x, rng), lambda: b.variance(x), lambda: b(x, rng),
             lambda: b.prob_one(x), lambda: p.sample(x, rng), lambda: p.variance(x),
             lambda: p.density(0.0, x), lambda: p.cdf(0.0, x))
    rule = r"x must lie in \[-1, 1\] \(clip first\), got .* index 2"
    for call in calls:
        with pytest.raises(DprecError, match=rule):
            call()


def test_bad_rng_and_bounds_accepted():
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator"):
        BinaryMechanism(1.0).sample_bits(np.zeros(3), 42)
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator"):
        PiecewiseMechanism(1.0).sample(np.zeros(3), None)
    # the closed interval's end points are valid inputs
    edge = np.array([-1.0, 1.0])
    assert PiecewiseMechanism(1.0).sample(edge, _rng(10)).shape == (2,)
    assert BinaryMechanism(1.0).sample_bits(edge, _rng(10)).shape == (2,)


@pytest.mark.parametrize("mech", [BinaryMechanism(2.5), PiecewiseMechanism(0.8)])
def test_dp_event_is_a_pure_local_report(mech):
    assert mech.dp_event() == LocalReportDpEvent(mech.epsilon)
    one = PldAccountant().compose([(mech.dp_event(), 1)], 1e-12)
    assert one.sides == event_guarantee(mech).sides == "two"
    assert mech.epsilon - 1e-9 <= one.epsilon <= mech.epsilon + 1e-4
