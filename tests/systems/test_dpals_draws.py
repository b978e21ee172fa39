"""dpals' counter-based client draws (:mod:`dprec.systems.dpals.draws`): uniform, a pure
function of (key, user, item, coordinate), and the draws the statistics kernels round with."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import stats

from dprec.data.synthetic import synthetic
from dprec.systems.dpals.client import (
    GRAM,
    STATS,
    clip_users,
    gram_statistics,
    item_statistics,
    select_items,
)
from dprec.systems.dpals.draws import stream_key, uniforms
from dprec.systems.dpals.statistics import pack_gram, randomised_round


def test_the_draws_are_uniform_and_uncorrelated_across_coordinates_users_and_items():
    key = stream_key(7, STATS, 1)
    users = np.repeat(np.arange(200), 50)
    items = np.tile(np.arange(50), 200)
    u = uniforms(key, users, items, 8)
    assert u.min() >= 0 and u.max() < 1
    counts = np.histogram(u, bins=64, range=(0, 1))[0]
    assert stats.chisquare(counts).pvalue > 1e-4
    flat = u.ravel()
    assert abs(np.corrcoef(flat[:-1], flat[1:])[0, 1]) < 0.02
    assert abs(np.corrcoef(u[:-50].ravel(), u[50:].ravel())[0, 1]) < 0.02  # next user


def test_a_draw_depends_on_its_key_user_item_and_coordinate_only():
    key = stream_key(7, STATS, 1)
    a = uniforms(key, np.array([3, 9]), np.array([5, 5]), 4)
    np.testing.assert_array_equal(uniforms(key, np.array([9]), np.array([5]), 4)[0], a[1])
    np.testing.assert_array_equal(uniforms(key, np.array([3]), np.array([5]), 2)[0], a[0, :2])
    for other in (stream_key(8, STATS, 1), stream_key(7, STATS, 2), stream_key(7, GRAM, 1)):
        assert not np.array_equal(uniforms(other, np.array([3]), np.array([5]), 4)[0], a[0])
    assert not np.array_equal(uniforms(key, np.array([3]), np.array([6]), 4)[0], a[0])


def test_the_kernels_round_each_coordinate_with_its_own_draw():
    train = synthetic(40, 60, 1000, rng=2).binary()
    U = clip_users(np.random.default_rng(1).standard_normal((40, 3)), 1.0)
    ids = np.arange(100, 140)
    w = select_items(train, "uniform", 4, seed=5, ids=ids)
    gamma, beta, seed = 300.0, 2.0, 11
    coo = w.tocoo()
    vals = np.hstack([pack_gram(U), beta * U])[coo.row]
    u = uniforms(stream_key(seed, STATS, 3), ids[coo.row], coo.col, vals.shape[1])
    want = np.zeros((60, vals.shape[1]), np.int64)
    np.add.at(want, coo.col, randomised_round(gamma * coo.data[:, None] * vals, u))
    np.testing.assert_array_equal(item_statistics(U, w, gamma, seed, 3, beta, ids), want)
    g = uniforms(stream_key(seed, GRAM, 3), ids, np.zeros(40, np.int64), 6)
    np.testing.assert_array_equal(gram_statistics(U, gamma, seed, 3, ids),
                                  randomised_round(gamma * pack_gram(U), g).sum(axis=0))


def test_the_uniform_sample_keeps_the_items_of_smallest_draw():
    row = sp.csr_matrix(np.ones((1, 12)))
    key = uniforms(stream_key(4, "select", 0), np.full(12, 9), np.arange(12), 1)[:, 0]
    sel = select_items(row, "uniform", 5, seed=4, ids=np.array([9]))
    assert sorted(sel.indices.tolist()) == sorted(np.argsort(key)[:5].tolist())
