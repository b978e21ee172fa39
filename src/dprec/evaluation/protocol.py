"""Ranking evaluation: sampled (1 held-out item + negatives) and full (all never-seen items)."""

from __future__ import annotations

import numpy as np

from dprec.errors import DprecError
from dprec.evaluation.metrics import rank_with_random_ties, ranking_metrics
from dprec.evaluation.split import LeaveOneOut
from dprec.systems.base import Recommender

DEFAULT_KS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20)


def evaluate_ranking(
    model: Recommender,
    split: LeaveOneOut,
    negatives: np.ndarray,
    rng: np.random.Generator,
    ks: tuple[int, ...] = DEFAULT_KS,
    batch_size: int = 1024,
) -> dict[str, dict[str, float]]:
    """HR@K and NDCG@K of ``model`` on ``split``.

    "sampled": the held-out item against ``negatives`` (shared by every system);
    "full": against every item the user never interacted with. Ties broken at random by
    ``rng``. Returns {"sampled": {...}, "full": {...}}.
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
    for start in range(0, len(users), batch_size):
        b = users[start:start + batch_size]
        rows = np.arange(len(b))
        scores = np.asarray(model.score(b), dtype=np.float64)
        if scores.shape != (len(b), split.train.shape[1]):
            raise DprecError(f"{model.name}.score returned shape {scores.shape}")
        target = scores[rows, split.test_items[b]].copy()
        neg = scores[rows[:, None], negatives[start:start + len(b)]]
        sampled[start:start + len(b)] = rank_with_random_ties(target, neg, rng)
        train = split.train[b]
        scores[np.repeat(rows, np.diff(train.indptr)), train.indices] = np.nan
        scores[rows, split.test_items[b]] = np.nan
        full[start:start + len(b)] = rank_with_random_ties(target, scores, rng)
    return {"sampled": ranking_metrics(sampled, ks), "full": ranking_metrics(full, ks)}
