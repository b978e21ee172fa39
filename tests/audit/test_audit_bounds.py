"""Clopper-Pearson, the two-input eps bound, its ceiling and Steinke et al.'s one-run bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dprec.audit.bounds import (
    audit_ceiling,
    clopper_pearson,
    empirical_epsilon,
    eps_lower_one_run,
    p_value_one_run,
)
from dprec.errors import DprecError


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (37, 1000), (999_000, 1_000_000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    ci = stats.binomtest(k, n).proportion_ci(0.99, "exact")
    low, high = clopper_pearson(k, n, 0.01)
    assert math.isclose(float(low), ci.low, rel_tol=1e-9, abs_tol=1e-15)
    assert math.isclose(float(high), ci.high, rel_tol=1e-9)


def test_closed_forms_at_the_edges_and_the_ceiling():
    n, a = 1_000_000, 0.01
    c = (a / 2) ** (1 / n)
    _, high0 = clopper_pearson(0, n, a)
    low_n, _ = clopper_pearson(n, n, a)
    assert math.isclose(float(high0), 1 - c, rel_tol=1e-9)
    assert math.isclose(float(low_n), c, rel_tol=1e-12)
    assert math.isclose(audit_ceiling(n, a), math.log(c / (1 - c)), rel_tol=1e-9)
    assert 12.1 < audit_ceiling(n, a) < 12.2 < math.log(n)


def test_empirical_epsilon_is_the_log_ratio_of_the_interval_ends():
    low, _ = clopper_pearson(7000, 10000, 0.05)
    _, high = clopper_pearson(2000, 10000, 0.05)
    got = empirical_epsilon(7000, 10000, 2000, 10000, 0.05, delta=0.01)
    assert math.isclose(float(got), math.log((low - 0.01) / high), rel_tol=1e-12)
    assert float(empirical_epsilon(10, 100, 50, 100, 0.05)) == 0.0  # worse than chance: 0
    assert float(empirical_epsilon(1, 100, 0, 100, 0.05, delta=0.5)) == 0.0


def test_the_bound_covers_the_true_epsilon_at_the_stated_confidence():
    # randomized response with eps = 1 and a fixed test: P(bound > eps) <= alpha
    rng = np.random.default_rng(3)
    eps, n, reps, alpha = 1.0, 3000, 2000, 0.2
    p = 1 / (1 + math.exp(-eps))
    tp = rng.binomial(n, p, reps)
    fp = rng.binomial(n, 1 - p, reps)
    bounds = empirical_epsilon(tp, n, fp, n, alpha)
    assert np.mean(bounds > eps) <= alpha
    assert np.mean(bounds) > 0.85 * eps  # and it is not vacuous


def test_one_run_bound_reproduces_steinke_et_al_appendix_d():
    # arXiv 2305.08846 Appendix D: m=1000, r=100, v=75, delta=1e-4, 95% -> eps >= 0.673
    assert eps_lower_one_run(1000, 100, 75, 1e-4, 0.05) == pytest.approx(0.673, abs=5e-4)


def test_one_run_p_value_pure_dp_is_a_binomial_tail_and_monotone():
    q = 1 / (1 + math.exp(-0.5))
    assert p_value_one_run(100, 50, 40, 0.5, 0.0) == pytest.approx(stats.binom.sf(39, 50, q))
    ps = [p_value_one_run(1000, 100, 70, e, 1e-5) for e in (0.0, 0.5, 1.0, 2.0)]
    assert ps == sorted(ps)
    assert eps_lower_one_run(1000, 100, 50, 0.0, 0.05) == 0.0  # chance level: no evidence
    assert eps_lower_one_run(1000, 100, 100, 0.0, 0.05) < math.log(100 / 3)


@pytest.mark.parametrize("args", [(10, 20, 5), (10, 5, 6), (10, 5, -1)])
def test_one_run_refuses_impossible_counts(args):
    m, r, v = args
    with pytest.raises(DprecError, match="v <= r <= m"):
        p_value_one_run(m, r, v, 1.0, 0.0)


def test_bad_alpha_and_counts_are_refused():
    with pytest.raises(DprecError, match="alpha"):
        clopper_pearson(1, 10, 1.5)
    with pytest.raises(DprecError, match="counts"):
        clopper_pearson(11, 10, 0.05)
    with pytest.raises(DprecError, match="trials"):
        audit_ceiling(0, 0.05)
