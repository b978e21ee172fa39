"""Shape statistics: Gini, top-1% share, the cold tail and drift (known answers)."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.dataset import Dataset
from dprec.data.stats import _latest, dataset_stats, drift_stats, gini
from dprec.data.synthetic import synthetic
from dprec.evaluation.split import leave_one_out


def test_gini_known_answers():
    assert gini(np.ones(5)) == pytest.approx(0.0)
    assert gini(np.array([0, 0, 0, 1])) == pytest.approx(0.75)
    assert gini(np.array([1, 3])) == pytest.approx(0.25)
    assert gini(np.zeros(3)) == 0.0


def test_counts_known_answers():
    # 3 users; item 0 has 3 users, items 1, 2 one each, item 3 none
    ds = Dataset.from_triples("t", np.array([0, 0, 1, 1, 2]), np.array([0, 1, 0, 2, 0]),
                              all_item_ids=np.arange(4))
    s = dataset_stats(ds)
    assert s["items_under_10"] == 1.0
    assert s["top1pct_share"] == pytest.approx(3 / 5)
    assert s["popularity_gini"] == pytest.approx(gini(np.array([3, 1, 1, 0])))
    assert s["user_max"] == 2 and s["item_max"] == 3


def test_drift_uses_the_latest_rule_and_sees_popular_latest_items():
    """Every user's latest item is item 0, which all other users touched just before:
    the held-out item is more popular then than the user's others (lift > 1, AUC 1); the
    latest item agrees with leave_one_out's."""
    u = np.arange(20)
    users = np.concatenate([u, u, u])
    items = np.concatenate([1 + u % 5, 6 + u % 7, np.zeros(20, int)])
    times = np.concatenate([1000 * u, 1000 * u + 1, 100_000 + u])
    ds = Dataset.from_triples("d", users, items, np.ones(60), times)
    d = drift_stats(ds, window=0.5)
    assert d["drift_auc"] > 0.7 and d["drift_lift"] > 1.5 and d["newer_auc"] == 1.0
    split = leave_one_out(ds, "latest")
    assert np.all(split.test_items == 0)


def test_no_drift_when_time_order_is_random():
    """The original generator hands out time slots in random order: AUCs near one half."""
    d = drift_stats(synthetic(600, 300, 24_000, rng=2))
    assert abs(d["drift_auc"] - 0.5) < 0.03 and abs(d["newer_auc"] - 0.5) < 0.03


def test_latest_follows_the_split_rule_with_ties():
    """Ties in the last second go to the larger item id, as leave_one_out's rule says."""
    rng = np.random.default_rng(1)
    users = np.repeat(np.arange(50), 6)
    items = np.concatenate([rng.permutation(20)[:6] for _ in range(50)])
    times = rng.integers(0, 3, len(users))  # many ties
    ds = Dataset.from_triples("ties", users, items, np.ones(len(users)), times)
    split = leave_one_out(ds, "latest")
    latest = _latest(ds.matrix, ds.timestamps)
    np.testing.assert_array_equal(ds.matrix.indices[latest], split.test_items)
