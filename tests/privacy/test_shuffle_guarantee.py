"""The shuffled guarantee and PLD composition of (eps, delta) pairs (privacy.shuffle), checked
against exact optimal composition of pure DP."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from dprec.errors import DprecError
from dprec.privacy.shuffle import numerical_epsilon
from dprec.privacy.shuffle_guarantee import compose_pld, local_guarantee, shuffled_guarantee


def _optimal_pure_composition(eps: float, k: int, delta: float) -> float:
    """Exact optimal k-fold composition of eps-DP (Kairouz, Oh, Viswanath 2015).

    The worst case is binary randomized response: the privacy loss is eps (k - 2L) with
    L ~ Bin(k, 1 / (1 + e^eps)); delta(e) = E[(1 - e^(e - loss))_+].
    """
    loss = eps * (k - 2 * np.arange(k + 1))
    w = stats.binom.pmf(np.arange(k + 1), k, 1 / (1 + math.exp(eps)))

    def excess(e: float) -> float:
        return float(w @ np.maximum(0.0, -np.expm1(e - loss))) - delta

    return brentq(excess, 0.0, k * eps, xtol=1e-10)


@pytest.mark.parametrize("eps, k, delta", [(0.1, 100, 1e-5), (1.0, 10, 1e-6), (0.5, 50, 1e-8)])
def test_pld_matches_optimal_composition_of_pure_dp(eps, k, delta):
    exact = _optimal_pure_composition(eps, k, delta)
    pld = compose_pld(eps, 0.0, k, delta)
    assert exact - 1e-9 <= pld <= exact + 2e-3  # pessimistic rounding, 1e-4 per step at most
    assert pld <= k * eps  # basic composition (Dwork & Roth, Thm 3.16)
    advanced = math.sqrt(2 * k * math.log(1 / delta)) * eps + k * eps * math.expm1(eps)
    assert pld <= advanced  # advanced composition (Dwork & Roth, Thm 3.20)


def test_pld_golden_value():
    # 100-fold composition of 0.1-DP at delta 1e-5 (regression value of the exact optimum;
    # basic composition gives 10, advanced 5.85)
    assert _optimal_pure_composition(0.1, 100, 1e-5) == pytest.approx(4.3068, abs=1e-3)
    assert compose_pld(0.1, 0.0, 100, 1e-5) == pytest.approx(4.3068, abs=2e-3)


def test_pld_with_delta():
    # the infinite-loss mass 1 - (1 - delta)^k must fit under the target
    assert math.isinf(compose_pld(0.5, 1e-6, 100, 0.99e-4))
    with_delta = compose_pld(0.5, 1e-8, 100, 2e-6)
    assert compose_pld(0.5, 0.0, 100, 2e-6) <= with_delta <= compose_pld(0.5, 0.0, 100, 0.9e-6)
    assert compose_pld(0.5, 0.0, 0, 1e-6) == 0.0
    assert compose_pld(0.5, 0.0, 1, 1e-6) == pytest.approx(0.5, abs=1e-3)
    with pytest.raises(DprecError, match="target_delta must be in"):
        compose_pld(0.5, 0.0, 1, 0.0)


def test_shuffled_guarantee_fmf_ldp_setting():
    g = shuffled_guarantee(2.5, 50_000, 100, 20, 1e-6)
    assert g.model == "shuffled" and g.level == "user" and g.delta == 1e-6
    assert 0 < g.epsilon < 100 < 100 * 20 * 2.5
    text = " ".join(g.notes)
    assert "FMT21 numerical" in text and "PLD" in text and "delta split" in text
    # more epochs cost more
    assert shuffled_guarantee(2.5, 50_000, 100, 10, 1e-6).epsilon < g.epsilon
    # the closed form is valid here (n large) but looser
    cf = shuffled_guarantee(2.5, 50_000, 100, 20, 1e-6, method="closed_form")
    assert cf.model == "shuffled" and cf.epsilon > g.epsilon


def test_shuffled_guarantee_single_shuffle_matches_bound():
    g = shuffled_guarantee(4.0, 100_000, 1, 1, 1e-6)
    # one shuffle: delta_s = delta / 2, so eps is at most the shuffle bound at delta / 2
    assert g.epsilon <= numerical_epsilon(4.0, 100_000, 5e-7) + 1e-3
    assert g.epsilon >= numerical_epsilon(4.0, 100_000, 1e-6) - 1e-3


def test_shuffled_guarantee_falls_back_to_local():
    cf = shuffled_guarantee(2.5, 1000, 100, 20, 1e-6, method="closed_form")
    assert cf.model == "local" and cf.epsilon == pytest.approx(100 * 20 * 2.5)
    assert any("Thm 3.1" in n for n in cf.notes)
    none = shuffled_guarantee(10.0, 100, 5, 2, 1e-6)  # almost no clones: no gain
    assert none.model == "local" and none.epsilon == pytest.approx(100.0)
    assert any("no shuffling amplification" in n for n in none.notes)
    assert local_guarantee(2.5, 100, 20).epsilon == pytest.approx(5000.0)
    with pytest.raises(DprecError, match="k \\* epochs must be >= 1"):
        shuffled_guarantee(1.0, 1000, 0, 5, 1e-6)
    with pytest.raises(DprecError, match="method must be"):
        shuffled_guarantee(1.0, 1000, 1, 5, 1e-6, method="exact")


# FMF-LDP's setting (docs/architecture.md §2): eps0 = 2.5 per report, k = 100 reports per
# epoch, T = 20 epochs, delta = 1e-6. Clone PLD at the default interval 1e-4; at 1e-3 it
# gives 78.90 and 6.93, the values of an outside check that used that interval (pessimistic
# rounding adds up to one interval per shuffle).
CLONE_GOLDEN = {943: (78.0435, 78.8975), 50_000: (6.0308, 6.9255)}


@pytest.mark.parametrize("n", sorted(CLONE_GOLDEN))
def test_shuffled_guarantee_clone_pld_golden(n):
    fine, coarse = CLONE_GOLDEN[n]
    g = shuffled_guarantee(2.5, n, 100, 20, 1e-6)
    np.testing.assert_allclose(g.epsilon, fine, rtol=1e-4)
    assert g.model == "shuffled" and g.level == "user" and g.sides == "two" and g.delta == 1e-6
    assert any("clone pair" in note and "Zhu, Dong, Wang" in note for note in g.notes)
    g3 = shuffled_guarantee(2.5, n, 100, 20, 1e-6, value_discretization_interval=1e-3)
    np.testing.assert_allclose(g3.epsilon, coarse, rtol=1e-4)


def test_clone_pld_is_far_tighter_than_per_shuffle_pairs():
    old = shuffled_guarantee(2.5, 50_000, 100, 20, 1e-6, analysis="per_shuffle_pairs")
    np.testing.assert_allclose(old.epsilon, 50.0548, rtol=1e-4)
    assert any("per_shuffle_pairs" in n for n in old.notes)
    new = shuffled_guarantee(2.5, 50_000, 100, 20, 1e-6)
    assert new.epsilon < old.epsilon / 5
    explicit = shuffled_guarantee(2.5, 50_000, 100, 20, 1e-6, analysis="clone_pld")
    assert explicit == new


def test_shuffled_guarantee_huge_eps0_falls_back_to_local():
    for analysis in ("clone_pld", "per_shuffle_pairs"):
        g = shuffled_guarantee(1e6, 943, 100, 20, 1e-6, analysis=analysis)
        assert g.model == "local" and g.epsilon == pytest.approx(2000 * 1e6)
        assert any("no clone can appear" in n for n in g.notes)
    with pytest.raises(DprecError, match="analysis must be"):
        shuffled_guarantee(2.5, 943, 100, 20, 1e-6, analysis="exact")  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="eps0_per_report must be finite"):
        shuffled_guarantee(math.inf, 943, 100, 20, 1e-6)
