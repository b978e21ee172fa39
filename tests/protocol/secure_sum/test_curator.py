"""The trusted curator of aggregation=trusted (:mod:`dprec.protocol.secure_sum.curator`),
written once for dp-pop, dpals and dp-fedavg: one ``Sk(mu)`` draw per release added to the
exact sum, from its own generator (the CSPRNG itself when deployed, else seeded from the
run's generator at the server's start)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.protocol.secure_sum.curator import Curator
from dprec.random import is_secure, secure_generator


@dataclass(frozen=True)
class _Release:
    offset: int
    dimension: int
    mu: float


def test_one_release_adds_skellam_noise_of_variance_two_mu():
    curator = Curator(6.0)
    curator.start(np.random.default_rng(0))
    exact = np.arange(20_000, dtype=np.int64)
    noise = curator.noisy(exact, 0) - exact
    assert noise.dtype == np.int64 and abs(noise.mean()) < 0.1
    assert noise.var() == pytest.approx(12.0, rel=0.05)


def test_each_release_gets_its_own_mu_in_order():
    releases = (_Release(0, 20_000, 2.0), _Release(20_000, 10_000, 50.0))
    curator = Curator(releases=lambda r: releases)
    curator.start(np.random.default_rng(1))
    noise = curator.noisy(np.zeros(30_000, np.int64), 3)
    assert noise[:20_000].var() == pytest.approx(4.0, rel=0.05)
    assert noise[20_000:].var() == pytest.approx(100.0, rel=0.05)


def test_releases_that_do_not_tile_the_vector_are_refused():
    for releases in ((_Release(0, 5, 1.0),), (_Release(2, 8, 1.0),)):
        curator = Curator(releases=lambda r, rel=releases: rel)
        curator.start(np.random.default_rng(0))
        with pytest.raises(DprecError, match="releases"):
            curator.noisy(np.zeros(10, np.int64), 0)


def test_a_simulated_curator_is_reproducible_and_draws_one_seed_from_the_run():
    a, b = Curator(3.0), Curator(3.0)
    run_a, run_b = np.random.default_rng(7), np.random.default_rng(7)
    a.start(run_a)
    b.start(run_b)
    assert not is_secure(a.rng)
    np.testing.assert_array_equal(a.noisy(np.zeros(50, np.int64), 0),
                                  b.noisy(np.zeros(50, np.int64), 0))
    after_one = np.random.default_rng(7)
    after_one.integers(2 ** 63)
    assert run_a.integers(2 ** 63) == after_one.integers(2 ** 63)


def test_a_deployed_curator_keeps_drawing_from_the_csprng():
    rng = secure_generator()
    curator = Curator(3.0)
    curator.start(rng)
    assert curator.rng is rng


def test_a_curator_needs_a_start_and_one_kind_of_release():
    with pytest.raises(DprecError, match="start"):
        Curator(1.0).noisy(np.zeros(3, np.int64), 0)
    with pytest.raises(DprecError, match="mu or releases"):
        Curator()
    with pytest.raises(DprecError, match="mu or releases"):
        Curator(1.0, releases=lambda r: ())
