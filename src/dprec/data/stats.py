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
  time t_u, against the user's other items (32 drawn uniformly with replacement per user,
  from seed 0: a function of the data): an item's *recent popularity* at t_u is the
  number of other users' interactions with it in the window [s_u, t_u) that holds the
  ``window`` share of all interactions just before t_u (the user's own interactions are left
  out).
  ``drift_lift`` = mean_u recent(held_u) / mean_u mean_j recent(j), j u's others: 1 when the
  held-out item is a uniformly random one of the user's, above 1 when what is latest is what
  is popular then. ``drift_auc`` = mean_u P(recent(held_u) > recent(j)) over u's other items
  j, ties counting one half: 0.5 without drift. ``newer_auc``: the same with the item's first
  interaction in the data (its release, as seen) in place of the recent popularity: above 0.5
  when the held-out item is a newer one.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

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


def drift_stats(ds: Dataset, window: float = DRIFT_WINDOW, samples: int = 32,
                rng: np.random.Generator | None = None) -> dict[str, float]:
    """``drift_lift``, ``drift_auc`` and ``newer_auc`` of the module docstring, the user's
    other items being ``samples`` draws (uniform, with replacement) from them per user, from
    ``rng`` (default: seed 0, so the statistics are a function of the data)."""
    m = ds.matrix
    ts = np.asarray(ds.timestamps, np.int64)
    counts = np.diff(m.indptr)
    users = np.flatnonzero(counts >= 2)
    nan = {"drift_lift": math.nan, "drift_auc": math.nan, "newer_auc": math.nan}
    if len(users) == 0:
        return nan
    items = m.indices
    held = _latest(m, ts)[users]
    t_held = ts[held]
    gen = rng if rng is not None else np.random.default_rng(0)
    # `samples` other interactions per user: a uniform offset that skips the held-out one
    offset = np.floor(gen.random((len(users), samples)) * (counts[users, None] - 1))
    other = m.indptr[users, None] + offset.astype(np.int64)
    other += other >= held[:, None]
    t0 = int(ts.min())
    span = int(ts.max()) - t0 + 1
    keys = np.sort(items.astype(np.int64) * span + (ts - t0))  # by (item, time)
    sorted_t = np.sort(ts)
    before = np.searchsorted(sorted_t, t_held, "left")
    start = sorted_t[np.maximum(before - max(1, math.ceil(window * m.nnz)), 0)]

    def recent(item: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Interactions with ``item`` in [lo, hi)."""
        base = item.astype(np.int64) * span - t0
        return (np.searchsorted(keys, base + hi, "left")
                - np.searchsorted(keys, base + lo, "left")).astype(np.float64)

    c_held = recent(items[held], start, t_held)
    c_other = recent(items[other], start[:, None], t_held[:, None])
    c_other -= (ts[other] >= start[:, None]) & (ts[other] < t_held[:, None])  # not one's own
    first = keys[np.searchsorted(keys, np.arange(m.shape[1], dtype=np.int64) * span)
                 .clip(max=len(keys) - 1)] % span  # each item's first interaction, minus t0
    f_held, f_other = first[items[held]], first[items[other]]
    mean_other = c_other.mean(axis=1)
    return {
        "drift_lift": (float(c_held.mean() / mean_other.mean()) if mean_other.mean() > 0
                       else math.nan),
        "drift_auc": _auc(c_held[:, None], c_other),
        "newer_auc": _auc(f_held[:, None], f_other),
    }


def _latest(m: sp.csr_matrix, ts: np.ndarray) -> np.ndarray:
    """Per user (with at least one interaction), the position of the largest (timestamp,
    item id) pair: the leave-one-out rule ``latest``; -1 for a user with none."""
    counts = np.diff(m.indptr)
    rows = np.repeat(np.arange(m.shape[0], dtype=np.int32), counts)
    key = (ts - ts.min()) * m.shape[1] + m.indices
    best = np.full(m.shape[0], -1, np.int64)
    some = counts > 0
    best[some] = np.maximum.reduceat(key, m.indptr[:-1][some])
    out = np.full(m.shape[0], -1, np.int64)
    at = np.flatnonzero(key == best[rows])
    out[rows[at]] = at
    return out


def _auc(held: np.ndarray, other: np.ndarray) -> float:
    """mean over users (rows) of P(held > other), ties counting one half."""
    return float(((held > other) + 0.5 * (held == other)).mean())
