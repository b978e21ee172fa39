import time

import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.split import KFoldSplit, RatingFold


def _random_dataset(seed: int, n_users: int = 30, n_items: int = 20,
                    n: int = 200) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset.from_triples(
        "rand", rng.integers(0, n_users, n), rng.integers(0, n_items, n),
        rng.integers(1, 6, n).astype(np.float32))


def _keys(users: np.ndarray, items: np.ndarray, n_items: int) -> np.ndarray:
    return users.astype(np.int64) * n_items + items.astype(np.int64)


def _train_triples(fold: RatingFold) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = fold.train
    users = np.repeat(np.arange(t.shape[0]), np.diff(t.indptr))
    return users, t.indices, t.data


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 12), n=st.integers(1, 150))
def test_folds_partition_the_ratings(seed: int, k: int, n: int):
    ds = _random_dataset(seed, n=n)
    assume(k <= ds.n_interactions)
    folds = KFoldSplit(k).folds(ds, np.random.default_rng(seed))
    assert [f.index for f in folds] == list(range(k))
    u, i, r = ds.triples()
    all_keys = _keys(u, i, ds.n_items)
    rating_of = dict(zip(all_keys.tolist(), r.tolist(), strict=True))
    test_keys = []
    for f in folds:
        assert f.train.shape == ds.matrix.shape
        assert f.train.dtype == np.float32 and f.test_ratings.dtype == np.float32
        assert f.test_users.dtype == np.int64 and f.test_items.dtype == np.int64
        assert f.train.has_canonical_format
        tu, ti, tr = _train_triples(f)
        train_k = _keys(tu, ti, ds.n_items)
        test_k = _keys(f.test_users, f.test_items, ds.n_items)
        assert len(np.intersect1d(train_k, test_k)) == 0
        assert np.array_equal(np.sort(np.concatenate([train_k, test_k])), np.sort(all_keys))
        # ratings travel with their (user, item)
        assert [rating_of[x] for x in train_k.tolist()] == tr.tolist()
        assert [rating_of[x] for x in test_k.tolist()] == f.test_ratings.tolist()
        test_keys.append(test_k)
    joined = np.concatenate(test_keys)
    assert len(joined) == len(all_keys)
    assert np.array_equal(np.sort(joined), np.sort(all_keys))
    sizes = [len(t) for t in test_keys]
    assert max(sizes) - min(sizes) <= 1


def test_same_seed_same_folds_and_different_seed_different_folds():
    ds = _random_dataset(0)
    split = KFoldSplit(5)

    def assignment(seed: int) -> list[list[int]]:
        return [_keys(f.test_users, f.test_items, ds.n_items).tolist()
                for f in split.folds(ds, np.random.default_rng(seed))]

    assert assignment(7) == assignment(7)
    assert assignment(7) != assignment(8)


def test_fold_assignment_is_uniform_over_seeds():
    """Each rating lands in each of the k folds with probability 1/k."""
    ds = _random_dataset(1, n=40)
    k, runs = 4, 400
    hits = np.zeros((ds.n_interactions, k))
    all_keys = _keys(*ds.triples()[:2], ds.n_items)
    for seed in range(runs):
        for f in KFoldSplit(k).folds(ds, np.random.default_rng(seed)):
            pos = np.searchsorted(all_keys, _keys(f.test_users, f.test_items, ds.n_items))
            hits[pos, f.index] += 1
    # binomial(400, 1/4): sd ~ 8.7; 5 sd bounds
    assert np.all(np.abs(hits - runs / k) < 5 * np.sqrt(runs * 0.25 * 0.75))


def test_users_rated_only_in_a_test_fold_keep_the_dataset_shape():
    ds = Dataset.from_triples("tiny", np.array([0, 1, 2]), np.array([0, 1, 2]),
                              np.array([1.0, 2.0, 3.0]))
    folds = KFoldSplit(3).folds(ds, np.random.default_rng(0))
    assert [len(f.test_ratings) for f in folds] == [1, 1, 1]
    for f in folds:
        assert f.train.shape == (3, 3) and f.train.nnz == 2
        assert f.describe() == {"kind": "k-fold", "fold": f.index, "n_train": 2, "n_test": 1}


@pytest.mark.parametrize("k", [1, 0, -3, 2.5, True, "5"])
def test_k_is_validated(k):
    with pytest.raises(DprecError, match="k .*must be an integer >= 2"):
        KFoldSplit(k)  # type: ignore[arg-type]


def test_k_larger_than_the_ratings_is_refused():
    ds = Dataset.from_triples("tiny", np.array([0, 1]), np.array([0, 1]), np.array([1.0, 2.0]))
    assert len(KFoldSplit(2).folds(ds, np.random.default_rng(0))) == 2
    with pytest.raises(DprecError, match=r"k .*<= the number of ratings \(2 in 'tiny'\), got 3"):
        KFoldSplit(3).folds(ds, np.random.default_rng(0))


def test_describe():
    d = KFoldSplit(4).describe()
    assert d["kind"] == KFoldSplit.kind == "k-fold" and d["k"] == 4


@pytest.mark.slow
def test_ml1m_sized_split_is_fast():
    """1M ratings, 5 folds: vectorised, no Python loop per rating."""
    rng = np.random.default_rng(0)
    n_users, n_items, n = 6040, 3706, 1_000_209
    counts = rng.multinomial(n, np.full(n_users, 1 / n_users))
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = np.concatenate([np.sort(rng.choice(n_items, c, replace=False)) for c in counts])
    m = sp.csr_matrix((rng.integers(1, 6, n).astype(np.float32), indices, indptr),
                      shape=(n_users, n_items))
    ds = Dataset("ml-1m-like", m)
    start = time.perf_counter()
    folds = KFoldSplit(5).folds(ds, np.random.default_rng(0))
    elapsed = time.perf_counter() - start
    assert sum(len(f.test_ratings) for f in folds) == n
    assert elapsed < 5.0, f"5-fold split of 1M ratings took {elapsed:.1f} s"
