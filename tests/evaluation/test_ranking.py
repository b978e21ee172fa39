import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.ranking import evaluate_ranking
from dprec.evaluation.split import leave_one_out
from dprec.systems.base import Ranker
from dprec.systems.baselines import Popularity, RandomScorer


@pytest.fixture(scope="module")
def split():
    ds = synthetic(600, 400, 24_000, rng=1)
    return leave_one_out(ds, "latest")


class Oracle(Ranker):
    name = "oracle"

    def __init__(self, split):
        self.split = split

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        s = np.zeros((len(users), self.split.train.shape[1]))
        s[np.arange(len(users)), self.split.test_items[users]] = 1.0
        return s


def test_negatives_are_never_interacted_and_distinct(split):
    neg = sample_negatives(split, 99, np.random.default_rng(0))
    assert neg.shape == (len(split.test_users), 99)
    for row, u in zip(neg[:100], split.test_users[:100], strict=True):
        assert len(set(row)) == 99
        assert not set(row) & set(split.train[u].indices)
        assert split.test_items[u] not in row


def test_random_scorer_gets_hr10_about_k_over_candidates(split):
    neg = sample_negatives(split, 99, np.random.default_rng(0))
    hr, full = [], []
    for seed in range(5):
        m = evaluate_ranking(RandomScorer().fit(split.train, np.random.default_rng(seed)), split,
                             neg, np.random.default_rng(seed))
        hr.append(m["sampled"]["HR@10"])
        full.append(m["full"]["HR@10"])
    # 5 x 600 users: standard error of the mean ~ 0.0055 (sampled), ~0.0025 (full)
    assert abs(np.mean(hr) - 0.10) < 0.02
    unseen = split.train.shape[1] - np.diff(split.train.indptr).mean()
    assert abs(np.mean(full) - 10 / unseen) < 0.012


def test_random_scorer_is_a_function_of_seed_user_and_item(split):
    a = RandomScorer().fit(split.train, np.random.default_rng(3))
    b = RandomScorer().fit(split.train, np.random.default_rng(3))
    c = RandomScorer().fit(split.train, np.random.default_rng(4))
    rows = split.train[:20]
    assert np.array_equal(a.score(rows), b.score(rows))
    assert not np.array_equal(a.score(rows), c.score(rows))
    assert np.array_equal(a.score(rows)[5:9], a.score(split.train[5:9]))  # batch-free
    assert len(np.unique(a.score(rows))) == a.score(rows).size  # no ties to break


def test_oracle_is_perfect_and_popularity_beats_random(split):
    neg = sample_negatives(split, 99, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    m = evaluate_ranking(Oracle(split), split, neg, rng)
    assert m["sampled"]["HR@1"] == 1.0 and m["full"]["HR@1"] == 1.0
    pop = evaluate_ranking(Popularity().fit(split.train, rng), split, neg, rng)
    assert pop["sampled"]["HR@10"] > 0.2
    assert pop["full"]["HR@10"] < pop["sampled"]["HR@10"]


def test_k_larger_than_candidate_list_is_refused(split):
    neg = sample_negatives(split, 9, np.random.default_rng(0))
    with pytest.raises(DprecError, match="larger than the sampled candidate list"):
        evaluate_ranking(RandomScorer().fit(split.train, np.random.default_rng(7)), split, neg,
                         np.random.default_rng(0), ks=(10, 20))


class Stored(Ranker):
    """Keeps the array it returned (a cache, as a deployed model might)."""

    name = "stored"

    def __init__(self, scores):
        self.scores = scores

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        self.last = self.scores[users]
        return self.last


def test_model_scores_are_not_modified_and_non_finite_scores_refused(split):
    neg = sample_negatives(split, 99, np.random.default_rng(0))
    full = np.random.default_rng(3).random((split.train.shape[0], split.train.shape[1]))
    model = Stored(full)
    evaluate_ranking(model, split, neg, np.random.default_rng(0))
    assert np.isfinite(model.last).all()  # the evaluator masks its own copy
    full[split.test_users[5], 0] = np.nan
    with pytest.raises(DprecError, match="NaN or infinite"):
        evaluate_ranking(model, split, neg, np.random.default_rng(0))
