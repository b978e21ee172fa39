"""The synthetic generator: exact size, no duplicates, long tail, low-rank signal."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DataError


@pytest.fixture(scope="module")
def ds():
    return synthetic(1000, 500, 40_000, rng=3)


def test_size_and_canonical_form(ds):
    assert ds.name == "synthetic-1000x500"
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (1000, 500, 40_000)
    m = ds.matrix
    rows = np.split(m.indices, m.indptr[1:-1])
    assert all(np.all(np.diff(r) > 0) for r in rows)  # sorted, no duplicate (user, item)
    counts = np.diff(m.indptr)
    assert counts.min() >= 20 and counts.max() <= 250
    assert np.median(counts) < counts.mean()  # heavy right tail
    assert counts.max() > 3 * np.median(counts)


def test_seeded_determinism():
    a = synthetic(300, 200, 9000, rng=7)
    b = synthetic(300, 200, 9000, rng=np.random.default_rng(7), n_threads=1)
    c = synthetic(300, 200, 9000, rng=8)
    assert (a.matrix != b.matrix).nnz == 0
    np.testing.assert_array_equal(a.timestamps, b.timestamps)
    assert (a.matrix != c.matrix).nnz > 0


def test_threads_do_not_change_the_result():
    kw = {"rng": 11, "batch_elements": 20_000}
    a = synthetic(400, 100, 10_000, n_threads=1, **kw)
    b = synthetic(400, 100, 10_000, n_threads=2, **kw)
    assert (a.matrix != b.matrix).nnz == 0
    np.testing.assert_array_equal(a.timestamps, b.timestamps)


def test_popularity_long_tail(ds):
    pop = np.sort(np.bincount(ds.matrix.indices, minlength=ds.n_items))[::-1]
    assert pop[: ds.n_items // 10].sum() > 0.4 * pop.sum()
    flat = synthetic(1000, 500, 40_000, rng=3, popularity_exponent=0.0, affinity_scale=0.0)
    fpop = np.sort(np.bincount(flat.matrix.indices, minlength=500))[::-1]
    assert fpop[:50].sum() < 0.15 * fpop.sum()  # no popularity, no preference: near uniform


def test_ratings_and_timestamps(ds):
    r = ds.matrix.data
    assert set(np.unique(r)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert 3.0 < r.mean() < 4.2
    ts = ds.timestamps
    assert ts.dtype == np.int64 and ts.min() >= 946_684_800
    order = np.lexsort((ts, np.repeat(np.arange(ds.n_users), np.diff(ds.matrix.indptr))))
    users = np.repeat(np.arange(ds.n_users), np.diff(ds.matrix.indptr))[order]
    same = users[1:] == users[:-1]
    assert np.all(np.diff(ts[order])[same] > 0)  # distinct, strictly increasing per user
    # time order is not item order
    first = ds.matrix.indices[ds.matrix.indptr[:-1]]
    earliest = np.array([ds.matrix.indices[s + np.argmin(ts[s:e])]
                         for s, e in zip(ds.matrix.indptr[:-1], ds.matrix.indptr[1:],
                                         strict=True)])
    assert np.mean(first == earliest) < 0.5


def _hit_rates(ds, rng):
    """Hold out one item per user; HR@10 of item-kNN (cosine) and popularity."""
    m = ds.binary().tocsr()
    n_users = m.shape[0]
    counts = np.diff(m.indptr)
    held = m.indptr[:-1] + rng.integers(0, counts)
    test_items = m.indices[held]
    keep = np.ones(m.nnz, bool)
    keep[held] = False
    train = sp.csr_matrix((m.data[keep], m.indices[keep],
                           np.concatenate([[0], np.cumsum(counts - 1)])), shape=m.shape)
    norms = np.sqrt(np.asarray(train.sum(axis=0)).ravel()) + 1e-9
    sim = (train.T @ train).toarray() / np.outer(norms, norms)
    np.fill_diagonal(sim, 0.0)
    knn = np.asarray(train @ sim)
    pop = np.broadcast_to(np.asarray(train.sum(axis=0), dtype=float), knn.shape).copy()
    seen = train.toarray() > 0
    rates = []
    for scores in (knn, pop):
        scores = np.where(seen, -np.inf, scores)
        target = scores[np.arange(n_users), test_items]
        rank = (scores > target[:, None]).sum(axis=1)
        rates.append(float(np.mean(rank < 10)))
    return rates


def test_low_rank_signal(ds):
    knn, pop = _hit_rates(ds, np.random.default_rng(0))
    assert knn > pop + 0.05
    no_signal = synthetic(1000, 500, 40_000, rng=3, affinity_scale=0.0)
    knn0, pop0 = _hit_rates(no_signal, np.random.default_rng(0))
    assert knn0 < pop0 + 0.03  # without preferences co-occurrence adds nothing


def test_invalid_sizes():
    with pytest.raises(DataError, match="n_interactions must be between"):
        synthetic(100, 50, 100, rng=0)
    with pytest.raises(DataError, match="n_interactions must be between"):
        synthetic(100, 50, 100 * 50, rng=0)
    with pytest.raises(DataError, match="n_users must be an integer >= 1, got 0"):
        synthetic(0, 50, 100, rng=0)
    with pytest.raises(DataError, match="min_user_interactions must be <= n_items"):
        synthetic(10, 5, 50, rng=0)
