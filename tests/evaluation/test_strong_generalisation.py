"""Strong generalisation (Liang et al., WWW 2018; the DPALS protocol): the split, the list
metrics at Liang's cut-offs, and the task's wiring."""

import numpy as np
import pytest

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.experiments import (
    STRONG_LIST_KS,
    experiment_for,
    strong_split,
    task_of,
)
from dprec.evaluation.split import StrongGeneralisationSplit
from dprec.evaluation.user_ranking import UserRankingEvaluator
from dprec.systems.base import Ranker


def _dataset(seed: int = 0, n_users: int = 200, n_items: int = 60, n: int = 4000) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset.from_triples(
        "rand", rng.integers(0, n_users, n), rng.integers(0, n_items, n),
        np.ones(n, np.float32), all_user_ids=np.arange(n_users),
        all_item_ids=np.arange(n_items))


def test_held_out_users_are_never_trained_on_and_lose_floor_of_test_prop():
    ds = _dataset()
    [fold] = StrongGeneralisationSplit(held_out=50, test_prop=0.2).folds(
        ds, np.random.default_rng(3))
    counts = np.diff(ds.matrix.indptr)
    te = fold.test_user_ids
    assert len(te) + fold.moved_to_train == 50
    held = np.bincount(fold.test_users, minlength=ds.n_users)
    # Liang et al.: int(test_prop * n) of each held-out user's items are the test set
    assert np.array_equal(held[te], (0.2 * counts[te]).astype(np.int64))
    assert np.array_equal(np.diff(fold.fine_tune.indptr)[te], counts[te] - held[te])
    # the evaluator trains on the train users' rows only: no held-out user's item
    train = UserRankingEvaluator(threshold=0.0).train_matrix(fold)
    assert np.diff(train.indptr)[te].sum() == 0
    assert np.array_equal(np.diff(train.indptr)[fold.train_users],
                          counts[fold.train_users])
    assert fold.train.nnz + len(fold.test_ratings) == ds.n_interactions


def test_users_too_short_to_hold_out_stay_train_users():
    # 3 interactions each: floor(0.2 * 3) = 0, so nobody can be held out
    rows = np.repeat(np.arange(10), 3)
    ds = Dataset.from_triples("short", rows, np.tile(np.arange(3), 10), np.ones(30, np.float32))
    with pytest.raises(DprecError, match="5 or more ratings"):
        StrongGeneralisationSplit(held_out=4).folds(ds, np.random.default_rng(0))


@pytest.mark.parametrize("bad", [0, -1, 1.0, 0.0, True, "10"])
def test_held_out_is_a_count_or_a_fraction(bad):
    with pytest.raises(DprecError, match="held_out"):
        StrongGeneralisationSplit(held_out=bad)


@pytest.mark.parametrize("bad", ["strong:", "strong:0", "strong:x", "strong:-3", "weak"])
def test_strong_split_names(bad):
    with pytest.raises(DprecError, match="strong:N"):
        strong_split(bad)
    assert strong_split("strong:7").held_out == 7
    assert strong_split(None).held_out == 0.2


class _Scripted(Ranker):
    """Scores the test users in the evaluator's order (``users = -1``, batches in order):
    1 on each user's held-out positives, 0 elsewhere (``perfect``), or 0 everywhere."""

    name = "scripted"
    uses_ratings = False

    def __init__(self, targets, perfect: bool):
        self.targets, self.perfect, self.served = targets, perfect, 0

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        b, n = history.shape
        out = np.zeros((b, n))
        if self.perfect:
            t = self.targets.targets[self.served:self.served + b]
            out[np.repeat(np.arange(b), np.diff(t.indptr)), t.indices] = 1.0
        self.served += b
        return out


def test_recall_and_ndcg_at_liang_cut_offs_with_a_known_answer():
    ds = _dataset(1, n_items=150, n=8000)
    exp = experiment_for("strong", ds, 1, "strong:40", 99, None)
    ev = exp.evaluator
    assert ev.list_ks == STRONG_LIST_KS and ev.threshold == 0.0
    [fold] = exp.split.folds(ds, np.random.default_rng(0))
    targets = ev.prepare(ds, fold, 0, "strong")
    full = ev.evaluate(_Scripted(targets, True), fold, targets,
                       np.random.default_rng(0))["full-topk"]
    for k in (20, 50, 100):  # every positive first: Recall over min(K, positives) is 1
        assert full[f"Recall@{k}"] == pytest.approx(1.0)
        assert full[f"NDCG@{k}"] == pytest.approx(1.0)
    flat = ev.evaluate(_Scripted(targets, False), fold, targets,
                       np.random.default_rng(0))["full-topk"]
    assert flat["Recall@20"] < 0.9  # ties by item index: not a perfect list


def test_task_of_strong_and_the_side_feature_systems():
    assert task_of("mf-np", "strong") == "strong"
    assert task_of("dpals", "strong:100") == "strong"
    with pytest.raises(DprecError, match="side features"):
        task_of("privrec", "strong")
