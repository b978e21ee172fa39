"""The generator with a cold tail and drift in time (synth-*), its oracle, and the original
generator kept bit for bit under synthetic-* (issue 33 §2)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.data.registry import dataset_truth, load_dataset
from dprec.data.stats import dataset_stats
from dprec.data.synthetic import factor_side_features, synthetic, synthetic_truth
from dprec.data.synthetic_drift import (
    DriftParams,
    drift_default_interactions,
    synthetic_drift,
    synthetic_drift_truth,
)
from dprec.errors import DataError
from dprec.evaluation.split import leave_one_out


@pytest.fixture(scope="module")
def new():
    return load_dataset("synth-943x1682")


@pytest.fixture(scope="module")
def old():
    return load_dataset("synthetic-943x1682")


def test_the_original_generator_is_unchanged():
    """The content of synthetic-* before the new generator came (commit befc2cd)."""
    assert load_dataset("synthetic-300x200").content_sha256() == (
        "3d7efdfd134f694e8c92fce808c1a744edb3fd283d50b55df9be733757bd3aa5")


def test_size_canonical_form_and_distinct_times(new):
    assert new.name == "synth-943x1682"
    assert (new.n_users, new.n_items, new.n_interactions) == (943, 1682, 99_926)
    m = new.matrix
    rows = np.repeat(np.arange(new.n_users), np.diff(m.indptr))
    assert np.all(np.diff(m.indices)[rows[1:] == rows[:-1]] > 0)  # sorted, no duplicates
    assert np.diff(m.indptr).min() >= 20
    assert set(np.unique(m.data)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    order = np.lexsort((new.timestamps, rows))
    same = rows[order][1:] == rows[order][:-1]
    assert np.all(np.diff(new.timestamps[order])[same] > 0)  # distinct within a user


def test_cold_tail_at_ml100k_size(new, old):
    """ML-100K: 31.5% of items have fewer than 10 users; the original generator ~7%."""
    assert 0.20 <= dataset_stats(new)["items_under_10"] <= 0.45
    assert dataset_stats(old)["items_under_10"] < 0.10


def test_popularity_shape_near_ml100k(new):
    """ML-100K: Gini 0.63, top 1% of items 7.6% of interactions, median item 27 users."""
    s = dataset_stats(new)
    assert 0.55 <= s["popularity_gini"] <= 0.70
    assert 0.05 <= s["top1pct_share"] <= 0.10
    assert 15 <= s["item_q50"] <= 45


def test_held_out_item_depends_on_time(new, old):
    """The latest item is newer and, at its time, less popular than a random one of the
    user's (ML-100K: newer AUC 0.61, drift AUC 0.35); the original generator has none."""
    s, o = dataset_stats(new), dataset_stats(old)
    assert s["newer_auc"] > 0.55 and s["drift_auc"] < 0.42
    assert abs(o["newer_auc"] - 0.5) < 0.03 and abs(o["drift_auc"] - 0.5) < 0.03


def test_held_out_items_are_later_releases():
    """With releases only (no popular-first order) and users who stay long (ML-20M-like),
    the held-out item is released later than a random other item of the user's (P(later)
    0.59 at seed 4, ties one half; 0.5 without drift) and is more popular then (lift 1.31)."""
    kw = {"rng": 4, "params": DriftParams(popular_first=0.0, new_item_share=0.4,
                                          returning_share=1.0, returning_days=1000.0)}
    ds = synthetic_drift(600, 400, 24_000, **kw)
    assert dataset_stats(ds)["drift_lift"] > 1.15
    truth = synthetic_drift_truth(600, 400, 24_000, **kw)
    split = leave_one_out(ds, "latest")
    rel = truth.release
    users = split.test_users
    held = rel[split.test_items[users]]
    wins = []
    for u, h in zip(users, held, strict=True):
        others = rel[split.train[u].indices]
        wins.append(np.mean((h > others) + 0.5 * (h == others)))
    assert np.mean(wins) > 0.56


def test_seeds():
    a = synthetic_drift(300, 200, 9000, rng=7)
    b = synthetic_drift(300, 200, 9000, rng=np.random.default_rng(7), n_threads=1)
    c = synthetic_drift(300, 200, 9000, rng=8)
    assert a.content_sha256() == b.content_sha256()
    assert (a.matrix != c.matrix).nnz > 0
    assert not np.array_equal(a.timestamps, c.timestamps)


