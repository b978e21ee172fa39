"""The client step of dpals, vectorised over users (Chien et al., ICML 2021, Alg. 1).

A client holds its items and never sends its vector. Per ALS step it

1. solves its own user vector exactly from the broadcast item factors ``V``:
   ``u = (w V^T V + V_S^T V_S + reg I)^-1 V_S^T 1`` over its items ``S`` (the implicit ALS
   form of the anchor's row solve, ``w`` = unobserved_weight);
2. clips it and measures it in units of the clip, ``u <- u min(1, C / ||u||_2) / C``
   (``||u||_2 <= 1``);
3. contributes, quantised at ``gamma`` by randomised rounding, its per-item statistics
   ``c_j (UT(u u^T), beta u)`` for its selected items (zeros elsewhere: a dense vector over all
   items inside the secure sum) and its global Gramian term ``UT(u u^T)``.

The items are selected once (Sanitizer of google-research ``dp_alternating_minimization/
dpam.py``): ``uniform``, at most ``k`` at random; ``tail``, the ``k`` least frequent by the DP
item counts (ties: the smaller item id); ``adaptive``, the ``max_items`` least frequent with
weights ``c_j`` proportional to ``count_j^exponent`` and ``sum_j c_j^2 = k`` (AdaDPALS,
Krichene et al., ICML 2023). The DP counts come from one k-hot round (a uniform sample of
``k`` items).

Every client-side random draw (sampling keys, rounding, noise shares) comes from the
client's own generator, derived from ``(seed, purpose, round, user)``, so a result does not
depend on how users are batched and a device running alone draws the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
import scipy.sparse as sp

from dprec.errors import InvalidParameterError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.models.als import solve_user_factors
from dprec.random import derive_generator
from dprec.systems.dpals.statistics import pack_gram, randomised_round, stats_width

__all__ = ["COUNT", "GRAM", "SELECT", "SHARE", "STATS", "Weighting", "client_generator",
           "clip_users", "count_sample", "gram_statistics", "item_statistics", "noise_share",
           "select_items", "solve_users"]

Weighting = Literal["uniform", "tail", "adaptive"]

SELECT, COUNT, STATS, GRAM, SHARE = "select", "count", "stats", "gram", "share"
"""Purposes of the client's generators."""

_BLOCK_CELLS = 1 << 22


def client_generator(seed: int, purpose: str, round_id: int, user: int,
                     release: str = "") -> np.random.Generator:
    """User ``user``'s generator for ``purpose`` in round ``round_id`` of run ``seed``."""
    return derive_generator(seed, "dpals", purpose, release, round_id, user)


def _binary(train: sp.csr_matrix) -> sp.csr_matrix:
    csr = sp.csr_matrix(train, dtype=np.float64, copy=True)
    csr.eliminate_zeros()
    csr.sum_duplicates()
    csr.sort_indices()
    csr.data[:] = 1.0
    return csr


def _rows(csr: sp.csr_matrix) -> np.ndarray:
    return np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))


def _keep_first(csr: sp.csr_matrix, order: np.ndarray, k: int) -> np.ndarray:
    """Positions (into ``csr``'s entries, ``order`` sorted by user first) of each user's
    first ``k`` entries in ``order``."""
    rows = _rows(csr)
    rank = np.arange(order.size) - csr.indptr[rows[order]]
    return np.sort(order[rank < k])


def _subset(csr: sp.csr_matrix, keep: np.ndarray, values: np.ndarray | None = None
            ) -> sp.csr_matrix:
    rows = _rows(csr)
    data = np.ones(keep.size) if values is None else values
    return sp.csr_matrix((data, (rows[keep], csr.indices[keep])), shape=csr.shape)


def _user_ids(ids: np.ndarray | None, n: int) -> np.ndarray:
    """The global user id of each of ``n`` rows (default ``0..n-1``)."""
    return np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)


def count_sample(train: sp.csr_matrix, k: int, seed: int, purpose: str = COUNT,
                 ids: np.ndarray | None = None) -> sp.csr_matrix:
    """At most ``k`` of each user's items, uniformly at random (keys from the client's
    generator, ``ids``: the rows' user ids; ties, which have probability 0, by the smaller
    item id), as 0/1 CSR."""
    csr = _binary(train)
    sizes = np.diff(csr.indptr)
    users = _user_ids(ids, csr.shape[0])
    keys = np.concatenate([np.empty(0)] + [
        client_generator(seed, purpose, 0, int(users[u])).random(int(n))
        for u, n in enumerate(sizes) if n])
    order = np.lexsort((csr.indices, keys, _rows(csr)))
    return _subset(csr, _keep_first(csr, order, k))


def _least_frequent(csr: sp.csr_matrix, counts: np.ndarray, k: int) -> np.ndarray:
    order = np.lexsort((csr.indices, counts[csr.indices], _rows(csr)))
    return _keep_first(csr, order, k)


