"""privacy/relations.py (issue 33 §5): one privacy axis, checked on mechanisms whose
guarantee under each relation is known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.relations import on_relation, replace_one_from_zero_out


def gaussian_delta(eps: float, sensitivity: float, sigma: float) -> float:
    """The exact δ(ε) of the Gaussian mechanism (Balle and Wang, ICML 2018, Thm. 8)."""
    a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
    return float(norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b))


def test_laplace_zero_out_doubles_exactly_under_replace_one():
    # contributions in [-1, 1], noise Laplace(b): against the zero record the largest change
    # is 1 (ε = 1/b), against another contribution 2 (ε = 2/b): the conversion is tight
    b = 0.7
    y = np.linspace(-20, 20, 40001)
    log_ratio = (np.abs(y + 1) - np.abs(y - 1)) / b  # log p(y | x = 1) / p(y | x = -1)
    assert replace_one_from_zero_out(1 / b, 0.0) == (2 / b, 0.0)
    assert float(np.max(log_ratio)) == pytest.approx(2 / b, rel=1e-12)


def test_gaussian_conversion_is_sound_against_the_exact_replace_one_delta():
    # σ = 2 on contributions in the unit ball: zero-out sensitivity 1, replace-one 2
    sigma = 2.0
    for eps_z in (0.25, 1.0, 2.0):
        delta_z = gaussian_delta(eps_z, 1.0, sigma)
        eps_r, delta_r = on_relation(eps_z, delta_z, Adjacency.ZERO_OUT, Adjacency.REPLACE_ONE)
        assert eps_r == 2 * eps_z and delta_r == pytest.approx((1 + math.exp(eps_z)) * delta_z)
        assert gaussian_delta(eps_r, 2.0, sigma) <= delta_r
    # known answer at ε_z = 1 (by hand: Φ(-1.75) - e Φ(-2.25) = .0068296), the bound
    # (1 + e) δ_z = .025394 against the exact replace-one δ(2) = Φ(-1.5) - e² Φ(-2.5) = .020923
    delta_z = gaussian_delta(1.0, 1.0, sigma)
    assert delta_z == pytest.approx(0.0068296, abs=1e-7)
    bound = on_relation(1.0, delta_z, Adjacency.ADD_REMOVE_ONE, Adjacency.REPLACE_ONE)
    assert bound == (2.0, pytest.approx(0.025394, abs=1e-6))
    assert gaussian_delta(2.0, 2.0, sigma) == pytest.approx(0.020923, abs=1e-6)


def test_replace_one_holds_unchanged_under_zero_out():
    # randomised response on one bit: the only zero-out pair (1, ⊥ = 0) is the replace-one
    # pair, so the ε is the same, exactly
    eps = math.log(3.0)
    p = math.exp(eps) / (1 + math.exp(eps))
    assert math.log(p / (1 - p)) == pytest.approx(eps)
    assert on_relation(eps, 0.0, Adjacency.REPLACE_ONE, Adjacency.ZERO_OUT) == (eps, 0.0)
    # per-bit flips on k = 50 bits, histories of at most m = 5 ones: replace-one k ε (any two
    # vectors), zero-out m ε (only x's ones differ from ⊥); the bound is sound and loose
    k, m = 50, 5
    assert on_relation(k * eps, 0.0, Adjacency.REPLACE_ONE, Adjacency.ZERO_OUT)[0] >= m * eps


def test_the_same_relation_is_unchanged_and_others_are_refused():
    for rel in Adjacency:
        assert on_relation(1.5, 1e-6, rel, rel) == (1.5, 1e-6)
    with pytest.raises(DprecError, match="no sound conversion from add-remove-one"):
        on_relation(1.0, 1e-6, Adjacency.ADD_REMOVE_ONE, Adjacency.ZERO_OUT)
    with pytest.raises(DprecError, match="no sound conversion"):
        on_relation(1.0, 1e-6, Adjacency.REPLACE_ONE, Adjacency.ADD_REMOVE_ONE)
    with pytest.raises(DprecError, match="delta in"):
        replace_one_from_zero_out(1.0, 2.0)
    with pytest.raises(DprecError, match="epsilon >= 0"):
        replace_one_from_zero_out(-1.0, 1e-6)


def test_a_vacuous_delta_is_shown_not_clipped():
    eps, delta = replace_one_from_zero_out(16.0, 1e-6)
    assert eps == 32.0 and delta == pytest.approx((1 + math.exp(16)) * 1e-6) and delta > 1
    assert replace_one_from_zero_out(800.0, 1e-9) == (1600.0, math.inf)
    assert replace_one_from_zero_out(math.inf, 0.0) == (math.inf, 0.0)
