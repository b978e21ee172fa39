"""Ranking metrics for one relevant item per ranked list.

HR@K = 1[rank < K] and NDCG@K = 1[rank < K] / log2(rank + 2), averaged over users
(:func:`ranking_metrics`, one held-out item per user) or first over each user's held-out
items and then over users (:func:`grouped_ranking_metrics`).

``ranks`` are 0-based positions of the held-out item among its candidates.

Two other readings of a user's "Hits@K" when a user has several held-out items:
:func:`best_rank_metrics` (a hit when any of the user's held-out items is in the top K) and
:func:`held_out_share_metrics` (the user's hits over all their held-out ratings, positive or
not, every test user averaged).
"""

from __future__ import annotations

import math

import numpy as np

from dprec.errors import DprecError

LIST_KS: tuple[int, ...] = (10, 20)
"""Cut-offs of the full top-K list metrics."""
FULL_LIST = "full-topk"
"""The results section of the full top-K list metrics."""
HEADLINE: tuple[str, ...] = ("HR@10", "Recall@20", "NDCG@10", "MRR", "Coverage@10")
"""The metrics of :data:`FULL_LIST` every table leads with (issue 33)."""

__all__ = [
    "FULL_LIST", "HEADLINE", "LIST_KS", "best_rank_metrics", "covered_items", "group_mean",
    "group_min", "grouped_ranking_metrics", "held_out_share_metrics", "hit_rate", "hits",
    "list_hits", "list_metrics", "list_ndcg", "list_recall", "ndcg", "ndcg_gains",
    "ordered_rank", "rank_with_random_ties", "ranking_metrics", "reciprocal_rank",
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


def group_min(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Minimum of ``values`` within each group, in sorted label order (as :func:`group_mean`)."""
    values = np.asarray(values)
    groups = np.asarray(groups)
    if values.shape != groups.shape or values.ndim != 1:
        raise DprecError(f"values and groups must be 1-d arrays of equal length, "
                         f"got shapes {values.shape} and {groups.shape}")
    _, inverse = np.unique(groups, return_inverse=True)
    out = np.full(int(inverse.max()) + 1 if len(inverse) else 0, np.iinfo(np.int64).max,
                  np.int64)
    np.minimum.at(out, inverse, values.astype(np.int64))
    return out


def best_rank_metrics(ranks: np.ndarray, groups: np.ndarray,
                      ks: list[int] | tuple[int, ...]) -> dict[str, float]:
    """{"HR@K": .., "NDCG@K": ..} with one hit per user: HR@K = 1[min_j rank_j < K], the
    user's top-K list holds at least one of their held-out items; NDCG@K = the gain
    1/log2(r + 2) of that best-ranked item. Means over users; NaN when there are no ranks.

    A held-out item's rank among its candidates is also its position in the list of the
    candidates plus the user's other held-out items whenever none of those scores above it,
    which holds for the best-ranked one: so the minimum rank is the position of the user's
    first hit in that list."""
    best = group_min(ranks, groups)
    out: dict[str, float] = {}
    for name, per_user in (("HR", hits), ("NDCG", ndcg_gains)):
        for k in ks:
            out[f"{name}@{k}"] = float(np.mean(per_user(best, k))) if len(best) else float("nan")
    return out


def held_out_share_metrics(ranks: np.ndarray, groups: np.ndarray, users: np.ndarray,
                           held_out: np.ndarray,
                           ks: list[int] | tuple[int, ...]) -> dict[str, float]:
    """{"HR@K": .., "NDCG@K": ..} with each user's hits divided by all their held-out
    ratings: per user u of ``users``, sum_{j: groups[j] = u} metric(rank_j) / held_out[u]
    (``held_out`` > 0, aligned with ``users``; a user without ranks scores 0), then the mean
    over ``users``. With only positives held out it is :func:`grouped_ranking_metrics`
    over ``users``."""
    users = np.asarray(users)
    held_out = np.asarray(held_out, dtype=np.float64)
    if users.shape != held_out.shape or users.ndim != 1 or np.any(held_out <= 0):
        raise DprecError("users and held_out must be 1-d of equal length, held_out > 0")
    order = np.argsort(users, kind="stable")
    pos = np.searchsorted(users[order], np.asarray(groups))
    if len(groups) and (np.any(pos >= len(users)) or
                        np.any(users[order][np.minimum(pos, len(users) - 1)] != groups)):
        raise DprecError("every group label must be one of users")
    owner = order[pos] if len(groups) else np.zeros(0, np.int64)
    out: dict[str, float] = {}
    for name, per_item in (("HR", hits), ("NDCG", ndcg_gains)):
        for k in ks:
            total = np.bincount(owner, weights=per_item(ranks, k), minlength=len(users))
            out[f"{name}@{k}"] = (float(np.mean(total / held_out)) if len(users)
                                  else float("nan"))
    return out


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


def ordered_rank(target: np.ndarray, target_items: np.ndarray,
                 candidates: np.ndarray) -> np.ndarray:
    """0-based position of ``target[u]`` (the score of item ``target_items[u]``) in row u of
    ``candidates`` ordered as :func:`dprec.selection.top_k` orders it: the candidates with a
    larger score, plus those with an equal score and a smaller item index. NaN candidates
    are not candidates; the target's own column may be present (it never counts against
    itself). The same rank as the target's position in ``top_k(candidates, n_items)``."""
    t = np.asarray(target, dtype=np.float64)[:, None]
    c = np.asarray(candidates)
    idx = np.arange(c.shape[1])[None, :]
    before = (c > t) | ((c == t) & (idx < np.asarray(target_items)[:, None]))
    return before.sum(axis=1).astype(np.int64)


def reciprocal_rank(ranks: np.ndarray) -> np.ndarray:
    """Per user: 1 / (rank + 1) for the 0-based rank of their first positive (MRR's term)."""
    return 1.0 / (np.asarray(ranks, dtype=np.float64) + 1.0)


def _check_lists(relevant: np.ndarray, n_pos: np.ndarray, k: int) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    rel = np.asarray(relevant, dtype=bool)
    n = np.asarray(n_pos, dtype=np.float64)
    if rel.ndim != 2 or n.shape != (rel.shape[0],):
        raise DprecError(f"relevant must be (users, K) and n_pos (users,), got shapes "
                         f"{rel.shape} and {n.shape}")
    if k < 1 or k > rel.shape[1]:
        raise DprecError(f"K={k} must be between 1 and the list length {rel.shape[1]}")
    if np.any(n < 1) or np.any(rel.sum(axis=1) > n):
        raise DprecError("every user needs n_pos >= 1 and at most n_pos relevant entries")
    return rel[:, :k], n


def list_hits(relevant: np.ndarray, n_pos: np.ndarray, k: int) -> np.ndarray:
    """Per user: HR@K = 1 when any of the first K list entries is a positive."""
    rel, _ = _check_lists(relevant, n_pos, k)
    return rel.any(axis=1).astype(np.float64)


def list_recall(relevant: np.ndarray, n_pos: np.ndarray, k: int) -> np.ndarray:
    """Per user: Recall@K = positives among the first K entries / min(K, n_pos)."""
    rel, n = _check_lists(relevant, n_pos, k)
    return rel.sum(axis=1) / np.minimum(float(k), n)


def list_ndcg(relevant: np.ndarray, n_pos: np.ndarray, k: int) -> np.ndarray:
    """Per user: NDCG@K = sum_{j<K} relevant_j / log2(j + 2) over the ideal DCG of
    min(K, n_pos) positives at the top."""
    rel, n = _check_lists(relevant, n_pos, k)
    discount = 1.0 / np.log2(np.arange(k) + 2.0)
    ideal = np.cumsum(discount)[np.minimum(k, n).astype(np.int64) - 1]
    return (rel @ discount) / ideal


def covered_items(top: np.ndarray, n_items: int, valid: np.ndarray | None = None
                  ) -> np.ndarray:
    """(n_items,) bool: the items in at least one row of ``top`` (item indices; with
    ``valid``, only its True entries). Coverage@K = the mean of this over the top K of
    every test user's list; or-combine the arrays of several batches first."""
    out = np.zeros(int(n_items), bool)
    items = np.asarray(top)
    out[items[valid] if valid is not None else items.ravel()] = True
    return out


def list_metrics(relevant: np.ndarray, n_pos: np.ndarray, first_rank: np.ndarray,
                 covered: dict[int, np.ndarray],
                 ks: tuple[int, ...] = LIST_KS) -> dict[str, float]:
    """{"HR@K", "Recall@K", "NDCG@K" for K in ``ks``, "MRR", "Coverage@K"}: the per-user
    list metrics above (``relevant`` (users, K) and ``n_pos``; ``first_rank`` the 0-based
    rank of each user's first positive) averaged over users, coverage from the or-combined
    ``covered[K]`` of every batch. NaN when there are no users."""
    out: dict[str, float] = {}
    empty = len(relevant) == 0
    for name, per_user in (("HR", list_hits), ("Recall", list_recall), ("NDCG", list_ndcg)):
        for k in ks:
            out[f"{name}@{k}"] = (math.nan if empty
                                  else float(np.mean(per_user(relevant, n_pos, k))))
    out["MRR"] = math.nan if empty else float(np.mean(reciprocal_rank(first_rank)))
    for k in ks:
        out[f"Coverage@{k}"] = math.nan if empty else float(np.mean(covered[k]))
    return out
