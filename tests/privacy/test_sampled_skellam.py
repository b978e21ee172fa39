"""Poisson-subsampled Skellam releases (Zhu & Wang ICML 2019 Thm 6 on the AKL21 curve): golden
numbers by hand, composition, and never below the exact subsampled Gaussian."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.sampled_skellam import (
    SampledSkellamAccountant,
    sampled_epsilon,
    sampled_skellam_rdp,
)
from dprec.privacy.skellam import SkellamDpEvent, skellam_epsilon, skellam_rdp


def test_sampled_rdp_golden_numbers():
    """Zhu & Wang (ICML 2019) Thm 6 on the AKL21 Skellam curve: mu 50, Delta_1 12,
    Delta_2 4, q 0.1 (alpha 2 by hand: eps(2) = 0.16 + 0.003, log(0.9 * 1.1 + 0.01 e^0.163))."""
    e = SkellamDpEvent(50.0, 12.0, 4.0)
    got = sampled_skellam_rdp(e, 0.1, [2, 3, 8, 32])
    np.testing.assert_allclose(got, [0.0017688016445183107, 0.004313936661424166,
                                     0.025248156792220595, 0.31967568480387676], rtol=1e-12)
    assert math.isclose(got[0], math.log(0.9 * 1.1 + 0.01 * math.exp(0.163)), rel_tol=1e-12)
    # alpha = 3, written out: (1-q)^2 (2q + 1) + 3 q^2 (1-q) e^eps(2) + 3 q^3 e^(2 eps(3))
    q, (e2, e3) = 0.1, skellam_rdp(e, [2, 3])
    three = math.log((1 - q) ** 2 * (2 * q + 1) + 3 * q * q * (1 - q) * math.exp(e2)
                     + 3 * q ** 3 * math.exp(2 * e3)) / 2
    assert math.isclose(got[1], three, rel_tol=1e-12)


def test_rounds_compose_with_sampling_golden_numbers():
    e = SkellamDpEvent(50.0, 12.0, 4.0)
    sampled = dp_accounting.PoissonSampledDpEvent(0.1, e)
    assert math.isclose(sampled_epsilon(sampled, 10, 1e-6), 1.1823330375555194, rel_tol=1e-9)
    # q = 1: no amplification, the plain Skellam composition of dprec.privacy.skellam
    assert math.isclose(sampled_epsilon(e, 10, 1e-6), skellam_epsilon(e, 1e-6, 10),
                        rel_tol=1e-12)
    assert math.isclose(sampled_epsilon(e, 10, 1e-6), 6.882374610068334, rel_tol=1e-9)
    # ten rounds in one record or as ten records of the log: the same composition
    acc = SampledSkellamAccountant()
    assert math.isclose(acc.compose([(sampled, 1)] * 10, 1e-6).epsilon,
                        sampled_epsilon(sampled, 10, 1e-6), rel_tol=1e-12)


def test_sampled_bound_is_never_below_the_exact_subsampled_gaussian():
    """At large mu the Skellam release is a Gaussian one of the same variance; the general
    bound must then sit at or above dp-accounting's tight subsampled-Gaussian RDP."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    for q, z in ((0.05, 2.0), (0.3, 5.0), (1.0, 8.0)):
        mu = 1e9
        l2 = math.sqrt(2 * mu) / z
        event = SkellamDpEvent(mu, 10 * l2, l2)
        ours = sampled_epsilon(dp_accounting.PoissonSampledDpEvent(q, event) if q < 1
                               else event, 20, 1e-6)
        acc = rdp.RdpAccountant(neighboring_relation=(
            dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE))
        gauss = dp_accounting.GaussianDpEvent(z)
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, gauss) if q < 1 else gauss, 20)
        assert ours >= acc.get_epsilon(1e-6) * (1 - 1e-6)


def test_accountant_refuses_what_it_cannot_bound():
    with pytest.raises(DprecError, match="zero-out or add/remove"):
        SampledSkellamAccountant(Adjacency.REPLACE_ONE)
    acc = SampledSkellamAccountant()
    with pytest.raises(DprecError, match="supports"):
        acc.compose([(dp_accounting.PoissonSampledDpEvent(
            0.1, dp_accounting.LaplaceDpEvent(1.0)), 1)], 1e-6)


def test_gaussian_reference_sits_below_the_bound_and_matches_dp_accounting():
    """The reference of the report's looseness factor: a tight PLD of the subsampled Gaussian
    of the same variance; at large mu it is below the sound Skellam bound, by a factor > 1."""
    from dprec.privacy.sampled_skellam import gaussian_reference_epsilon
    mu = 1e9
    l2 = math.sqrt(2 * mu) / 1.0  # noise multiplier 1
    event = SkellamDpEvent(mu, 10 * l2, l2)
    ref = gaussian_reference_epsilon(event, 0.2, 10, 1e-6)
    assert math.isclose(ref, 5.857, rel_tol=2e-3)  # dp-accounting 0.6.0's PLD, by hand above
    bound = sampled_epsilon(dp_accounting.PoissonSampledDpEvent(0.2, event), 10, 1e-6)
    assert bound > ref
    with pytest.raises(DprecError, match="rate"):
        gaussian_reference_epsilon(event, 0.0, 10, 1e-6)
