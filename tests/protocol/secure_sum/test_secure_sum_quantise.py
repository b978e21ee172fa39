"""The client's clip and randomised rounding: the bound is kept and the rounding is
unbiased."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.protocol.secure_sum.client import clip, quantise


def test_randomised_rounding_is_unbiased():
    # 40 coordinates with fractional parts across (0, 1), 40,000 draws each. Under
    # unbiasedness the mean's error on coordinate j is N(0, f_j (1 - f_j) / N); a 6 SE
    # tolerance gives a false alarm below 40 * 2e-9 per run. np.round (biased: 0.3 -> 0)
    # misses by > 100 SE.
    gamma, draws = 3.0, 40_000
    x = np.linspace(-1.0, 1.0, 40) + 0.0123
    rng = np.random.default_rng(11)
    v = quantise(np.broadcast_to(x, (draws, x.size)), gamma, gamma * 2.0, rng)
    frac = gamma * x - np.floor(gamma * x)
    se = np.sqrt(frac * (1 - frac) / draws)
    assert np.all(np.abs(v.mean(axis=0) - gamma * x) <= 6 * se + 1e-12)
    assert set(np.unique(v - np.floor(gamma * x))) <= {0, 1}


def test_rounding_never_passes_the_clip_bound():
    rng = np.random.default_rng(0)
    v = quantise(np.full(10_000, 1.0 + 1e-9), 0.1 * 3, 0.1 * 3, rng)  # 0.30000000000000004
    assert v.max() <= np.ceil(0.1 * 3) and v.min() >= 0


@pytest.mark.parametrize("norm,expected", [("linf", [2.0, -2.0, 0.5]),
                                           ("l2", [3 * 2 / 5, -4 * 2 / 5 * 1, 0.0])])
def test_clip_in_either_norm(norm, expected):
    x = np.array([3.0, -4.0, 0.0]) if norm == "l2" else np.array([3.0, -4.0, 0.5])
    np.testing.assert_allclose(clip(x, 2.0, norm), expected)
    small = np.array([0.1, -0.2, 0.0])
    np.testing.assert_array_equal(clip(small, 2.0, norm), small)
