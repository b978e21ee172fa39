"""The secure sum equals the plain integer sum of the quantised vectors, bit for bit
(issue 23 §1), including sums at the edge of the no-wrap bound."""

from __future__ import annotations

import numpy as np
import pytest
from secure_sum_helpers import deploy, run_round

from dprec.protocol.secure_sum import choose_params
from dprec.protocol.secure_sum.ring import centred


@pytest.mark.parametrize("n,d,gamma,clip,norm", [
    (2, 1, 1.0, 1.0, "linf"),          # b = 3
    (7, 17, 100.0, 0.5, "l2"),         # b = 10
    (25, 300, 2.0 ** 20, 3.0, "linf"),  # b = 28
    (3, 40, 2.0 ** 40, 2.0, "linf"),   # b = 44: 6-byte elements
])
def test_secure_sum_equals_the_plain_sum_of_the_quantised_vectors(n, d, gamma, clip, norm):
    dep = deploy(choose_params(dimension=d, expected_clients=n, clip=clip, gamma=gamma,
                               norm=norm))
    rng = np.random.default_rng(n * d)
    vectors = [dep.client.prepare(x, rng) for x in rng.normal(0, clip, (n, d))]
    result = run_round(dep, vectors)
    assert result.integer_sum.dtype == np.int64 and result.contributors == n
    np.testing.assert_array_equal(result.integer_sum, np.sum(vectors, axis=0))
    np.testing.assert_array_equal(result.estimate, np.sum(vectors, axis=0) / gamma)


def test_sums_at_the_wrap_bound_come_back_exactly():
    # n = 3 clients at +-ceil(gamma c) = +-5: |sum| <= 15 = q/2 - 1 with b = 5 (q = 32)
    params = choose_params(dimension=4, expected_clients=3, clip=1.0, gamma=5.0)
    assert (params.bits, params.bound) == (5, 15) and params.bound == params.modulus // 2 - 1
    dep = deploy(params)
    rng = np.random.default_rng(0)
    xs = np.array([[1.0, -1.0, 1.0, 0.2]] * 3)  # coordinate 2 of one client flips below
    xs[0, 2] = -1.0
    vectors = [dep.client.prepare(x, rng) for x in xs]
    result = run_round(dep, vectors)
    assert result.integer_sum[:3].tolist() == [15, -15, 5]
    np.testing.assert_array_equal(result.integer_sum, np.sum(vectors, axis=0))


def test_noise_shares_are_added_before_the_split():
    params = choose_params(dimension=30, expected_clients=10, clip=1.0, gamma=8.0,
                           noise_variance=10 * 2 * 4.0)
    dep = deploy(params)
    rng = np.random.default_rng(3)

    def skellam(d, g):
        return g.poisson(4.0, d) - g.poisson(4.0, d)

    # x = 0 quantises to 0 exactly, so each v is its noise share alone
    vectors = [dep.client.prepare(x, rng, skellam) for x in np.zeros((10, 30))]
    assert np.count_nonzero(vectors) > 100
    np.testing.assert_array_equal(run_round(dep, vectors).integer_sum, np.sum(vectors, axis=0))


def test_the_centred_lift_is_the_representative_in_the_half_open_interval():
    q = 32
    got = centred(np.array([0, 1, 15, 16, 17, 31, 32 + 3], dtype=np.uint64), 5)
    assert got.tolist() == [0, 1, 15, 16, -15, -1, 3]
    wide = centred(np.array([2 ** 62 + 1, 2 ** 63 - 1], dtype=np.uint64), 63)
    assert wide.tolist() == [-(2 ** 62) + 1, -1]
    assert q // 2 == 16
