"""Shape statistics of an interaction data set: popularity concentration, activity, the cold
tail and drift in time (issue 33 §2: the generator documented beside ML-100K).

- ``popularity_gini``: the Gini coefficient of the interactions per item, G = 2 Σ_i i x_(i) /
  (n Σ_i x_i) - (n + 1) / n over the counts sorted ascending (0: uniform, -> 1: one item);
- ``top1pct_share``: the share of all interactions on the 1% most popular items (at least one
  item; ties in the count do not matter, only the counts are summed);
- ``items_under_10``: the share of items with fewer than 10 users (the cold tail);
- ``user_q*`` / ``item_q*``: quantiles of the interactions per user and per item;
- drift, at each user's held-out "latest" interaction (the leave-one-out rule of
  :data:`dprec.evaluation.split.LATEST_RULE_DOC`: the largest (timestamp, item id) pair) at
  time t_u, against the user's other items: an item's *recent popularity* at t_u is the
  number of other users' interactions with it in the window [s_u, t_u) that holds the
  ``window`` share of all interactions just before t_u (the user's own interactions are left
  out).
  ``drift_lift`` = mean_u recent(held_u) / mean_u mean_{j in u's others} recent(j): 1 when the
  held-out item is a uniformly random one of the user's, above 1 when what is latest is what
  is popular then. ``drift_auc`` = mean_u P(recent(held_u) > recent(j)) over u's other items
  j, ties counting one half: 0.5 without drift. ``newer_auc``: the same with the item's first
  interaction in the data (its release, as seen) in place of the recent popularity: above 0.5
  when the held-out item is a newer one.
"""

from __future__ import annotations

import math

import numpy as np

from dprec.data.dataset import Dataset, item_counts

__all__ = ["DRIFT_WINDOW", "dataset_stats", "drift_stats", "gini"]

DRIFT_WINDOW = 0.05
"""The share of all interactions, just before a held-out time, over which the recent
popularity is counted."""

_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


def gini(counts: np.ndarray) -> float:
    """The Gini coefficient of non-negative ``counts`` (0 for none or all zero)."""
    x = np.sort(np.asarray(counts, np.float64))
    n, total = len(x), float(x.sum())
    if n == 0 or total <= 0:
        return 0.0
    return float(2.0 * np.dot(np.arange(1, n + 1), x) / (n * total) - (n + 1) / n)


def dataset_stats(ds: Dataset, window: float = DRIFT_WINDOW) -> dict[str, float | int | str]:
    """The statistics of the module docstring (drift ones only if ``ds`` has timestamps)."""
    per_user = np.diff(ds.matrix.indptr)
    per_item = item_counts(ds.matrix)
    out: dict[str, float | int | str] = {
        "name": ds.name, "users": ds.n_users, "items": ds.n_items,
        "interactions": ds.n_interactions, "density": ds.density,
        "popularity_gini": gini(per_item),
    }
    top = max(1, math.ceil(0.01 * ds.n_items))
    total = max(1, int(per_item.sum()))
    out["top1pct_share"] = float(np.sort(per_item)[::-1][:top].sum() / total)
    out["items_under_10"] = float(np.mean(per_item < 10)) if ds.n_items else 0.0
    for label, counts in (("user", per_user), ("item", per_item)):
        if len(counts):
            for q, v in zip(_QUANTILES, np.quantile(counts, _QUANTILES), strict=True):
                out[f"{label}_q{round(q * 100)}"] = float(v)
            out[f"{label}_max"] = int(counts.max())
    if ds.timestamps is not None:
        out.update(drift_stats(ds, window))
    return out


def drift_stats(ds: Dataset, window: float = DRIFT_WINDOW) -> dict[str, float]:
    """``drift_lift``, ``drift_auc`` and ``newer_auc`` of the module docstring."""
    m = ds.matrix
    ts = np.asarray(ds.timestamps, np.int64)
    counts = np.diff(m.indptr)
    rows = np.repeat(np.arange(m.shape[0]), counts)
    items = m.indices.astype(np.int64)
    eligible = counts >= 2
    if not eligible.any():
        return {"drift_lift": math.nan, "drift_auc": math.nan, "newer_auc": math.nan}
    order = np.lexsort((items, ts, rows))  # the latest rule: (timestamp, item id) per user
    held = np.full(m.shape[0], -1, np.int64)
    held[eligible] = order[m.indptr[1:][eligible] - 1]
    t_held = np.where(eligible, ts[np.maximum(held, 0)], 0)
    # window start: the time of the interaction `n_win` places before the held-out time
    sorted_t = np.sort(ts)
    n_win = max(1, math.ceil(window * m.nnz))
    before = np.searchsorted(sorted_t, t_held, "left")
    start = sorted_t[np.maximum(before - n_win, 0)]
    t0 = int(sorted_t[0])
    span = int(sorted_t[-1]) - t0 + 1
    keys = np.sort(items * span + (ts - t0))

    def recent(item: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        base = item * span - t0
        return (np.searchsorted(keys, base + hi, "left")
                - np.searchsorted(keys, base + lo, "left")).astype(np.float64)

    is_held = np.zeros(m.nnz, bool)
    is_held[held[eligible]] = True
    other = eligible[rows] & ~is_held
    u_o = rows[other]
    c_held = recent(items[held[eligible]], start[eligible], t_held[eligible])
    c_other = recent(items[other], start[u_o], t_held[u_o])
    own = (ts[other] >= start[u_o]) & (ts[other] < t_held[u_o])
    c_other -= own  # the user's own earlier interaction is not popularity
    n_other = np.bincount(u_o, minlength=m.shape[0])[eligible].astype(np.float64)
    users = np.flatnonzero(eligible)
    held_of = np.full(m.shape[0], 0.0)
    held_of[users] = c_held
    mean_other = np.bincount(u_o, c_other, m.shape[0])[eligible] / n_other
    lift = float(c_held.mean() / mean_other.mean()) if mean_other.mean() > 0 else math.nan
    first = np.full(m.shape[1], np.iinfo(np.int64).max)
    np.minimum.at(first, items, ts)
    first_held = np.zeros(m.shape[0], np.int64)
    first_held[users] = first[items[held[eligible]]]
    return {
        "drift_lift": lift,
        "drift_auc": _auc(held_of[u_o], c_other, u_o, n_other, eligible),
        "newer_auc": _auc(first_held[u_o].astype(np.float64),
                          first[items[other]].astype(np.float64), u_o, n_other, eligible),
    }


def _auc(held: np.ndarray, other: np.ndarray, users: np.ndarray, n_other: np.ndarray,
         eligible: np.ndarray) -> float:
    """mean over users of P(held > other), ties one half (``held`` repeated per other)."""
    wins = (held > other) + 0.5 * (held == other)
    per_user = np.bincount(users, wins, len(eligible))[eligible] / n_other
    return float(per_user.mean())
