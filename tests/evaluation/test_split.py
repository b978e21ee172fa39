import numpy as np
import pytest

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.split import leave_one_out


def _toy() -> Dataset:
    # user 0: items 3 (t=5), 1 (t=9), 2 (t=9) -> latest = (9, item 2)
    # user 1: single interaction -> not evaluated
    # user 2: items 0 (t=1), 4 (t=2)
    users = np.array([0, 0, 0, 1, 2, 2])
    items = np.array([3, 1, 2, 0, 0, 4])
    ts = np.array([5, 9, 9, 3, 1, 2])
    return Dataset.from_triples("toy", users, items, timestamps=ts)


def test_latest_uses_largest_timestamp_then_item_id():
    s = leave_one_out(_toy(), "latest")
    assert s.test_items.tolist() == [2, -1, 4]
    assert s.train[0].indices.tolist() == [1, 3]
    assert s.train[1].indices.tolist() == [0]
    assert s.train.nnz == 6 - 2


def test_random_holds_out_one_training_item_per_user():
    ds = _toy()
    for seed in range(20):
        s = leave_one_out(ds, "random", np.random.default_rng(seed))
        for u in s.test_users:
            full = set(ds.matrix[u].indices)
            train = set(s.train[u].indices)
            assert s.test_items[u] in full and s.test_items[u] not in train
            assert train | {s.test_items[u]} == full


def test_random_split_is_seeded():
    ds = _toy()
    a = leave_one_out(ds, "random", np.random.default_rng(3)).test_items
    b = leave_one_out(ds, "random", np.random.default_rng(3)).test_items
    assert np.array_equal(a, b)


def test_latest_needs_timestamps_and_rule_is_checked():
    ds = Dataset.from_triples("nots", np.array([0, 0]), np.array([0, 1]))
    with pytest.raises(DprecError, match="timestamps"):
        leave_one_out(ds, "latest")
    with pytest.raises(DprecError, match="split rule"):
        leave_one_out(_toy(), "oldest")  # type: ignore[arg-type]


@pytest.mark.slow
def test_ml100k_last_second_ties_are_broken_by_item_id():
    """In ML-100K 415 of 943 users rated several items in their last second (issue #2)."""
    from dprec.data.registry import load_dataset

    try:
        ds = load_dataset("ml-100k")
    except Exception as e:  # noqa: BLE001 - no network and no cache
        pytest.skip(f"ML-100K unavailable: {e}")
    m, ts = ds.matrix, ds.timestamps
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    last = np.maximum.reduceat(ts, m.indptr[:-1])
    at_last = ts == last[rows]
    assert int((np.bincount(rows[at_last], minlength=m.shape[0]) > 1).sum()) == 415
    split = leave_one_out(ds, "latest")
    largest = np.maximum.reduceat(np.where(at_last, m.indices, -1), m.indptr[:-1])
    assert np.array_equal(split.test_items, largest)
