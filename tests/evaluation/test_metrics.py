import numpy as np
import pytest

from dprec.evaluation.metrics import hit_rate, ndcg, rank_with_random_ties, ranking_metrics


def test_hit_rate_and_ndcg_known_values():
    ranks = np.array([0, 1, 4, 10])
    assert hit_rate(ranks, 1) == 0.25
    assert hit_rate(ranks, 5) == 0.75
    assert ndcg(ranks, 5) == pytest.approx((1 + 1 / np.log2(3) + 1 / np.log2(6)) / 4)
    m = ranking_metrics(ranks, (2, 10))
    assert m["HR@2"] == 0.5 and m["HR@10"] == 0.75


def test_ties_are_broken_uniformly():
    rng = np.random.default_rng(0)
    n = 50_000
    ranks = rank_with_random_ties(np.zeros(n), np.zeros((n, 9)), rng)
    counts = np.bincount(ranks, minlength=10) / n
    assert np.allclose(counts, 0.1, atol=0.01)


def test_nan_candidates_are_ignored_and_strict_order_respected():
    rng = np.random.default_rng(0)
    target = np.array([0.5, 0.5])
    cands = np.array([[0.9, np.nan, 0.1], [np.nan, np.nan, np.nan]])
    assert rank_with_random_ties(target, cands, rng).tolist() == [1, 0]
