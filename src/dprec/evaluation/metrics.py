"""Ranking metrics for one relevant item per ranked list.

HR@K = 1[rank < K] and NDCG@K = 1[rank < K] / log2(rank + 2), averaged over users
(:func:`ranking_metrics`, one held-out item per user) or first over each user's held-out
items and then over users (:func:`grouped_ranking_metrics`).

``ranks`` are 0-based positions of the held-out item among its candidates.
"""

from __future__ import annotations

import numpy as np

from dprec.errors import DprecError

__all__ = [
    "group_mean", "grouped_ranking_metrics", "hit_rate", "hits", "ndcg", "ndcg_gains",
    "rank_with_random_ties", "ranking_metrics",
]


def hits(ranks: np.ndarray, k: int) -> np.ndarray:
    """Per held-out item: 1[rank < K] (float64)."""
    return (np.asarray(ranks) < k).astype(np.float64)


def ndcg_gains(ranks: np.ndarray, k: int) -> np.ndarray:
    """Per held-out item: 1[rank < K] / log2(rank + 2) (float64), the NDCG@K of a list with
    one relevant item."""
    r = np.asarray(ranks, dtype=np.float64)
    return np.where(r < k, 1.0 / np.log2(r + 2.0), 0.0)


def hit_rate(ranks: np.ndarray, k: int) -> float:
    """HR@K: fraction of users whose held-out item is in the top K."""
    return float(np.mean(hits(ranks, k))) if len(ranks) else float("nan")


def ndcg(ranks: np.ndarray, k: int) -> float:
    """NDCG@K with one relevant item: mean of 1/log2(rank + 2) over hits, 0 otherwise."""
    return float(np.mean(ndcg_gains(ranks, k))) if len(ranks) else float("nan")


def group_mean(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Mean of ``values`` within each group: one entry per distinct label of ``groups``
    (integer labels, same length as ``values``), in sorted label order."""
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups)
    if values.shape != groups.shape or values.ndim != 1:
        raise DprecError(f"values and groups must be 1-d arrays of equal length, "
                         f"got shapes {values.shape} and {groups.shape}")
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return np.bincount(inverse, weights=values, minlength=len(counts)) / counts


def grouped_ranking_metrics(ranks: np.ndarray, groups: np.ndarray,
                            ks: list[int] | tuple[int, ...]) -> dict[str, float]:
    """{"HR@K": .., "NDCG@K": ..}: each metric averaged over a user's held-out items first
    (``groups[j]`` = the user of ``ranks[j]``), then over users, so every user with at least
    one held-out item weighs the same. NaN when there are no ranks."""
    out: dict[str, float] = {}
    for name, per_item in (("HR", hits), ("NDCG", ndcg_gains)):
        for k in ks:
            out[f"{name}@{k}"] = (float(np.mean(group_mean(per_item(ranks, k), groups)))
                                  if len(ranks) else float("nan"))
    return out


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
