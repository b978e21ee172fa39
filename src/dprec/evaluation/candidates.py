"""The candidate items each held-out item is ranked against."""

from __future__ import annotations

import numpy as np

from dprec.errors import DprecError
from dprec.evaluation.split import LeaveOneOut
from dprec.selection import top_k

__all__ = ["sample_negatives"]


def sample_negatives(
    split: LeaveOneOut, n_negatives: int, rng: np.random.Generator, batch_size: int = 2048
) -> np.ndarray:
    """Draw ``n_negatives`` distinct never-interacted items for each test user.

    Returns an (n_test_users, n_negatives) array aligned with ``split.test_users``. Training
    positives and the held-out item are never drawn. Draw once per (dataset, split, seed) and
    share across systems: re-drawing per evaluation makes systems incomparable.
    Uniform without replacement via the smallest random keys among allowed items (ordered by
    key, ties by the smaller item id, so the draw is the same on every CPU).
    """
    users = split.test_users
    n_items = split.train.shape[1]
    seen = np.diff(split.train.indptr)[users] + 1
    if len(users) and seen.max() + n_negatives > n_items:
        worst = int(users[np.argmax(seen)])
        raise DprecError(
            f"user {worst} has only {n_items - int(seen.max())} never-interacted items, fewer "
            f"than n_negatives={n_negatives}; lower --negatives or filter heavy users"
        )
    out = np.empty((len(users), n_negatives), np.int64)
    for start in range(0, len(users), batch_size):
        b = users[start:start + batch_size]
        keys = rng.random((len(b), n_items))
        rows = split.train[b]
        r = np.repeat(np.arange(len(b)), np.diff(rows.indptr))
        keys[r, rows.indices] = np.inf
        keys[np.arange(len(b)), split.test_items[b]] = np.inf
        out[start:start + len(b)] = top_k(np.negative(keys, out=keys), n_negatives)
    return out
