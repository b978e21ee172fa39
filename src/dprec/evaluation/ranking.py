"""Ranking evaluation: sampled (1 held-out item + negatives), full (all never-seen items,
random ties) and full top-K lists (all never-seen items, the ties of :mod:`dprec.selection`).

The ``full-topk`` section is the headline of every table (issue 33): HR@K, Recall@K, NDCG@K,
MRR and catalogue Coverage@K, read from each test user's top-K list over every item they
never interacted with (:mod:`dprec.evaluation.metrics`). It uses no random draw, so the
``sampled`` and ``full`` numbers are the same as before it was added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.evaluator import Evaluator, Metrics
from dprec.evaluation.metrics import (
    FULL_LIST,
    HEADLINE,
    LIST_KS,
    covered_items,
    list_metrics,
    ordered_rank,
    rank_with_random_ties,
    ranking_metrics,
)
from dprec.evaluation.outputs import checked_output
from dprec.evaluation.split import LeaveOneOut
from dprec.random import derive_generator
from dprec.selection import top_k
from dprec.systems.base import Ranker, Recommender, Task

__all__ = [
    "DEFAULT_KS", "FULL_LIST", "HEADLINE", "LIST_KS", "RankingEvaluator", "evaluate_ranking",
]

DEFAULT_KS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20)


def evaluate_ranking(
    model: Ranker,
    split: LeaveOneOut,
    negatives: np.ndarray,
    rng: np.random.Generator,
    ks: tuple[int, ...] = DEFAULT_KS,
    batch_size: int = 1024,
) -> Metrics:
    """HR@K and NDCG@K of ``model`` on ``split``.

    Each test user's client passes its training history to ``model.score``.
    "sampled": the held-out item against ``negatives`` (shared by every system);
    "full": against every item the user never interacted with. Ties broken at random by
    ``rng``. "full-topk" (:data:`FULL_LIST`): each user's top-max(LIST_KS) list over every
    item they never interacted with (the held-out item included), ties by
    :func:`dprec.selection.top_k` (larger score, then smaller item index), no random draw.
    Returns {"sampled": {...}, "full": {...}, "full-topk": {...}}.
    """
    n_cands = negatives.shape[1] + 1
    if max(ks) > n_cands:
        raise DprecError(
            f"K={max(ks)} is larger than the sampled candidate list ({n_cands} items); "
            f"use K <= {n_cands} or more --negatives"
        )
    users = split.test_users
    if len(negatives) != len(users):
        raise DprecError("negatives must have one row per test user of the split")
    sampled = np.empty(len(users), np.int64)
    full = np.empty(len(users), np.int64)
    n_items = split.train.shape[1]
    depth = min(max(LIST_KS), n_items)
    relevant = np.zeros((len(users), depth), bool)
    first = np.empty(len(users), np.int64)
    covered = {k: np.zeros(n_items, bool) for k in LIST_KS}
    for start in range(0, len(users), batch_size):
        b = users[start:start + batch_size]
        rows = np.arange(len(b))
        train = split.train[b]
        scores = checked_output(model.score(train, users=b), (len(b), split.train.shape[1]),
                                f"{model.name}.score", "scores")  # a copy: masked below
        target = scores[rows, split.test_items[b]].copy()
        neg = scores[rows[:, None], negatives[start:start + len(b)]]
        sampled[start:start + len(b)] = rank_with_random_ties(target, neg, rng)
        scores[np.repeat(rows, np.diff(train.indptr)), train.indices] = np.nan
        top = top_k(scores, depth)
        at = slice(start, start + len(b))
        relevant[at] = top == split.test_items[b][:, None]
        first[at] = ordered_rank(target, split.test_items[b], scores)
        valid = ~np.isnan(np.take_along_axis(scores, top, axis=1))
        for k in LIST_KS:
            covered[k] |= covered_items(top[:, :k], n_items, valid[:, :k])
        scores[rows, split.test_items[b]] = np.nan
        full[at] = rank_with_random_ties(target, scores, rng)
    listed = list_metrics(relevant, np.ones(len(users)), first, covered,
                          tuple(k for k in LIST_KS if k <= depth))
    return {"sampled": ranking_metrics(sampled, ks), "full": ranking_metrics(full, ks),
            FULL_LIST: listed}


@dataclass(frozen=True)
class RankingEvaluator(Evaluator):
    """Leave-one-out ranking: sampled (``n_negatives`` shared negatives) and full.

    The negatives of seed s come from the stream (s, "negatives", dataset, rule), drawn once
    per (dataset, split, seed) and shared by every system.
    """

    n_negatives: int = 99
    ks: tuple[int, ...] = DEFAULT_KS
    task: Task = "ranking"

    def __post_init__(self) -> None:
        if int(self.n_negatives) != self.n_negatives or self.n_negatives < 1:
            raise DprecError(f"negatives must be an integer >= 1, got {self.n_negatives}")
        if not self.ks or min(self.ks) < 1:
            raise DprecError(f"every K must be >= 1, got {self.ks}")
        if max(self.ks) > self.n_negatives + 1:
            raise DprecError(f"K={max(self.ks)} is larger than the sampled candidate list "
                             f"({self.n_negatives + 1} items); lower K or raise --negatives")

    def prepare(self, dataset: Dataset, fold: LeaveOneOut, seed: int,
                split_kind: str) -> np.ndarray:
        if not isinstance(fold, LeaveOneOut):
            raise DprecError(f"ranking evaluation needs a leave-one-out split, got {split_kind}")
        return sample_negatives(fold, self.n_negatives,
                                derive_generator(seed, "negatives", dataset.name, fold.rule))

    def evaluate(self, model: Recommender, fold: LeaveOneOut, prepared: np.ndarray,
                 rng: np.random.Generator) -> Metrics:
        if not isinstance(model, Ranker):
            raise DprecError(f"{model.name} is a {model.task} system; ranking needs a ranker")
        return evaluate_ranking(model, fold, prepared, rng, self.ks)

    def describe(self) -> dict[str, object]:
        return {
            "task": "ranking",
            "sampled": {"negatives": self.n_negatives,
                        "drawn": "once per (dataset, split, seed)"},
            "full": "all items the user never interacted with",
            "ties": "broken uniformly at random with the run's seed",
            FULL_LIST: {"list": "each test user's top-K over all items they never "
                                "interacted with (the held-out item included)",
                        "ks": list(LIST_KS),
                        "ties": "larger score first, then the smaller item index "
                                "(dprec.selection.top_k); no random draw",
                        "metrics": "HR@K, Recall@K (/ min(K, positives)), NDCG@K, MRR (no "
                                   "cut-off), Coverage@K (share of the catalogue in at "
                                   "least one test user's top K)"},
            "ks": list(self.ks),
        }
