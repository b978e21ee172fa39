import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import assume, given, settings

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.split import UserFold, UserSplit


def _dataset(seed: int, n_users: int = 50, n_items: int = 30, n: int = 600) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset.from_triples(
        "rand", rng.integers(0, n_users, n), rng.integers(0, n_items, n),
        rng.integers(1, 6, n).astype(np.float32),
        all_user_ids=np.arange(n_users), all_item_ids=np.arange(n_items))


def _row_set(m, u: int) -> set[tuple[int, float]]:
    row = m[u]
    return set(zip(row.indices.tolist(), row.data.tolist(), strict=True))


def _test_set(fold: UserFold, u: int) -> set[tuple[int, float]]:
    sel = fold.test_users == u
    return set(zip(fold.test_items[sel].tolist(), fold.test_ratings[sel].tolist(),
                   strict=True))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), frac=st.floats(0.05, 0.95), n=st.integers(20, 400))
def test_user_split_protocol(seed: int, frac: float, n: int):
    ds = _dataset(seed, n=n)
    n_test = int(np.floor(frac * ds.n_users + 0.5))
    counts = np.diff(ds.matrix.indptr)
    assume(1 <= n_test <= ds.n_users - 1)
    drawn = _drawn(ds, n_test, seed)
    assume(np.any(counts[drawn] >= 2))
    [fold] = UserSplit(frac).folds(ds, np.random.default_rng(seed))
    # users: train and test partition all users; drawn test users = round(frac * n_users)
    tr, te = fold.train_users, fold.test_user_ids
    assert len(np.intersect1d(tr, te)) == 0
    assert np.array_equal(np.sort(np.concatenate([tr, te])), np.arange(ds.n_users))
    assert np.array_equal(te, np.sort(drawn[counts[drawn] >= 2]))
    assert fold.moved_to_train == int(np.sum(counts[drawn] < 2))
    assert fold.train.shape == ds.matrix.shape and fold.fine_tune.shape == ds.matrix.shape
    assert fold.train.has_canonical_format and fold.train.dtype == np.float32
    assert set(np.unique(fold.test_users).tolist()) == set(te.tolist())
    for u in tr.tolist():
        assert _row_set(fold.train, u) == _row_set(ds.matrix, u)
        assert fold.fine_tune[u].nnz == 0
    for u in te.tolist():
        full, fine, test = _row_set(ds.matrix, u), _row_set(fold.fine_tune, u), _test_set(fold, u)
        assert len(fine) == counts[u] // 2 and len(test) == counts[u] - counts[u] // 2
        assert fine | test == full and not fine & test
        assert _row_set(fold.train, u) == fine  # the fine-tune half is trained on, nothing else
    assert fold.train.nnz + len(fold.test_ratings) == ds.n_interactions


def test_same_seed_same_fold_and_different_seed_different_fold():
    ds = _dataset(0)
    split = UserSplit(0.3)

    def fold(seed: int) -> tuple[list[int], list[int], list[int]]:
        [f] = split.folds(ds, np.random.default_rng(seed))
        return f.test_user_ids.tolist(), f.test_items.tolist(), f.fine_tune.indices.tolist()

    assert fold(5) == fold(5)
    assert fold(5) != fold(6)


def test_halves_are_drawn_at_random():
    """Every rating of a test user is in the fine-tune half with probability 1/2."""
    ds = Dataset.from_triples("four", np.array([0, 0, 0, 0, 1, 1]),
                              np.array([0, 1, 2, 3, 0, 1]), np.arange(1.0, 7.0))
    runs = 800
    fine = np.zeros(4)
    test_user_0 = 0
    for seed in range(runs):
        [f] = UserSplit(0.5).folds(ds, np.random.default_rng(seed))
        if 0 in f.test_user_ids:
            test_user_0 += 1
            fine[f.fine_tune[0].indices] += 1
    assert abs(test_user_0 - runs / 2) < 5 * np.sqrt(runs / 4)
    p = fine / test_user_0
    assert np.all(np.abs(p - 0.5) < 5 * np.sqrt(0.25 / test_user_0)), p


def test_users_with_fewer_than_two_ratings_go_to_train():
    # users 0..7 have one rating each, users 8 and 9 have three
    users = np.concatenate([np.arange(8), [8, 8, 8, 9, 9, 9]])
    items = np.concatenate([np.zeros(8, int), [0, 1, 2, 0, 1, 2]])
    ds = Dataset.from_triples("sparse", users, items, np.full(14, 3.0))
    moved_any = False
    for seed in range(20):
        if not np.isin(_drawn(ds, 5, seed), [8, 9]).any():
            with pytest.raises(DprecError, match="no test user"):
                UserSplit(0.5).folds(ds, np.random.default_rng(seed))
            continue
        [f] = UserSplit(0.5).folds(ds, np.random.default_rng(seed))
        assert set(f.test_user_ids.tolist()) <= {8, 9}
        assert len(f.test_user_ids) + f.moved_to_train == 5
        d = f.describe()
        assert d["kind"] == "user" and d["moved_to_train"] == f.moved_to_train
        assert "fewer than 2 ratings" in d["moved_to_train_rule"]
        moved_any |= f.moved_to_train > 0
    assert moved_any


def _drawn(ds: Dataset, n_test: int, seed: int) -> np.ndarray:
    """The users drawn for the test side: the first n_test of the seed's user permutation."""
    return np.random.default_rng(seed).permutation(ds.n_users)[:n_test]


def test_no_eligible_test_user_is_an_error():
    ds = Dataset.from_triples("singles", np.arange(5), np.arange(5), np.full(5, 4.0))
    with pytest.raises(DprecError, match="no test user .* 2 or more ratings"):
        UserSplit(0.4).folds(ds, np.random.default_rng(0))


def test_too_few_users_for_the_fraction_is_an_error():
    ds = Dataset.from_triples("two", np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]),
                              np.full(4, 2.0))
    with pytest.raises(DprecError, match=r"test_fraction=0\.1 of 2 users gives 0 test users"):
        UserSplit(0.1).folds(ds, np.random.default_rng(0))


@pytest.mark.parametrize("frac", [0, 1, 0.0, 1.0, -0.2, 1.5, float("nan"), True, "0.2"])
def test_test_fraction_is_validated(frac):
    with pytest.raises(DprecError, match=r"test_fraction must be in \(0, 1\)"):
        UserSplit(frac)  # type: ignore[arg-type]


def test_describe():
    d = UserSplit(0.25).describe()
    assert d["kind"] == UserSplit.kind == "user" and d["test_fraction"] == 0.25
    assert d["min_test_user_ratings"] == 2
