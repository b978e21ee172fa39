"""Dataset filters: minimum activity, binarisation, per-user caps.

Each filter is vectorised over the stored interactions, keeps ``timestamps`` aligned with
``matrix.data``, subsets ids and side features, and appends one step to ``history`` so a
run records exactly which data it used.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import InvalidParameterError

__all__ = ["binarise", "cap_per_user", "min_interactions"]

log = logging.getLogger(__name__)


def _entry_users(matrix: sp.csr_matrix) -> np.ndarray:
    return np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))


def _subset(ds: Dataset, keep_entry: np.ndarray, keep_user: np.ndarray,
            keep_item: np.ndarray, step: str) -> Dataset:
    """Keep the entries ``keep_entry`` (all in kept rows/columns) and the users/items masked
    by ``keep_user``/``keep_item``; rows and columns are renumbered in their old order."""
    m = ds.matrix
    users = _entry_users(m)[keep_entry]
    new_item = np.cumsum(keep_item) - 1
    new_user = np.cumsum(keep_user) - 1
    indices = new_item[m.indices[keep_entry]].astype(np.int32)
    n_users, n_items = int(keep_user.sum()), int(keep_item.sum())
    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(np.bincount(new_user[users], minlength=n_users), out=indptr[1:])
    matrix = sp.csr_matrix((m.data[keep_entry], indices, indptr), shape=(n_users, n_items))
    ui, ii = np.flatnonzero(keep_user), np.flatnonzero(keep_item)
    return ds.with_history(
        step,
        matrix=matrix,
        timestamps=None if ds.timestamps is None else ds.timestamps[keep_entry],
        user_ids=None if ds.user_ids is None else ds.user_ids[ui],
        item_ids=None if ds.item_ids is None else ds.item_ids[ii],
        user_features=None if ds.user_features is None else ds.user_features.iloc[ui],
        item_features=None if ds.item_features is None else ds.item_features.iloc[ii],
    )


def min_interactions(ds: Dataset, min_user: int = 0, min_item: int = 0, *,
                     iterate: bool = False) -> Dataset:
    """Keep users with >= ``min_user`` and items with >= ``min_item`` interactions.

    One pass (``iterate=False``): drop users below ``min_user``, then items below
    ``min_item`` counted on the remaining users; users may then fall below ``min_user``
    (even to zero). ``iterate=True`` repeats both steps until nothing changes, so every
    kept user and item meets its threshold (the k-core for ``min_user = min_item = k``).
    Users and items are renumbered in their old order; the history records
    ``min_interactions(user>=U,item>=I,one-pass|iterated)``.
    """
    for pname, v in (("min_user", min_user), ("min_item", min_item)):
        if int(v) != v or v < 0:
            raise InvalidParameterError(f"{pname} must be an integer >= 0, got {v}")
    m = ds.matrix
    entry_user = _entry_users(m)
    keep_user = np.ones(ds.n_users, bool)
    keep_item = np.ones(ds.n_items, bool)
    keep_entry = np.ones(m.nnz, bool)
    rounds = 0
    while True:
        rounds += 1
        ucount = np.bincount(entry_user[keep_entry], minlength=ds.n_users)
        new_user = keep_user & (ucount >= min_user)
        keep_entry &= new_user[entry_user]
        icount = np.bincount(m.indices[keep_entry], minlength=ds.n_items)
        new_item = keep_item & (icount >= min_item)
        keep_entry &= new_item[m.indices]
        changed = (new_user != keep_user).any() or (new_item != keep_item).any()
        keep_user, keep_item = new_user, new_item
        if not iterate or not changed:
            break
    mode = "iterated" if iterate else "one-pass"
    out = _subset(ds, keep_entry, keep_user, keep_item,
                  f"min_interactions(user>={min_user},item>={min_item},{mode})")
    log.info("min_interactions(%d, %d, %s): %d x %d, %d -> %d x %d, %d (%d rounds)",
             min_user, min_item, mode, ds.n_users, ds.n_items, ds.n_interactions,
             out.n_users, out.n_items, out.n_interactions, rounds)
    return out


def binarise(ds: Dataset, threshold: float | None = None) -> Dataset:
    """Implicit feedback: ratings ``> threshold`` become 1, the others are dropped;
    ``threshold=None`` keeps every interaction as 1. Users and items are kept (some may be
    left empty: apply :func:`min_interactions` afterwards if that matters). The result has
    no rating scale."""
    m = ds.matrix
    if threshold is None:
        keep = np.ones(m.nnz, bool)
        step = "binarise(all)"
    else:
        if not np.isfinite(threshold):
            raise InvalidParameterError(
                f"threshold must be a finite number or None, got {threshold}")
        keep = m.data > threshold
        step = f"binarise(rating>{threshold:g})"
    out = _subset(ds, keep, np.ones(ds.n_users, bool), np.ones(ds.n_items, bool), step)
    out.matrix.data[:] = 1.0
    return replace(out, rating_scale=None)


def cap_per_user(ds: Dataset, max_items: int, rng: np.random.Generator) -> Dataset:
    """Keep a uniformly random subset of at most ``max_items`` interactions per user
    (e.g. tau = 200 in DPPS-PNBM, which bounds each user's contribution)."""
    if int(max_items) != max_items or max_items < 1:
        raise InvalidParameterError(f"max_items must be an integer >= 1, got {max_items}")
    m = ds.matrix
    entry_user = _entry_users(m)
    order = np.lexsort((rng.random(m.nnz), entry_user))
    rank = np.empty(m.nnz, np.int64)
    rank[order] = np.arange(m.nnz) - m.indptr[entry_user[order]]
    keep = rank < max_items
    return _subset(ds, keep, np.ones(ds.n_users, bool), np.ones(ds.n_items, bool),
                   f"cap_per_user({int(max_items)})")
