"""Issue 33: the full-ranking metrics of each test user's top-K list over all unseen items
(HR@K, Recall@K, NDCG@K, MRR, Coverage@K), ties by dprec.selection, known answers."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.metrics import (
    covered_items,
    list_hits,
    list_ndcg,
    list_recall,
    ordered_rank,
    reciprocal_rank,
)
from dprec.evaluation.ranking import FULL_LIST, HEADLINE, evaluate_ranking
from dprec.evaluation.split import LeaveOneOut, leave_one_out
from dprec.selection import top_k
from dprec.systems.base import Ranker
from dprec.systems.baselines import Popularity


def test_ordered_rank_breaks_ties_by_the_smaller_item_index():
    scores = np.array([[0.5, 0.9, 0.5, 0.5, np.nan, 0.1]])
    # target item 3 (0.5): above it 0.9 (item 1), and the tied items 0 and 2 (smaller ids)
    assert ordered_rank(np.array([0.5]), np.array([3]), scores).tolist() == [3]
    # target item 0: only item 1 is above; tied items 2 and 3 come after it; NaN never counts
    assert ordered_rank(np.array([0.5]), np.array([0]), scores).tolist() == [1]
    # the same position as in top_k's full ordering
    order = top_k(np.where(np.isnan(scores), -np.inf, scores), 6)[0].tolist()
    assert order.index(3) == 3 and order.index(0) == 1


def test_list_metrics_known_answers_with_several_positives():
    # user 0: 2 positives, list hits at positions 0 and 2; user 1: 3 positives, a hit at 1
    relevant = np.array([[True, False, True, False], [False, True, False, False]])
    n_pos = np.array([2, 3])
    assert list_hits(relevant, n_pos, 1).tolist() == [1.0, 0.0]
    assert list_hits(relevant, n_pos, 2).tolist() == [1.0, 1.0]
    # Recall@K = hits in the top K / min(K, positives)
    assert list_recall(relevant, n_pos, 1).tolist() == [1.0, 0.0]
    assert list_recall(relevant, n_pos, 4).tolist() == pytest.approx([2 / 2, 1 / 3])
    # NDCG@4: user 0 (1 + 1/log2 4) / (1 + 1/log2 3); user 1 (1/log2 3) / (1 + 1/log2 3 + 1/2)
    ideal0 = 1 + 1 / math.log2(3)
    ideal1 = 1 + 1 / math.log2(3) + 1 / 2
    assert list_ndcg(relevant, n_pos, 4).tolist() == pytest.approx(
        [(1 + 1 / 2) / ideal0, (1 / math.log2(3)) / ideal1])
    assert reciprocal_rank(np.array([0, 1, 9])).tolist() == pytest.approx([1, 1 / 2, 1 / 10])


def test_list_metrics_refuse_inconsistent_inputs():
    with pytest.raises(DprecError, match="between 1 and the list length"):
        list_hits(np.zeros((1, 3), bool), np.ones(1), 4)
    with pytest.raises(DprecError, match="n_pos >= 1"):
        list_recall(np.ones((1, 3), bool), np.array([2]), 3)


def test_coverage_counts_each_item_once_and_skips_invalid_entries():
    top = np.array([[0, 1, 2], [2, 1, 5]])
    assert covered_items(top, 8).tolist() == [1, 1, 1, 0, 0, 1, 0, 0]
    valid = np.array([[True, True, True], [True, True, False]])
    assert covered_items(top, 8, valid).sum() == 3


class Fixed(Ranker):
    """The same scores for every user: item i scores ``values[i]``."""

    name = "fixed"

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        return np.tile(self.values, (history.shape[0], 1))


def _split(train_rows, test_items, n_items):
    """A leave-one-out split with every user a test user."""
    rows = [u for u, items in enumerate(train_rows) for _ in items]
    cols = [i for items in train_rows for i in items]
    train = sp.csr_matrix((np.ones(len(rows)), (rows, cols)),
                          shape=(len(train_rows), n_items))
    return LeaveOneOut(train=train, test_items=np.asarray(test_items), rule="latest")


def test_evaluator_known_answers_on_a_tiny_catalogue():
    # 30 items scored 29, 28, ..., 0 (item i: 29 - i); every user's train holds items 0 and 1
    n = 30
    split = _split([[0, 1], [0, 1], [0, 1]], [2, 12, 25], n)
    scores = np.arange(n - 1, -1, -1.0)
    neg = np.tile(np.arange(3, 3 + 20), (3, 1))
    neg[1, 9] = 29  # user 1's negatives must not hold their held-out item 12
    m = evaluate_ranking(Fixed(scores), split, neg, np.random.default_rng(0), ks=(10, 20))
    full = m[FULL_LIST]
    # unseen list: items 2, 3, ...; held-out ranks 0, 10, 23
    assert full["HR@10"] == pytest.approx(1 / 3)
    assert full["HR@20"] == pytest.approx(2 / 3)
    assert full["Recall@20"] == full["HR@20"]
    assert full["NDCG@10"] == pytest.approx(1 / 3)
    assert full["NDCG@20"] == pytest.approx((1 + 1 / math.log2(12)) / 3)
    assert full["MRR"] == pytest.approx((1 + 1 / 11 + 1 / 24) / 3)
    # every user's top 10 is items 2..11: 10 of 30 items; top 20: 20 of 30
    assert full["Coverage@10"] == pytest.approx(10 / 30)
    assert full["Coverage@20"] == pytest.approx(20 / 30)
    assert set(HEADLINE) <= set(full)


def test_constant_scores_rank_by_item_index():
    # every item ties: the held-out item's rank is the unseen items with a smaller index
    split = _split([[0], [5]], [3, 1], 12)
    neg = np.array([[1, 2, 4], [2, 3, 4]])
    m = evaluate_ranking(Fixed(np.zeros(12)), split, neg, np.random.default_rng(0),
                         ks=(1, 2))
    # user 0: unseen 1, 2, 3 -> rank 2; user 1: unseen 0, 1 -> rank 1
    assert m[FULL_LIST]["MRR"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert m[FULL_LIST]["HR@10"] == 1.0


@pytest.fixture(scope="module")
def real_split():
    return leave_one_out(synthetic(500, 300, 15_000, rng=3), "latest")


def test_full_list_agrees_with_the_ordered_rank_and_leaves_other_sections(real_split):
    neg = sample_negatives(real_split, 99, np.random.default_rng(0))
    pop = Popularity().fit(real_split.train, None)
    with_list = evaluate_ranking(pop, real_split, neg, np.random.default_rng(7))
    # HR@K from the list = share of users whose ordered rank is < K (one held-out item)
    s = pop.score(real_split.train[real_split.test_users])
    s[real_split.train[real_split.test_users].nonzero()] = np.nan
    tgt = s[np.arange(len(s)), real_split.test_items[real_split.test_users]]
    ranks = ordered_rank(tgt, real_split.test_items[real_split.test_users], s)
    assert with_list[FULL_LIST]["HR@10"] == pytest.approx(np.mean(ranks < 10))
    assert with_list[FULL_LIST]["MRR"] == pytest.approx(np.mean(1 / (ranks + 1)))
    # popularity recommends the same few items to everyone: coverage well below 1
    assert with_list[FULL_LIST]["Coverage@10"] < 0.2


def test_the_privrec_protocol_gets_the_lists_with_several_positives():
    from dprec.evaluation.runner import Experiment
    from dprec.evaluation.split import UserSplit
    from dprec.evaluation.user_ranking import UserRankingEvaluator
    from dprec.systems.registry import make_system
    ds = synthetic(300, 200, 12_000, rng=2)
    exp = Experiment(ds, [0], UserSplit(0.2), UserRankingEvaluator())
    m = {k: v["mean"] for k, v in exp.run(lambda: make_system("popularity"))
         .metrics[FULL_LIST].items()}
    # several positives per user: a hit needs one, recall counts them all (<= 1 each)
    assert 0 < m["Recall@20"] <= m["HR@20"] and m["Recall@10"] <= m["HR@10"] <= m["HR@20"]
    assert m["NDCG@10"] <= m["HR@10"] and 0 < m["MRR"] <= 1
    assert 0 < m["Coverage@10"] < 0.2  # one popularity list for everyone