def select_items(train: sp.csr_matrix, weighting: Weighting, k: int, seed: int,
                 counts: np.ndarray | None = None, max_items: int | None = None,
                 exponent: float = 0.0, ids: np.ndarray | None = None) -> sp.csr_matrix:
    """(users x items) CSR of the weights ``c_ij`` each user contributes with (module
    docstring); ``counts``: the DP item counts (tail and adaptive); ``ids``: the rows' user
    ids."""
    csr = _binary(train)
    if weighting == "uniform":
        return count_sample(csr, k, seed, SELECT, ids)
    if counts is None:
        raise InvalidParameterError(f"weighting={weighting} needs the DP item counts")
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    if weighting == "tail":
        return _subset(csr, _least_frequent(csr, counts, k))
    if weighting != "adaptive":
        raise InvalidParameterError(f"weighting must be uniform, tail or adaptive, "
                                    f"got {weighting!r}")
    keep = _least_frequent(csr, counts, k if max_items is None else max_items)
    w2 = counts[csr.indices[keep]] ** (2.0 * exponent)
    rows = _rows(csr)[keep]
    total = np.bincount(rows, weights=w2, minlength=csr.shape[0])
    return _subset(csr, keep, np.sqrt(k * w2 / total[rows]))


def solve_users(V: np.ndarray, history: sp.csr_matrix, reg: float,
                unobserved_weight: float) -> np.ndarray:
    """Exact ``(w V^T V + V_S^T V_S + reg I)^-1 V_S^T 1`` per user (zero without items).

    The confidence form of :func:`dprec.models.als.solve_user_factors` with ``alpha = 1/w``
    and ``reg / w`` solves ``(w G + S + reg I) x = (1 + w) b``; dividing by ``1 + w`` gives
    this form exactly."""
    w = float(unobserved_weight)
    x = solve_user_factors(V, _binary(history), 1.0 / w, float(reg) / w)
    return x / (1.0 + w)


def clip_users(U: np.ndarray, clip: float) -> np.ndarray:
    """Each row clipped to L2 norm ``clip`` and divided by ``clip``: norm at most 1."""
    norms = np.linalg.norm(U, axis=1)
    return U * (np.minimum(1.0, clip / np.maximum(norms, 1e-300)) / clip)[:, None]


def _user_blocks(sizes: np.ndarray, width: int) -> Iterator[tuple[int, int]]:
    """Consecutive user ranges holding about ``_BLOCK_CELLS`` numbers (at least one user)."""
    n = sizes.size
    cells = np.cumsum(sizes * width)
    start = 0
    while start < n:
        base = cells[start - 1] if start else 0
        stop = int(np.searchsorted(cells, base + _BLOCK_CELLS, side="right"))
        stop = max(stop, start + 1)
        yield start, stop
        start = stop


def _uniforms(seed: int, purpose: str, round_id: int, users: range, sizes: np.ndarray,
              width: int, ids: np.ndarray) -> np.ndarray:
    parts = [client_generator(seed, purpose, round_id, int(ids[u])).random(
        int(sizes[u]) * width) for u in users if sizes[u]]
    return np.concatenate([np.empty(0)] + parts).reshape(-1, width)


def item_statistics(U: np.ndarray, weights: sp.csr_matrix, gamma: float, seed: int,
                    round_id: int, rhs_weight: float = 1.0, ids: np.ndarray | None = None
                    ) -> np.ndarray:
    """``sum_u R(gamma c_uj (UT(u u^T), beta u))`` per item (``beta`` = rhs_weight):
    (items, W) int64, the exact integer sum of every client's quantised per-item statistics
    (zeros off its selected items); ``ids``: the rows' user ids."""
    w = sp.csr_matrix(weights)
    n_users, n_items = w.shape
    ids = _user_ids(ids, n_users)
    f = U.shape[1]
    width = stats_width(f)
    sizes = np.diff(w.indptr)
    total = np.zeros((n_items, width), dtype=np.int64)
    for start, stop in _user_blocks(sizes, width):
        lo, hi = w.indptr[start], w.indptr[stop]
        if lo == hi:
            continue
        users = np.repeat(np.arange(start, stop), sizes[start:stop])
        Ub = U[start:stop]
        per_user = np.hstack([pack_gram(Ub), rhs_weight * Ub])[users - start]
        x = gamma * w.data[lo:hi, None] * per_user
        v = randomised_round(x, _uniforms(seed, STATS, round_id, range(start, stop), sizes,
                                          width, ids))
        items = w.indices[lo:hi]
        np.add.at(total, items, v)
    return total


def gram_statistics(U: np.ndarray, gamma: float, seed: int, round_id: int,
                    ids: np.ndarray | None = None) -> np.ndarray:
    """``sum_u R(gamma UT(u u^T))``: (T,) int64, the exact sum of the quantised global
    Gramian terms; ``ids``: the rows' user ids."""
    grams = pack_gram(U)
    n, t = grams.shape
    ids = _user_ids(ids, n)
    ones = np.ones(n, dtype=np.int64)
    total = np.zeros(t, dtype=np.int64)
    for start, stop in _user_blocks(ones, t):
        v = randomised_round(gamma * grams[start:stop],
                             _uniforms(seed, GRAM, round_id, range(start, stop), ones, t, ids))
        total += v.sum(axis=0)
    return total


def noise_share(mu_share: float, shape: int | tuple[int, ...], seed: int, release: str,
                round_id: int, user: int) -> np.ndarray:
    """User ``user``'s Skellam share ``Sk(mu_share)`` of one release, from its generator."""
    rng = client_generator(seed, SHARE, round_id, user, release)
    return SkellamMechanism(mu_share).noise(shape, rng)
