"""Filters: min_interactions (one pass / iterated), binarise, cap_per_user."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.data.dataset import Dataset
from dprec.data.filters import binarise, cap_per_user, min_interactions
from dprec.errors import DprecError


def make(pairs, ratings=None) -> Dataset:
    """Raw ids: users 100+u, items 500+i; timestamp encodes the (raw user, raw item) pair."""
    u = np.array([p[0] for p in pairs]) + 100
    i = np.array([p[1] for p in pairs]) + 500
    ts = u * 10_000 + i
    uf = pd.DataFrame({"age": np.unique(u) % 7}, index=np.unique(u))
    itf = pd.DataFrame({"genres": [f"g{x}" for x in np.unique(i)]}, index=np.unique(i))
    return Dataset.from_triples("t", u, i, ratings, ts, user_features=uf, item_features=itf)


def assert_consistent(ds: Dataset) -> None:
    """Timestamps, ids and features still describe the same raw interactions."""
    users, items, _ = ds.triples()
    np.testing.assert_array_equal(ds.timestamps,
                                  ds.user_ids[users] * 10_000 + ds.item_ids[items])
    np.testing.assert_array_equal(ds.user_features.index, ds.user_ids)
    np.testing.assert_array_equal(ds.item_features.index, ds.item_ids)
    assert ds.matrix.has_sorted_indices


# users 0..3, items 0..3: one pass keeps user 3 (2 items) whose item 3 is then dropped
PAIRS = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1),
         (3, 2), (3, 3), (4, 3)]


def test_one_pass_vs_iterated():
    ds = make(PAIRS)
    one = min_interactions(ds, min_user=2, min_item=2)
    assert one.history == ("min_interactions(user>=2,item>=2,one-pass)",)
    # user 4 (1 item) goes; then item 3 has 1 user left and goes; user 3 keeps 1 item
    assert list(one.user_ids) == [100, 101, 102, 103]
    assert list(one.item_ids) == [500, 501, 502]
    assert np.diff(one.matrix.indptr).tolist() == [3, 3, 2, 1]
    assert_consistent(one)
    it = min_interactions(ds, 2, 2, iterate=True)
    assert it.history == ("min_interactions(user>=2,item>=2,iterated)",)
    assert list(it.user_ids) == [100, 101, 102]
    assert np.diff(it.matrix.indptr).min() >= 2
    assert np.bincount(it.matrix.indices).min() >= 2
    assert_consistent(it)


def naive_core(pairs, mu, mi):
    pairs = set(pairs)
    while True:
        uc, ic = {}, {}
        for u, _ in pairs:
            uc[u] = uc.get(u, 0) + 1
        new = {(u, i) for u, i in pairs if uc[u] >= mu}
        for _, i in new:
            ic[i] = ic.get(i, 0) + 1
        new = {(u, i) for u, i in new if ic[i] >= mi}
        if new == pairs:
            return pairs
        pairs = new


@settings(max_examples=40, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 12), st.integers(0, 9)), min_size=1, max_size=80),
       st.integers(0, 4), st.integers(0, 4))
def test_iterated_is_the_core(pairs, mu, mi):
    ds = make(sorted(pairs))
    out = min_interactions(ds, mu, mi, iterate=True)
    users, items, _ = out.triples()
    got = {(int(out.user_ids[u]) - 100, int(out.item_ids[i]) - 500)
           for u, i in zip(users, items, strict=True)}
    assert got == naive_core(pairs, mu, mi)
    if out.n_interactions:
        assert_consistent(out)


def test_binarise():
    ds = make(PAIRS, ratings=np.arange(1, len(PAIRS) + 1) % 5 + 1)
    b = binarise(ds, 3)
    assert b.history == ("binarise(rating>3)",)
    assert b.n_interactions == int((ds.matrix.data > 3).sum())
    assert np.all(b.matrix.data == 1.0)
    assert b.matrix.shape == ds.matrix.shape
    assert_consistent(b)
    assert np.all(ds.matrix.data >= 1)  # the input is untouched
    a = binarise(ds)
    assert a.n_interactions == ds.n_interactions and np.all(a.matrix.data == 1)
    assert a.history == ("binarise(all)",)
    with pytest.raises(DprecError, match="threshold must be a finite number"):
        binarise(ds, float("nan"))


def test_cap_per_user():
    rng = np.random.default_rng(0)
    pairs = [(u, i) for u in range(30) for i in range(u % 15 + 1)]
    ds = make(pairs)
    capped = cap_per_user(ds, 5, np.random.default_rng(1))
    counts = np.diff(capped.matrix.indptr)
    np.testing.assert_array_equal(counts, np.minimum(np.diff(ds.matrix.indptr), 5))
    assert capped.history == ("cap_per_user(5)",)
    assert_consistent(capped)
    again = cap_per_user(ds, 5, np.random.default_rng(1))
    assert (again.matrix != capped.matrix).nnz == 0
    # a uniform subset: each of a 15-item user's items kept with probability 1/3
    one = make([(0, i) for i in range(15)])
    kept = np.zeros(15)
    for _ in range(600):
        kept[cap_per_user(one, 5, rng).matrix.indices] += 1
    assert np.all(np.abs(kept / 600 - 1 / 3) < 0.08)
    with pytest.raises(DprecError, match="max_items must be an integer >= 1, got 0"):
        cap_per_user(ds, 0, rng)


def test_bad_thresholds():
    with pytest.raises(DprecError, match="min_user must be an integer >= 0, got -1"):
        min_interactions(make(PAIRS), -1)
