"""Synthetic interaction data with MovieLens-like statistics, at any size.

The generative model, per user u with activity k_u:
- item popularity is Zipf-like: pop_i ∝ (rank_i + 1)^-a over a random ranking of items;
- activity is heavy-tailed: k_u = m + X_u with X_u log-normal, scaled so that the k_u sum
  exactly to the requested number of interactions, capped at a fraction of the catalogue;
- preferences are low-rank: affinity a_ui = x_u . y_i with Gaussian factors of ``rank``
  dimensions, dimension d carrying a share ∝ (d + 1)^-``spectrum_decay`` of the variance
  (a few dominant tastes, like genres), a_ui having standard deviation ``affinity_scale``;
- u's k_u distinct items are drawn without replacement, each draw picking item i with
  probability ∝ pop_i exp(a_ui) among the items not yet drawn (Plackett-Luce), done exactly
  by Gumbel-top-k: the k_u largest of log pop_i + a_ui + G_ui, G_ui ~ Gumbel(0, 1);
- ratings in 1..5 rise with the affinity: round(clip(mu + s z_ui + noise)), z = a / scale;
- each user has a start time and strictly increasing timestamps (exponential gaps), the
  items taking the time slots in random order.

Users are processed in batches over a dense (batch x items) score block, grouped by
activity so that the partial sort of each block only keeps as many candidates as its
heaviest user needs. Every batch draws from its own child generator (``rng.spawn``), so the
result depends on the seed and ``batch_elements`` only, not on the thread count.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.data.truth import SyntheticTruth
from dprec.errors import DataError, DprecError, check_positive
from dprec.random import SeedLike, random_generator
from dprec.selection import top_k, top_k_row

__all__ = [
    "BASE_TIME", "bound_arguments", "check_memory", "check_sizes", "choose_and_rate",
    "default_interactions", "factor_side_features", "gumbel_keys", "latent_factors",
    "machine_memory", "memory_estimate", "named_dataset", "prepare", "require_memory",
    "run_batches", "synthetic", "synthetic_truth", "user_activity",
]

log = logging.getLogger(__name__)

BASE_TIME = 946_684_800  # 2000-01-01, seconds since the epoch
_TIME_SPAN = 3 * 365 * 86_400
_GIB = 1 << 30
_NON_NEGATIVE = ("popularity_exponent", "affinity_scale", "spectrum_decay")
"""The generators' parameters that must be finite and >= 0, in the order they are checked."""


def machine_memory() -> int | None:
    """Bytes of memory this process may use: physical memory, or the cgroup limit if lower
    (None if unknown)."""
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        pass
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    return min(sizes) if sizes else None


def require_memory(need: int, what: str, instead: str) -> None:
    """DprecError, before any work, when ``need`` bytes (the estimate of ``what``) exceed
    this machine's memory; the message gives the estimate and ``instead`` (what to pass)."""
    have = machine_memory()
    if have is not None and need > have:
        raise DprecError(f"{what} needs about {need / _GIB:,.1f} GiB of memory, this machine "
                         f"has {have / _GIB:,.1f} GiB; {instead}")