def test_threads_do_not_change_the_result():
    kw = {"rng": 11, "batch_elements": 20_000}
    a = synthetic_drift(400, 100, 10_000, n_threads=1, **kw)
    b = synthetic_drift(400, 100, 10_000, n_threads=2, **kw)
    assert a.content_sha256() == b.content_sha256()


def test_preferences_are_low_rank(new):
    """Item-kNN beats popularity on the latest item, full ranking: the affinity is there."""
    split = leave_one_out(new, "latest")
    train = split.train
    norms = np.sqrt(np.asarray(train.sum(axis=0)).ravel()) + 1e-9
    sim = (train.T @ train).toarray() / np.outer(norms, norms)
    np.fill_diagonal(sim, 0.0)
    knn = np.asarray(train @ sim)
    pop = np.broadcast_to(np.asarray(train.sum(axis=0), float), knn.shape)
    users = split.test_users
    seen = train.toarray()[users] > 0
    rates = []
    for scores in (knn[users], pop[users]):
        s = np.where(seen, -np.inf, scores)
        target = s[np.arange(len(users)), split.test_items[users]]
        rates.append(np.mean((s > target[:, None]).sum(axis=1) < 10))
    assert rates[0] > rates[1] + 0.03


def test_the_oracle_ranks_chosen_items_first(new):
    """The generator's own scores put a user's items above the others (AUC > 0.85)."""
    truth = dataset_truth("synth-943x1682")
    users = np.arange(0, 943, 7)
    s = truth.scores(users)
    m = new.binary()[users].toarray() > 0
    auc = []
    for row, chosen in zip(s, m, strict=True):
        pos, neg = row[chosen], row[~chosen]
        auc.append(np.mean(pos[:, None] > neg[None, :]))
    assert np.mean(auc) > 0.85
    # at a time before an item's release its score is -inf
    t = np.full(len(users), float(truth.release[np.isfinite(truth.release)].max()) - 1.0)
    assert np.isneginf(truth.scores(users, at=t)[:, np.argmax(truth.release)]).all()


def test_the_original_oracle_replays_its_factors():
    """synthetic_truth replays synthetic's draws: the side features (read off the factors)
    agree exactly."""
    ds = synthetic(300, 200, 9000, rng=5)
    truth = synthetic_truth(300, 200, 9000, rng=5)
    spectrum = np.arange(1, 17, dtype=np.float64) ** -1.0
    sd = np.sqrt(2.0 * spectrum / np.linalg.norm(spectrum)).astype(np.float32)
    users, items = factor_side_features(truth.user_factors, truth.item_factors, sd)
    assert users.equals(ds.user_features) and items.equals(ds.item_features)
    assert np.isneginf(truth.release).all()


def test_default_sizes_follow_movielens_activity():
    """ML-100K's interactions at its size; at most its 106 per user beyond."""
    assert drift_default_interactions(943, 1682) == 99_926
    assert drift_default_interactions(75_000, 10_000) == 7_953_340
    assert load_dataset("synth-300x200").n_interactions == 3780  # 6.3% of 60,000


def test_dataset_truth_by_name():
    assert dataset_truth("synthetic-300x200").n_users == 300
    assert dataset_truth("synth-300x200:min20").n_items == 200
    with pytest.raises(DataError, match="only synthetic data sets"):
        dataset_truth("ml-100k")


def test_invalid_parameters():
    with pytest.raises(DataError, match="new_item_share"):
        synthetic_drift(100, 100, 3000, rng=0, params=DriftParams(new_item_share=0.6))
    with pytest.raises(DataError, match="release_decay_days"):
        synthetic_drift(100, 100, 3000, rng=0, params=DriftParams(release_decay_days=0.0))
    with pytest.raises(DataError, match="n_interactions must be between"):
        synthetic_drift(100, 50, 100, rng=0)



def test_data_info_prints_the_shape():
    res = CliRunner().invoke(app, ["data", "info", "synth-300x200"])
    assert res.exit_code == 0, res.output
    for row in ("popularity_gini", "top1pct_share", "items_under_10", "drift_auc",
                "newer_auc"):
        assert row in res.output


def test_too_large_is_refused_before_any_draw(monkeypatch):
    module = sys.modules["dprec.data.synthetic"]  # the package's name is the function's
    monkeypatch.setattr(module, "machine_memory", lambda: 1 << 30)
    with pytest.raises(DataError, match=r"needs about .* GiB .* \(synth-<users>x<items>"):
        synthetic_drift(1_000_000, 10_000, 100_000_000, rng=0)
