"""The readings of PrivRec's Hits@K (per positive, per user, all held-out, sampled)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.metrics import (
    best_rank_metrics,
    grouped_ranking_metrics,
    held_out_share_metrics,
)
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import UserFold, UserSplit
from dprec.evaluation.user_ranking import (
    HITS_READINGS,
    UserRankingEvaluator,
    evaluate_user_ranking,
    target_negatives,
    user_targets,
)
from dprec.systems.base import Ranker, check_history
from dprec.systems.registry import make_system

N_USERS, N_ITEMS = 5, 8
TRAIN_USERS = {(0, 0): 5, (0, 1): 2, (0, 2): 4, (1, 3): 3, (1, 4): 4, (1, 7): 5}
FINE = {(2, 0): 5, (2, 1): 2, (3, 7): 4, (4, 3): 5}
# user 2: targets 2, 3, 5, a held-out negative (4); never interacted: 6, 7
# user 3: target 0, a held-out negative (6); never interacted: 1, 2, 3, 4, 5
# user 4: one held-out negative, no target
TEST = [(2, 2, 5), (2, 3, 4), (2, 4, 1), (2, 5, 5), (3, 0, 5), (3, 6, 3), (4, 4, 2)]
SCORES = np.zeros((N_USERS, N_ITEMS))
SCORES[2] = [10, 10, 0.9, 0.4, 10, 0.1, 0.5, 0.3]   # ranks of targets 2, 3, 5: 0, 1, 2
SCORES[3] = [0.2, 0.3, 0.1, 0.0, 0.05, 0.25, 9, 9]  # rank of target 0: 2 (items 1, 5 above)


def _csr(entries):
    (rows, cols), vals = zip(*entries.keys(), strict=True), list(entries.values())
    return sp.csr_matrix((np.asarray(vals, np.float32), (rows, cols)),
                         shape=(N_USERS, N_ITEMS))


def _fold() -> UserFold:
    users, items, ratings = (np.asarray(c) for c in zip(*TEST, strict=True))
    return UserFold(index=0, train=_csr({**TRAIN_USERS, **FINE}), test_users=users,
                    test_items=items, test_ratings=ratings.astype(np.float32),
                    train_users=np.array([0, 1]), test_user_ids=np.array([2, 3, 4]),
                    fine_tune=_csr(FINE), moved_to_train=0)


class Table(Ranker):
    """Scores every test user from its row of ``table`` (users passed as indices)."""

    name = "table"
    uses_side_features = True

    def __init__(self, table: np.ndarray):
        self.table = table

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        history, items, users = check_history(history, self.table.shape[1], items, users)
        return self.table[users].copy()


def test_per_user_reading_is_the_best_rank_of_each_user():
    # ranks 0, 1, 2 for user 2 and 2 for user 3: user 2 hits at K = 1, user 3 at K = 3
    m = best_rank_metrics(np.array([0, 1, 2, 2]), np.array([2, 2, 2, 3]), (1, 2, 3))
    assert m == pytest.approx({"HR@1": 0.5, "HR@2": 0.5, "HR@3": 1.0, "NDCG@1": 0.5,
                               "NDCG@2": 0.5, "NDCG@3": (1 + 0.5) / 2}, abs=1e-12)


def test_all_held_out_reading_divides_by_every_held_out_rating_and_counts_every_user():
    ranks, groups = np.array([0, 1, 2, 2]), np.array([2, 2, 2, 3])
    m = held_out_share_metrics(ranks, groups, np.array([4, 3, 2]), np.array([1, 2, 4]),
                               (1, 3))
    # user 2: 1 (K=1) or 3 (K=3) hits of 4 held out; user 3: 0 or 1 of 2; user 4: 0 of 1
    assert m["HR@1"] == pytest.approx((1 / 4) / 3)
    assert m["HR@3"] == pytest.approx((3 / 4 + 1 / 2 + 0) / 3)
    assert m["NDCG@3"] == pytest.approx(((1 + 1 / np.log2(3) + 0.5) / 4 + 0.5 / 2) / 3)
    with pytest.raises(DprecError, match="every group label must be one of users"):
        held_out_share_metrics(ranks, np.array([2, 2, 2, 9]), np.array([2, 3, 4]),
                               np.array([4, 2, 1]), (1,))
    with pytest.raises(DprecError, match="held_out > 0"):
        held_out_share_metrics(ranks, groups, np.array([2, 3]), np.array([4, 0]), (1,))


def test_readings_on_the_hand_built_fold():
    fold = _fold()
    t = user_targets(fold, 3.0)
    assert t.test_user_ids.tolist() == [2, 3, 4] and t.held_out.tolist() == [4, 2, 1]
    readings = ("per-positive", "per-user", "all-held-out")
    m = evaluate_user_ranking(Table(SCORES), fold, t, np.random.default_rng(0), (1, 2, 3),
                              3.0, readings=readings)
    # only those asked for, and the full top-K lists (issue 33)
    assert set(m) == {"full", "full-per-user", "full-all-held-out", "full-topk"}
    assert m["full"]["HR@1"] == pytest.approx((1 / 3 + 0) / 2)
    # the lists: user 2 over 6, 7 and its targets 2, 3, 5 -> 2 first (rank 0); user 3 over
    # 1..5 and its target 0 -> 1, 5, 0 (rank 2); MRR (1 + 1/3) / 2. K = 10, 20 exceed the 8
    # items: no HR/Recall/NDCG/Coverage at those K on this fold
    assert m["full-topk"] == pytest.approx({"MRR": 2 / 3})
    assert m["full-per-user"]["HR@1"] == pytest.approx(0.5)
    assert m["full-per-user"]["HR@2"] == pytest.approx(0.5)
    assert m["full-per-user"]["HR@3"] == pytest.approx(1.0)
    assert m["full-all-held-out"]["HR@1"] == pytest.approx((1 / 4) / 3)
    assert m["full-all-held-out"]["HR@3"] == pytest.approx((3 / 4 + 1 / 2) / 3)


def test_optimistic_ties_rank_a_target_above_the_items_it_ties_with():
    fold = _fold()
    table = SCORES.copy()
    table[3] = [0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 9, 9]  # target 0 ties with all 5 candidates
    m = evaluate_user_ranking(Table(table), fold, user_targets(fold, 3.0),
                              np.random.default_rng(0), (1, 3), 3.0,
                              readings=("per-positive", "optimistic-ties"))
    # user 2 as before (ranks 0, 1, 2); user 3's target first among its ties: rank 0
    want = grouped_ranking_metrics(np.array([0, 1, 2, 0]), np.array([2, 2, 2, 3]), (1, 3))
    assert m["full-optimistic-ties"] == pytest.approx(want)
    # random ties put it anywhere among the six: HR@1 of user 3 is 1/6 on average, not 1
    draws = [evaluate_user_ranking(Table(table), fold, user_targets(fold, 3.0),
                                   np.random.default_rng(s), (1,), 3.0)["full"]["HR@1"]
             for s in range(60)]
    assert np.mean(draws) < want["HR@1"] - 0.2


def test_target_negatives_are_distinct_never_interacted_items_and_fail_when_too_few():
    t = user_targets(_fold(), 3.0)
    neg = target_negatives(t, 2, np.random.default_rng(0))
    assert neg.shape == (4, 2)
    never = {2: {6, 7}, 3: {1, 2, 3, 4, 5}}
    owners = [2, 2, 2, 3]
    for row, u in zip(neg, owners, strict=True):
        assert len(set(row.tolist())) == 2 and set(row.tolist()) <= never[u]
    with pytest.raises(DprecError, match="fewer than n_negatives=3"):
        target_negatives(t, 3, np.random.default_rng(0))


def test_sampled_reading_ranks_each_target_against_its_own_negatives():
    fold = _fold()
    t = user_targets(fold, 3.0)
    negatives = np.array([[6, 7], [6, 7], [6, 7], [1, 2]])
    t = t.__class__(**{**t.__dict__, "negatives": negatives})
    m = evaluate_user_ranking(Table(SCORES), fold, t, np.random.default_rng(0), (1, 2, 3),
                              3.0, readings=("sampled",))
    # user 2 as in full (0, 1, 2); user 3's target (0.2) is below item 1 (0.3) only: rank 1
    want = grouped_ranking_metrics(np.array([0, 1, 2, 1]), np.array([2, 2, 2, 3]), (1, 2, 3))
    assert m["sampled"] == pytest.approx(want)
    assert m["full"]["HR@2"] != pytest.approx(m["sampled"]["HR@2"])


def test_sampled_reading_needs_negatives():
    fold = _fold()
    with pytest.raises(DprecError, match="sampled reading needs one row of negatives"):
        evaluate_user_ranking(Table(SCORES), fold, user_targets(fold, 3.0),
                              np.random.default_rng(0), (1,), 3.0, readings=("sampled",))


@pytest.mark.parametrize("kwargs, message", [
    ({"readings": ()}, "readings must be a non-empty list"),
    ({"readings": ("hits",)}, "readings must be a non-empty list"),
    ({"readings": ("sampled",), "n_negatives": 0}, "n_negatives must be an integer >= 1"),
    ({"readings": ("sampled",), "n_negatives": 8}, "K=30 is larger than the sampled"),
])
def test_bad_reading_configs(kwargs, message):
    with pytest.raises(DprecError, match=message):
        UserRankingEvaluator(**kwargs)


def test_default_is_the_papers_reading():
    ev = UserRankingEvaluator()
    assert ev.readings == ("per-positive",) and HITS_READINGS["per-positive"] == "full"
    assert "for each positive" in __import__(
        "dprec.evaluation.user_ranking", fromlist=["x"]).__doc__


def test_every_reading_on_one_run_leaves_the_papers_reading_unchanged():
    ds = synthetic(300, 200, 12_000, rng=2)
    plain = Experiment(ds, [0], UserSplit(0.2), UserRankingEvaluator())
    every = Experiment(ds, [0], UserSplit(0.2),
                       UserRankingEvaluator(readings=tuple(HITS_READINGS)))
    a = plain.run(lambda: make_system("popularity"))
    b = every.run(lambda: make_system("popularity"))
    assert set(b.metrics) == set(HITS_READINGS.values()) | {"full-topk"}
    assert b.metrics["full"] == a.metrics["full"]
    hr = {key: b.metrics[key]["HR@10"]["mean"] for key in b.metrics}
    # fewer candidates and the best of several targets rank higher; a share of all held-out
    # ratings is lower
    assert hr["sampled"] > hr["full"] and hr["full-per-user"] > hr["full"]
    assert hr["full-all-held-out"] < hr["full"]
    assert b.protocol["readings"] == HITS_READINGS


def test_full_reading_of_a_shared_fold():
    [fold] = UserSplit(0.5).folds(synthetic(400, 100, 12_000, rng=3), np.random.default_rng(0))
    t = user_targets(fold, 3.0)
    table = np.random.default_rng(1).random(fold.train.shape)
    t = t.__class__(**{**t.__dict__, "negatives": target_negatives(t, 20,
                                                                   np.random.default_rng(2))})
    a = evaluate_user_ranking(Table(table), fold, t, np.random.default_rng(4), (5,), 3.0)
    b = evaluate_user_ranking(Table(table), fold, t, np.random.default_rng(4), (5,), 3.0,
                              readings=tuple(HITS_READINGS), batch_users=7)
    assert a["full"] == b["full"]
    # no ties: each target's rank among a subset of its candidates is no larger
    assert b["sampled"]["HR@5"] >= b["full"]["HR@5"]