def memory_estimate(n_users: int, n_items: int, n_interactions: int, rank: int = 16,
                    batch_elements: int = 1 << 23, n_threads: int = 2,
                    max_per_user: int | None = None) -> int:
    """Peak bytes :func:`synthetic` needs: 16 per interaction (item, rating, time), the
    factors and per-user arrays, and per thread about 20 per element of its dense block
    and 64 per element of its batch's (users x heaviest activity) candidate arrays
    (``max_per_user``, default half the items; measured 59 at 50,000 x 10,000)."""
    rows = min(max(1, batch_elements // n_items), max(n_users, 1))
    kmax = min(n_items, max_per_user if max_per_user is not None else -(-n_items // 2))
    return (16 * n_interactions + (48 + 4 * rank) * n_users + (16 + 8 * rank) * n_items
            + n_threads * (20 * rows * n_items + 64 * rows * kmax))


def check_memory(n_users: int, n_items: int, n_interactions: int, *,
                 estimate: Callable[..., int] | None = None, prefix: str = "synthetic",
                 **kwargs: int) -> None:
    """DataError, up front, if the data cannot fit in this machine's memory (``estimate``:
    the generator's peak bytes, default :func:`memory_estimate`; ``prefix``: its names')."""
    need = (estimate or memory_estimate)(n_users, n_items, n_interactions, **kwargs)
    have = machine_memory()
    if have is not None and need > have:
        raise DataError(
            f"synthetic data of {n_users:,} users x {n_items:,} items with "
            f"{n_interactions:,} interactions needs about {need / _GIB:,.1f} GiB of memory, "
            f"this machine has {have / _GIB:,.1f} GiB; choose fewer users, items or "
            f"interactions ({prefix}-<users>x<items>-<interactions>)"
        )


def default_interactions(n_users: int, n_items: int, density: float = 0.063) -> int:
    """ML-100K's density (6.3%) at the given size."""
    return max(1, round(density * n_users * n_items))


def user_activity(n_users: int, total: int, lo: int, hi: int, sigma: float,
              rng: np.random.Generator) -> np.ndarray:
    """Integer activities in [lo, hi] summing exactly to ``total``: lo + a log-normal excess
    scaled (by bisection) to the remaining mass, rounded by largest remainder."""
    extra_total = total - n_users * lo
    cap = hi - lo
    k = np.full(n_users, lo, np.int64)
    if extra_total == 0 or cap == 0:
        return k
    w = rng.lognormal(0.0, sigma, n_users)
    s_lo, s_hi = 0.0, extra_total / w.sum()
    while np.minimum(w * s_hi, cap).sum() < extra_total:
        s_hi *= 2.0
    for _ in range(200):
        s = 0.5 * (s_lo + s_hi)
        if np.minimum(w * s, cap).sum() < extra_total:
            s_lo = s
        else:
            s_hi = s
    x = np.minimum(w * s_hi, cap)
    base = np.floor(x).astype(np.int64)
    short = extra_total - int(base.sum())
    if short > 0:
        frac = np.where(base < cap, x - base, -1.0)
        base[top_k_row(frac, short)] += 1
    elif short < 0:
        frac = np.where(base > 0, x - base, 2.0)
        base[top_k_row(-frac, -short)] -= 1
    return k + base


def latent_factors(n_users: int, n_items: int, rank: int, affinity_scale: float,
                   spectrum_decay: float, gen: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user factors, item factors, per-dimension sd), Gaussian, float32, users drawn first:
    dimension d carries variance ∝ (d + 1)^-spectrum_decay, so that the affinity x_u . y_i
    has standard deviation about ``affinity_scale``."""
    spectrum = np.arange(1, rank + 1, dtype=np.float64) ** -spectrum_decay
    factor_sd = np.sqrt(affinity_scale * spectrum / np.linalg.norm(spectrum)).astype(np.float32)
    user_f = (gen.standard_normal((n_users, rank), np.float32) * factor_sd).astype(np.float32)
    item_f = (gen.standard_normal((n_items, rank), np.float32) * factor_sd).astype(np.float32)
    return user_f, item_f, factor_sd


def run_batches(n_batches: int, block: tuple[int, int], threads: int,
                run: Callable[[int, np.ndarray, np.ndarray], None]) -> None:
    """``run(b, affinity, keys)`` for every batch b, on ``threads`` threads, each thread with
    its own two float32 blocks of shape ``block`` (reused, to avoid page faults). The
    result must not depend on the thread count: each batch draws from its own stream."""
    local = threading.local()

    def one(b: int) -> None:
        if not hasattr(local, "buffers"):
            local.buffers = np.empty((2, *block), np.float32)
        run(b, local.buffers[0], local.buffers[1])

    if threads > 1 and n_batches > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(n_batches)))
    else:
        for b in range(n_batches):
            one(b)


def check_sizes(n_users: int, n_items: int, n_interactions: int, *, rank: int,
                batch_elements: int, min_user_interactions: int, max_user_fraction: float,
                activity_sigma: float, **non_negative: float) -> int:
    """DataError unless the sizes and parameters are valid (``non_negative``: finite numbers
    >= 0, by name); returns the per-user cap max(min, ceil(max_user_fraction * n_items))."""
    for pname, v in (("n_users", n_users), ("n_items", n_items),
                     ("n_interactions", n_interactions), ("rank", rank),
                     ("batch_elements", batch_elements)):
        if int(v) != v or v < 1:
            raise DataError(f"{pname} must be an integer >= 1, got {v}")
    if int(min_user_interactions) != min_user_interactions or min_user_interactions < 1:
        raise DataError(f"min_user_interactions must be an integer >= 1, "
                        f"got {min_user_interactions}")
    if not 0 < max_user_fraction <= 1:
        raise DataError(f"max_user_fraction must be in (0, 1], got {max_user_fraction}")
    check_positive("activity_sigma", activity_sigma)
    for pname, x in non_negative.items():
        if not (math.isfinite(x) and x >= 0):
            raise DataError(f"{pname} must be a finite number >= 0, got {x}")
    n_users, n_items, n_interactions = int(n_users), int(n_items), int(n_interactions)
    hi = max(int(min_user_interactions), math.ceil(max_user_fraction * n_items))
    if n_items >= 2**31:
        raise DataError(f"n_items must be < 2^31 (32-bit item indices), got {n_items}")
    if min_user_interactions > n_items:
        raise DataError(f"min_user_interactions must be <= n_items, got "
                        f"{min_user_interactions} > {n_items}")
    if not n_users * min_user_interactions <= n_interactions <= n_users * hi:
        raise DataError(
            f"n_interactions must be between n_users * min_user_interactions = "
            f"{n_users * min_user_interactions} and n_users * {hi} (the per-user cap "
            f"{max_user_fraction:g} * n_items), got {n_interactions}"
        )
    return hi


def prepare(args: Mapping[str, Any], *, estimate: Callable[..., int] | None = None,
            prefix: str = "synthetic", memory: bool = True,
            also: Callable[[], None] | None = None) -> tuple[int, int]:
    """Check a generator's arguments (its parameter names to values) before any draw:
    :func:`check_sizes`, then the generator's own checks ``also``, then, with ``memory``,
    :func:`check_memory` (``estimate``, ``prefix``: as there). Returns (per-user cap,
    thread count: ``n_threads`` or min(2, cpu count))."""
    hi = check_sizes(args["n_users"], args["n_items"], args["n_interactions"],
                     rank=args["rank"], batch_elements=args["batch_elements"],
                     min_user_interactions=args["min_user_interactions"],
                     max_user_fraction=args["max_user_fraction"],
                     activity_sigma=args["activity_sigma"],
                     **{k: args[k] for k in _NON_NEGATIVE if k in args})
    if also is not None:
        also()
    threads = args.get("n_threads") or min(2, os.cpu_count() or 1)
    if memory:
        check_memory(int(args["n_users"]), int(args["n_items"]), int(args["n_interactions"]),
                     estimate=estimate, prefix=prefix, rank=int(args["rank"]),
                     batch_elements=int(args["batch_elements"]), n_threads=threads,
                     max_per_user=hi)
    return hi, threads


def bound_arguments(generator: Callable[..., Dataset], n_users: int, n_items: int,
                    n_interactions: int, rng: SeedLike, model: Mapping[str, Any]
                    ) -> dict[str, Any]:
    """The arguments of ``generator(n_users, n_items, n_interactions, rng=rng, **model)``
    with its own defaults filled in, so that an oracle has no second copy of them; a
    DataError for a name the generator does not take."""
    try:
        bound = inspect.signature(generator).bind(n_users, n_items, n_interactions, rng=rng,
                                                  **model)
    except TypeError as e:
        raise DataError(f"{generator.__name__}: {e}") from None
    bound.apply_defaults()
    return bound.arguments


def named_dataset(name: str, matrix: sp.csr_matrix, timestamps: np.ndarray,
                  factors: tuple[np.ndarray, np.ndarray, np.ndarray], n_batches: int
                  ) -> Dataset:
    """The generated :class:`Dataset` (ids 0..n-1, ratings 1..5, the side features of
    ``factors``: user, item, per-dimension sd), logged with its sizes."""
    n_users, n_items = matrix.shape
    log.info("%s: %d users x %d items, %d interactions, %d batches", name, n_users, n_items,
             matrix.nnz, n_batches)
    user_features, item_features = factor_side_features(*factors)
    return Dataset(name=name, matrix=matrix, timestamps=timestamps,
                   user_ids=np.arange(n_users, dtype=np.int64),
                   item_ids=np.arange(n_items, dtype=np.int64), user_features=user_features,
                   item_features=item_features, rating_scale=(1.0, 5.0))


def _model(a: Mapping[str, Any], hi: int, gen: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first draws of :func:`synthetic` (arguments ``a``), in its order: (log
    popularity, activities, user factors, item factors, factor sd)."""
    n_items = int(a["n_items"])
    log_pop = np.empty(n_items, np.float32)
    log_pop[gen.permutation(n_items)] = -a["popularity_exponent"] * np.log(
        np.arange(1, n_items + 1, dtype=np.float64))
    k = user_activity(int(a["n_users"]), int(a["n_interactions"]),
                      int(a["min_user_interactions"]), hi, a["activity_sigma"], gen)
    user_f, item_f, factor_sd = latent_factors(int(a["n_users"]), n_items, int(a["rank"]),
                                               a["affinity_scale"], a["spectrum_decay"], gen)
    return log_pop, k, user_f, item_f, factor_sd


def synthetic_truth(n_users: int, n_items: int, n_interactions: int, *, rng: SeedLike,
                    **model: Any) -> SyntheticTruth:
    """The oracle of ``synthetic(n_users, n_items, n_interactions, rng=..., **model)`` (a
    fresh ``rng`` with the same seed): its first draws replayed, no interaction drawn.
    Scores are log pop_i + a_ui (:class:`dprec.data.truth.SyntheticTruth`)."""
    a = bound_arguments(synthetic, n_users, n_items, n_interactions, rng, model)
    hi, _ = prepare(a, memory=False)
    log_pop, _, user_f, item_f, _ = _model(a, hi, random_generator(rng))
    return SyntheticTruth(log_popularity=log_pop.astype(np.float64), user_factors=user_f,
                          item_factors=item_f, release=np.full(int(n_items), -np.inf))


def synthetic(
    n_users: int,
    n_items: int,
    n_interactions: int,
    *,
    rng: SeedLike,
    rank: int = 16,
    popularity_exponent: float = 1.3,
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
    (user, item) interactions, ratings 1..5 and timestamps (model in the module docstring).

    ``rng``: a Generator or a seed. ``popularity_exponent``: Zipf exponent a of the item
    popularity. ``activity_sigma``: log-normal sigma of user activity. Each user gets at
    least ``min_user_interactions`` and at most ``ceil(max_user_fraction * n_items)``.
    ``affinity_scale``: standard deviation of the low-rank affinity (0 removes the
    preference structure); ``spectrum_decay`` how fast its dimensions weaken. The defaults
    give ML-100K-like statistics at its size (top 10% of items: ~45% of interactions,
    mean rating ~3.55; item-kNN clearly ahead of popularity). ``batch_elements`` bounds
    the dense block (users x items) of one batch (about 20 bytes per element at peak, per
    thread). ``n_threads`` defaults to min(2, cpu count). Named
    ``synthetic-<users>x<items>`` unless ``name`` is given. Sizes that cannot fit in this
    machine's memory (:func:`memory_estimate`) are refused before anything is drawn.
    """
    args = dict(locals())  # the arguments by name, as the oracle binds them
    hi, threads = prepare(args)
    n_users, n_items, n_interactions = int(n_users), int(n_items), int(n_interactions)
    gen = random_generator(rng)
    log_pop, k, user_f, item_f, factor_sd = _model(args, hi, gen)
    start = BASE_TIME + gen.integers(0, _TIME_SPAN, n_users)
    mean_gap = np.exp(gen.normal(math.log(6 * 3600.0), 1.5, n_users))
    matrix, timestamps, n_batches = _draw_interactions(
        k, n_interactions, log_pop, user_f, item_f, affinity_scale, start, mean_gap, gen,
        batch=max(1, int(batch_elements) // n_items), threads=threads)
    return named_dataset(name or f"synthetic-{n_users}x{n_items}", matrix, timestamps,
                         (user_f, item_f, factor_sd), n_batches)


def _draw_interactions(k: np.ndarray, n_interactions: int, log_pop: np.ndarray,
                       user_f: np.ndarray, item_f: np.ndarray, affinity_scale: float,
                       start: np.ndarray, mean_gap: np.ndarray, gen: np.random.Generator, *,
                       batch: int, threads: int) -> tuple[sp.csr_matrix, np.ndarray, int]:
    """Every user's ``k[u]`` items, ratings and timestamps (:func:`_fill_batch`), users in
    batches of ``batch`` grouped by activity, each batch from its own child of ``gen``, on
    ``threads`` threads. Returns (the ratings as CSR, timestamps in CSR order, batches)."""
    n_users, n_items = len(k), len(log_pop)
    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(k, out=indptr[1:])
    indices = np.empty(n_interactions, np.int32)
    ratings = np.empty(n_interactions, np.float32)
    timestamps = np.empty(n_interactions, np.int64)

    order = np.argsort(k, kind="stable")
    batches = [order[s:s + batch] for s in range(0, n_users, batch)]
    children = gen.spawn(len(batches))
    item_t = np.ascontiguousarray(item_f.T)

    def run(b: int, affinity: np.ndarray, keys: np.ndarray) -> None:
        users = np.sort(batches[b])
        affinity, keys = affinity[:len(users)], keys[:len(users)]
        np.matmul(user_f[users], item_t, out=affinity)
        _fill_batch(users, k[users], affinity, keys, log_pop, affinity_scale,
                    start[users], mean_gap[users], indptr, indices, ratings, timestamps,
                    children[b])

    run_batches(len(batches), (batch, n_items), threads, run)
    matrix = sp.csr_matrix((ratings, indices, indptr), shape=(n_users, n_items))
    return matrix, timestamps, len(batches)


def factor_side_features(user_f: np.ndarray, item_f: np.ndarray, factor_sd: np.ndarray,
                   dims: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Side features read off the latent factors (no further randomness): a user's ``taste``
    is the strongest of the first ``dims`` taste dimensions with its sign (e.g. "t2-"); an
    item's ``genres`` are the first ``dims`` dimensions where its factor is beyond half a
    standard deviation, signed ("g0+|g3-"), like MovieLens genres. Side-feature models (seed
    002) then have a real but partial signal, as they do on MovieLens."""
    d = min(dims, user_f.shape[1])
    sd = np.where(factor_sd[:d] > 0, factor_sd[:d], 1.0)  # affinity_scale = 0: no taste
    z = user_f[:, :d] / sd
    top = np.argmax(np.abs(z), axis=1)
    sign = np.where(z[np.arange(len(z)), top] >= 0, "+", "-")
    taste = np.char.add(np.char.add("t", top.astype(str)), sign)
    y = item_f[:, :d] / sd
    tags = [np.where(y[:, j] > 0.5, f"g{j}+", np.where(y[:, j] < -0.5, f"g{j}-", ""))
            for j in range(d)]
    genres = ["|".join(t for t in row if t) for row in zip(*tags, strict=True)] if d else []
    users = pd.DataFrame({"taste": pd.Categorical(taste)}, index=np.arange(len(user_f)))
    items = pd.DataFrame({"genres": genres}, index=np.arange(len(item_f)))
    return users, items


def gumbel_keys(affinity: np.ndarray, keys: np.ndarray, log_weight: np.ndarray,
                rng: np.random.Generator) -> None:
    """``keys`` <- a_ui + log w_i + G_ui in place, G_ui ~ Gumbel(0, 1) drawn from ``rng`` as
    -log E (E standard exponential, float32, floored at the smallest normal): the top k of
    a row are a Plackett-Luce draw without replacement with weights exp(a_ui) w_i."""
    rng.standard_exponential(out=keys, dtype=np.float32)
    np.maximum(keys, np.finfo(np.float32).tiny, out=keys)
    np.log(keys, out=keys)
    np.subtract(affinity, keys, out=keys)
    keys += log_weight


def choose_and_rate(keys: np.ndarray, affinity: np.ndarray, k: np.ndarray, scale: float,
                    rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row's ``k`` items of largest key (ties by the smaller item id) and their ratings
    rint(2.8 + 0.9 a_ui / ``scale`` + N(0, 0.8)) clipped to 1..5 (noise drawn from ``rng``).
    Returns (items: row's chosen items ascending, then n_items as padding; the same clipped
    to valid indices; valid: which columns are chosen; ratings float32), shape
    (rows, max k)."""
    n_items = keys.shape[1]
    kmax = int(k.max())
    cand = top_k(keys, kmax)
    valid = np.arange(kmax) < k[:, None]
    items = np.sort(np.where(valid, cand, n_items), axis=1)
    items_c = np.minimum(items, n_items - 1)
    z = np.take_along_axis(affinity, items_c, axis=1) / max(scale, 1e-12)
    r = np.rint(2.8 + 0.9 * z + rng.normal(0.0, 0.8, z.shape))
    return items, items_c, valid, np.clip(r, 1.0, 5.0).astype(np.float32)


def _fill_batch(users: np.ndarray, k: np.ndarray, affinity: np.ndarray, keys: np.ndarray,
                log_pop: np.ndarray, scale: float, start: np.ndarray, mean_gap: np.ndarray,
                indptr: np.ndarray, indices: np.ndarray, ratings: np.ndarray,
                timestamps: np.ndarray, rng: np.random.Generator) -> None:
    """Draw the batch's items by Gumbel-top-k and write them into the CSR arrays
    (``keys`` is a scratch block of the affinity block's shape)."""
    n_rows = affinity.shape[0]
    kmax = int(k.max())
    gumbel_keys(affinity, keys, log_pop, rng)
    items, _, valid, r = choose_and_rate(keys, affinity, k, scale, rng)
    gaps = 1.0 + rng.standard_exponential((n_rows, kmax)) * mean_gap[:, None]
    times = start[:, None] + np.cumsum(np.floor(gaps), axis=1).astype(np.int64)
    slot_key = rng.random((n_rows, kmax))
    slot_key[~valid] = 2.0
    perm = np.argsort(slot_key, axis=1)  # valid columns first, in random order
    ts = np.empty_like(times)
    np.put_along_axis(ts, perm, times, axis=1)
    dest = (indptr[users][:, None] + np.arange(kmax))[valid]
    indices[dest] = items[valid]
    ratings[dest] = r[valid]
    timestamps[dest] = ts[valid]
