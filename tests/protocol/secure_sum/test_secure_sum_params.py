"""The parameter choice: the centred sum never wraps in the worst case, the width is the
narrowest that does, the noise tail is sound, and every choice is reported as strict JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.protocol.secure_sum import choose_params, noise_tail_bound
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.ring import centred


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 10 ** 6), d=st.integers(1, 20_000),
       clip=st.floats(1e-3, 1e3), gamma=st.floats(1e-2, 1e6),
       norm=st.sampled_from(["l2", "linf"]), variance=st.floats(0, 1e8))
def test_the_worst_case_sum_never_wraps_and_the_width_is_minimal(n, d, clip, gamma, norm,
                                                                  variance):
    # the ranges keep the worst case below 2^61, so every draw gets a modulus
    p = choose_params(dimension=d, expected_clients=n, clip=clip, gamma=gamma, norm=norm,
                      noise_variance=variance)
    worst = n * math.ceil(gamma * clip) + p.noise_tail  # every client at +-ceil(gamma c)
    assert p.bound == worst
    extremes = np.array([worst, -worst, 0], dtype=np.int64)
    assert centred(extremes.view(np.uint64), p.bits).tolist() == [worst, -worst, 0]
    if p.bits > 1:  # one bit less wraps the worst case
        assert centred(extremes.view(np.uint64), p.bits - 1).tolist() != [worst, -worst, 0]


def test_the_noise_tail_is_the_bernstein_bound():
    # L = ln 2 + 40 ln 2 = 41 ln 2; t = L/3 + sqrt(L^2/9 + 2 L 100) = 85.45...
    log_terms = 41 * math.log(2)
    assert noise_tail_bound(100.0, 1, 40) == math.ceil(
        log_terms / 3 + math.sqrt(log_terms ** 2 / 9 + 200 * log_terms)) == 86
    assert noise_tail_bound(0.0, 10, 40) == 0


@pytest.mark.parametrize("mu,d,sigma", [(0.5, 1, 20), (25.0, 1, 30), (500.0, 100, 20)])
def test_the_noise_tail_bounds_the_exact_skellam_tail(mu, d, sigma):
    # Skellam(mu, mu) has variance 2 mu; the union over d coordinates of its exact two-sided
    # tail beyond T must stay below 2^-sigma
    t = noise_tail_bound(2 * mu, d, sigma)
    assert 2 * d * scipy.stats.skellam.sf(t, mu, mu) <= 2.0 ** -sigma
    assert 2 * d * scipy.stats.skellam.sf(t // 2, mu, mu) > 2.0 ** -sigma  # not vacuous


def test_every_choice_is_reported_as_strict_json():
    p = choose_params(dimension=1682, expected_clients=10_000, clip=1.0, gamma=1.0,
                      noise_variance=2 * 10_000 * 2.0)
    out = json.loads(json.dumps(p.to_json(), allow_nan=False))
    assert out["shares"] == 2 and out["sigma"] == 40 and out["gamma"] == 1.0
    assert out["modulus"] == 2 ** out["bits"] and out["bound"] == 10_000 + out["noise_tail"]
    assert out["bits"] == 1 + out["bound"].bit_length() and "Bernstein" in out["formula"]


def test_a_sum_too_wide_for_64_bits_is_refused():
    with pytest.raises(SecureSumError, match="lower gamma"):
        choose_params(dimension=1, expected_clients=10 ** 6, clip=1.0, gamma=2.0 ** 50)
    with pytest.raises(SecureSumError, match="norm"):
        choose_params(dimension=1, expected_clients=1, clip=1.0, gamma=1.0, norm="l1")
