"""Ranking metrics for one relevant item per user.

HR@K = 1[rank < K] and NDCG@K = 1[rank < K] / log2(rank + 2), averaged over users.

``ranks`` are 0-based positions of the held-out item among its candidates.
"""

from __future__ import annotations

import numpy as np


def hit_rate(ranks: np.ndarray, k: int) -> float:
    """HR@K: fraction of users whose held-out item is in the top K."""
    return float(np.mean(ranks < k)) if len(ranks) else float("nan")


def ndcg(ranks: np.ndarray, k: int) -> float:
    """NDCG@K with one relevant item: mean of 1/log2(rank + 2) over hits, 0 otherwise."""
    if not len(ranks):
        return float("nan")
    gains = np.where(ranks < k, 1.0 / np.log2(ranks.astype(np.float64) + 2.0), 0.0)
    return float(np.mean(gains))


def ranking_metrics(ranks: np.ndarray, ks: list[int] | tuple[int, ...]) -> dict[str, float]:
    """{"HR@K": .., "NDCG@K": ..} for every K in ``ks``."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"HR@{k}"] = hit_rate(ranks, k)
    for k in ks:
        out[f"NDCG@{k}"] = ndcg(ranks, k)
    return out


def rank_with_random_ties(
    target: np.ndarray, candidates: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """0-based rank of ``target[u]`` among ``candidates[u]`` with ties broken uniformly at random.

    NaN candidates are ignored (they are not candidates). The target's position within its
    tie group is uniform over 0..ties, so a constant scorer ranks the target uniformly.
    """
    t = target[:, None]
    greater = np.sum(candidates > t, axis=1)
    ties = np.sum(candidates == t, axis=1)
    return greater + np.floor(rng.random(len(target)) * (ties + 1)).astype(np.int64)
