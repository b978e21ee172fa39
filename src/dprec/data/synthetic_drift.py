"""Synthetic interaction data with a cold tail and drift in time: ``synth-<users>x<items>``.

The model of :mod:`dprec.data.synthetic` (low-rank affinity a_ui = x_u . y_i, log-normal
user activity, Plackett-Luce choice without replacement by Gumbel-top-k, ratings rising with
the affinity) with three changes that follow ML-100K's shape (issue 33 §2), measured by
:mod:`dprec.data.stats`:

- *cold tail*: the item quality q_i is two-piece log-normal over a normal-quantile grid
  z_i = Φ^-1((n - rank_i - 1/2) / n) in a random ranking: log q_i = ``tail_sigma`` z_i
  below the median, ``head_sigma`` z_i above. Its deep lower tail gives ML-100K's share of
  items with fewer than 10 users (31%; 29% here at 943 x 1682), where the Zipf law of
  ``synthetic-*`` gives 7% (a tail item is still in many heavy users' top half); the
  narrower head keeps the top items as concentrated as ML-100K's (top 1%: 7.6% of the
  interactions);
- *releases*: a share ``new_item_share`` of the items is released at a uniform time r_i in
  the span, the rest before it; an item's popularity at time t is
  w_i(t) = q_i (1 + ``release_boost`` e^{-(t - r_i)/``release_decay``}) after r_i, 0 before;
- *users in time*: user u is active over a window [a_u, b_u]: one session (log-normal
  length, median ``session_hours``) and, for a share ``returning_share``, an exponential
  extra stay (mean ``returning_days``). u's items are drawn with weight exp(a_ui) times the
  mean of w_i(t) over the window (closed form), each chosen item gets a time with density
  ∝ w_i(t) in the window, and the back-catalogue items' times are handed out in order of
  -``popular_first`` z_i + N(0, 1): popular items first, as users rate on MovieLens.
  Timestamps are whole seconds, made distinct within a user (t_j <- max(t_j, t_{j-1} + 1)
  in time order), so the latest item needs no tie rule.

The held-out "latest" item then depends on time: it is a newer and, at its time, a less
popular item than a random one of the user's (ML-100K: drift AUC 0.35, newer AUC 0.61;
:mod:`dprec.data.stats`). Deterministic from the seed: the model's draws come first from
``rng``, then each batch of users draws from its own child stream (``rng.spawn``), so the
thread count never changes the result. The oracle: :func:`synthetic_drift_truth`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri

from dprec.data.dataset import Dataset
from dprec.data.synthetic import (
    BASE_TIME,
    bound_arguments,
    choose_and_rate,
    default_interactions,
    gumbel_keys,
    latent_factors,
    memory_estimate,
    named_dataset,
    prepare,
    run_batches,
    user_activity,
)
from dprec.data.truth import SyntheticTruth
from dprec.errors import DataError
from dprec.random import SeedLike, random_generator

__all__ = [
    "ML100K_ACTIVITY", "DriftParams", "drift_default_interactions", "drift_memory_estimate",
    "synthetic_drift", "synthetic_drift_truth",
]

_DAY = 86_400.0
ML100K_ACTIVITY = 100_000 / 943
"""ML-100K's mean interactions per user (106); MovieLens users rate 100 to 170 items at every
size (ML-1M 165, ML-10M 143, ML-20M 144), so the density falls as the catalogue grows."""
_CANDIDATE_BYTES = 96
"""Bytes per (user, candidate) element of a batch beyond :func:`memory_estimate`'s: the
time draws (float64) and their orderings."""


@dataclass(frozen=True)
class DriftParams:
    """The time and popularity parameters of the model (module docstring); the defaults
    follow ML-100K's shape at its size."""

    tail_sigma: float = 3.2
    head_sigma: float = 1.7
    new_item_share: float = 0.2
    release_boost: float = 4.0
    release_decay_days: float = 60.0
    time_span_days: float = 3 * 365.0
    session_hours: float = 1.0
    returning_share: float = 0.3
    returning_days: float = 120.0
    popular_first: float = 0.4

    def check(self, max_user_fraction: float) -> None:
        """DataError for a parameter out of range."""
        for name in ("tail_sigma", "head_sigma", "release_boost", "popular_first"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise DataError(f"{name} must be a finite number >= 0, got {v}")
        for name in ("release_decay_days", "time_span_days", "session_hours",
                     "returning_days"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise DataError(f"{name} must be a finite number > 0, got {v}")
        if not 0 <= self.returning_share <= 1:
            raise DataError(f"returning_share must be in [0, 1], got {self.returning_share}")
        if not 0 <= self.new_item_share < 1 or self.new_item_share + max_user_fraction > 1:
            raise DataError(
                f"new_item_share must be in [0, 1 - max_user_fraction] (a user active "
                f"before every release must still find enough items), got "
                f"{self.new_item_share} with max_user_fraction {max_user_fraction}")


@dataclass(frozen=True)
class _Model:
    """The model's draws (times in seconds from the start of the span)."""

    z: np.ndarray
    log_q: np.ndarray
    k: np.ndarray
    user_f: np.ndarray
    item_f: np.ndarray
    factor_sd: np.ndarray
    new_items: np.ndarray
    release: np.ndarray
    """(n_items,) float64, -inf for the back catalogue."""


def _draw_model(a: Mapping[str, Any], hi: int, gen: np.random.Generator, p: DriftParams
                ) -> _Model:
    """The model's first draws from ``gen`` (the generator's arguments ``a``), in a fixed
    order."""
    n_users, n_items = int(a["n_users"]), int(a["n_items"])
    z = np.empty(n_items, np.float64)
    z[gen.permutation(n_items)] = ndtri((n_items - np.arange(n_items) - 0.5) / n_items)
    k = user_activity(n_users, int(a["n_interactions"]), int(a["min_user_interactions"]), hi,
                      a["activity_sigma"], gen)
    user_f, item_f, factor_sd = latent_factors(n_users, n_items, int(a["rank"]),
                                               a["affinity_scale"], a["spectrum_decay"], gen)
    n_new = int(round(p.new_item_share * n_items))
    new_items = np.sort(gen.permutation(n_items)[:n_new])
    release = np.full(n_items, -np.inf)
    release[new_items] = gen.random(n_new) * p.time_span_days * _DAY
    log_q = np.where(z < 0, p.tail_sigma, p.head_sigma) * z
    return _Model(z, log_q, k, user_f, item_f, factor_sd, new_items, release)


def drift_default_interactions(n_users: int, n_items: int) -> int:
    """The interactions of ``synth-<users>x<items>``: ML-100K's density (6.3%), but at most
    ML-100K's mean activity per user (:data:`ML100K_ACTIVITY`), as in the larger MovieLens
    releases (943 x 1682: 99,926, as ML-100K; 75,000 x 10,000: 7.95M, density 1.1%, where
    ML-10M has 1.3%)."""
    return min(default_interactions(n_users, n_items), max(1, round(ML100K_ACTIVITY * n_users)))


def drift_memory_estimate(n_users: int, n_items: int, n_interactions: int, rank: int = 16,
                          batch_elements: int = 1 << 23, n_threads: int = 2,
                          max_per_user: int | None = None) -> int:
    """Peak bytes of :func:`synthetic_drift`: :func:`memory_estimate` plus the time draws
    per (user, candidate) element of each thread's batch and 40 bytes per user."""
    rows = min(max(1, batch_elements // n_items), max(n_users, 1))
    kmax = min(n_items, max_per_user if max_per_user is not None else -(-n_items // 2))
    return (memory_estimate(n_users, n_items, n_interactions, rank, batch_elements,
                            n_threads, max_per_user)
            + 40 * n_users + n_threads * _CANDIDATE_BYTES * rows * kmax)


def synthetic_drift(
    n_users: int,
    n_items: int,
    n_interactions: int,
    *,
    rng: SeedLike,
    params: DriftParams | None = None,
    rank: int = 16,
    activity_sigma: float = 1.2,
    min_user_interactions: int = 20,
    max_user_fraction: float = 0.5,
    affinity_scale: float = 2.0,
    spectrum_decay: float = 1.0,
    name: str | None = None,
    batch_elements: int = 1 << 23,
    n_threads: int | None = None,
) -> Dataset:
    """A ``n_users`` x ``n_items`` dataset with exactly ``n_interactions`` distinct
    (user, item) interactions, ratings 1..5 and timestamps, with a cold tail and drift in
    time (module docstring; ``params``: :class:`DriftParams`). The other arguments are those
    of :func:`dprec.data.synthetic.synthetic`. Named ``synth-<users>x<items>`` unless
    ``name`` is given. Sizes that cannot fit in memory are refused before any draw."""
    args = dict(locals())  # the arguments by name, as the oracle binds them
    p = params or DriftParams()
    hi, threads = prepare(args, estimate=drift_memory_estimate, prefix="synth",
                          also=lambda: p.check(max_user_fraction))
    n_users, n_items, n_interactions = int(n_users), int(n_items), int(n_interactions)
    gen = random_generator(rng)
    m = _draw_model(args, hi, gen, p)
    span = p.time_span_days * _DAY
    session = np.maximum(60.0, np.exp(gen.normal(math.log(p.session_hours * 3600.0), 1.0,
                                                 n_users)))
    back = gen.random(n_users) < p.returning_share
    stay = np.where(back, gen.exponential(p.returning_days * _DAY, n_users), 0.0)
    length = np.minimum(session + stay, span)
    start = gen.random(n_users) * (span - length)
    windows = np.stack([start, start + length])

    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(m.k, out=indptr[1:])
    out = (np.empty(n_interactions, np.int32), np.empty(n_interactions, np.float32),
           np.empty(n_interactions, np.int64))
    order = np.argsort(m.k, kind="stable")
    batch = max(1, int(batch_elements) // n_items)
    batches = [order[s:s + batch] for s in range(0, n_users, batch)]
    children = gen.spawn(len(batches))
    item_t = np.ascontiguousarray(m.item_f.T)
    log_q = m.log_q.astype(np.float32)

    def run(b: int, affinity: np.ndarray, keys: np.ndarray) -> None:
        users = np.sort(batches[b])
        affinity, keys = affinity[:len(users)], keys[:len(users)]
        np.matmul(m.user_f[users], item_t, out=affinity)
        _fill_batch(users, m, p, affinity, keys, log_q, affinity_scale, windows[:, users],
                    indptr, out, children[b])

    run_batches(len(batches), (batch, n_items), threads, run)
    return named_dataset(name or f"synth-{n_users}x{n_items}",
                         sp.csr_matrix((out[1], out[0], indptr), shape=(n_users, n_items)),
                         out[2], (m.user_f, m.item_f, m.factor_sd), len(batches))


def synthetic_drift_truth(n_users: int, n_items: int, n_interactions: int, *,
                          rng: SeedLike, **model: Any) -> SyntheticTruth:
    """The oracle of ``synthetic_drift(n_users, n_items, n_interactions, rng=..., **model)``
    (a fresh ``rng`` with the same seed): its model draws replayed, no interaction drawn.
    Release times are in seconds since the epoch, like the data's timestamps."""
    a = bound_arguments(synthetic_drift, n_users, n_items, n_interactions, rng, model)
    p = a["params"] or DriftParams()
    hi, _ = prepare(a, memory=False, also=lambda: p.check(a["max_user_fraction"]))
    m = _draw_model(a, hi, random_generator(rng), p)
    return SyntheticTruth(log_popularity=m.log_q, user_factors=m.user_f,
                          item_factors=m.item_f, release=m.release + BASE_TIME,
                          boost=p.release_boost, decay=p.release_decay_days * _DAY)


def _window_log_weight(release: np.ndarray, a: np.ndarray, b: np.ndarray, boost: float,
                       decay: float) -> np.ndarray:
    """log of the mean over [a_u, b_u] of w_i(t) / q_i, for items released at ``release``
    (rows: users, columns: items; -inf when released after b_u)."""
    lo = np.maximum(a[:, None], release[None, :])
    length = (b - a)[:, None]
    flat = np.maximum(b[:, None] - lo, 0.0)
    bump = boost * decay * (np.exp(-(lo - release) / decay)
                            - np.exp(-(b[:, None] - release) / decay))
    mass = (flat + np.where(flat > 0, bump, 0.0)) / length
    with np.errstate(divide="ignore"):
        return np.log(mass)


def _item_times(r: np.ndarray, a: np.ndarray, b: np.ndarray, boost: float, decay: float,
                rng: np.random.Generator) -> np.ndarray:
    """Times with density ∝ 1 + boost e^{-(t - r)/decay} on [max(a, r), b] (uniform for the
    back catalogue, r = -inf): a mixture of a uniform and a truncated exponential."""
    lo = np.maximum(a, r)
    width = np.maximum(b - lo, 0.0)
    with np.errstate(invalid="ignore"):
        bump = np.nan_to_num(boost * decay * np.exp(-(lo - r) / decay)
                             * -np.expm1(-width / decay))
    u = rng.random((2, *r.shape))
    use_bump = u[0] * (width + bump) < bump
    exp_t = lo - decay * np.log1p(-u[1] * -np.expm1(-width / decay))
    return np.where(use_bump, exp_t, lo + u[1] * width)


def _fill_batch(users: np.ndarray, m: _Model, p: DriftParams, affinity: np.ndarray,
                keys: np.ndarray, log_q: np.ndarray, scale: float, window: np.ndarray,
                indptr: np.ndarray, out: tuple[np.ndarray, np.ndarray, np.ndarray],
                rng: np.random.Generator) -> None:
    """Draw the batch's items, ratings and times; write them into the CSR arrays ``out``
    (items, ratings, timestamps). ``keys`` is a scratch block of the affinity's shape."""
    k = m.k[users]
    kmax = int(k.max())
    a, b = window
    decay = p.release_decay_days * _DAY
    gumbel_keys(affinity, keys, log_q, rng)
    if len(m.new_items):
        keys[:, m.new_items] += _window_log_weight(m.release[m.new_items], a, b,
                                                   p.release_boost, decay).astype(np.float32)
    items, items_c, valid, r = choose_and_rate(keys, affinity, k, scale, rng)
    rel = m.release[items_c]
    times = _item_times(rel, a[:, None], b[:, None], p.release_boost, decay, rng)
    times = _popular_first(times, valid & ~np.isfinite(rel),
                           -p.popular_first * m.z[items_c] + rng.standard_normal(items.shape))
    ts = _distinct_seconds(times, valid)
    dest = (indptr[users][:, None] + np.arange(kmax))[valid]
    out[0][dest] = items[valid]
    out[1][dest] = r[valid]
    out[2][dest] = ts[valid]


def _popular_first(times: np.ndarray, movable: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``times`` with, in each row, the ``movable`` entries' times handed out in ascending
    order of ``key`` (ties by position; stable sorts)."""
    t = np.where(movable, times, np.inf)
    sorted_t = np.sort(t, axis=1)
    rank = np.argsort(np.argsort(np.where(movable, key, np.inf), axis=1, kind="stable"),
                      axis=1, kind="stable")
    return np.where(movable, np.take_along_axis(sorted_t, rank, axis=1), times)


def _distinct_seconds(times: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Whole seconds since the epoch, strictly increasing within a row in time order
    (t_j <- max(t_j, t_{j-1} + 1); ties in the time by position)."""
    t = np.where(valid, np.floor(times), np.inf)
    order = np.argsort(t, axis=1, kind="stable")
    s = np.take_along_axis(t, order, axis=1)
    s = np.where(np.isfinite(s), s, 0.0).astype(np.int64)
    j = np.arange(s.shape[1])
    s = np.maximum.accumulate(s - j, axis=1) + j
    out = np.empty_like(s)
    np.put_along_axis(out, order, s, axis=1)
    return out + BASE_TIME
