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

Every client-side random draw depends only on ``(seed, purpose, round, user)``: the sampling
keys and the rounding are counter-based uniforms of ``(user, item, coordinate)``
(:mod:`.draws`), the noise shares come from the client's own generator. So a result does not
depend on how users are batched or ordered, a device running alone draws the same numbers,
and the kernels run over all users at once (numba, in parallel).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import InvalidParameterError
from dprec.models.als import solve_user_factors
from dprec.random import derive_generator
from dprec.systems.dpals.config import DpalsConfig, Weighting
from dprec.systems.dpals.draws import pair_state, stream_key, uniform_at
from dprec.systems.dpals.frequency import head_mask
from dprec.systems.dpals.statistics import accumulator_chunks, stats_width, triangle_size

__all__ = ["COUNT", "GRAM", "SELECT", "STATS", "Weighting", "client_generator",
           "clip_users", "contributions", "count_sample", "gram_statistics",
           "item_statistics", "restrict_to", "select_items", "solve_users"]


SELECT, COUNT, STATS, GRAM = "select", "count", "stats", "gram"
"""Purposes of the client's generators (its noise shares' are
:mod:`dprec.protocol.secure_sum.noise_shares`')."""


def client_generator(seed: int, purpose: str, round_id: int, user: int,
                     release: str = "") -> np.random.Generator:
    """User ``user``'s generator for ``purpose`` in round ``round_id`` of run ``seed``."""
    return derive_generator(seed, "dpals", purpose, release, round_id, user)


def _binary(train: sp.csr_matrix) -> sp.csr_matrix:
    """``train`` as 0/1 float64 CSR with sorted rows (itself, not a copy, if it is one)."""
    if (isinstance(train, sp.csr_matrix) and train.dtype == np.float64
            and train.has_canonical_format and bool(np.all(train.data == 1.0))):
        return train
    csr = sp.csr_matrix(train, dtype=np.float64, copy=True)
    csr.eliminate_zeros()
    csr.sum_duplicates()
    csr.sort_indices()
    csr.data[:] = 1.0
    return csr


def _rows(csr: sp.csr_matrix) -> np.ndarray:
    return np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))


@numba.njit(parallel=True, cache=True)
def _first_k(indptr: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """Per row, its ``k`` entries of smallest key (a stable sort: ties by position, which is
    the item id in a sorted row), as a mask over the entries."""
    keep = np.zeros(keys.size, dtype=np.bool_)
    for r in numba.prange(indptr.size - 1):
        lo, hi = indptr[r], indptr[r + 1]
        if hi - lo <= k:
            keep[lo:hi] = True
            continue
        kth = np.partition(keys[lo:hi], k - 1)[k - 1]
        taken = 0
        for p in range(lo, hi):  # every key below the k-th, then ties in order
            if keys[p] < kth:
                keep[p] = True
                taken += 1
        for p in range(lo, hi):
            if taken == k:
                break
            if keys[p] == kth:
                keep[p] = True
                taken += 1
    return keep


@numba.njit(parallel=True, cache=True)
def _sample_keys(indptr: np.ndarray, indices: np.ndarray, users: np.ndarray,
                 key: np.uint64) -> np.ndarray:
    out = np.empty(indices.size)
    for r in numba.prange(indptr.size - 1):
        for p in range(indptr[r], indptr[r + 1]):
            out[p] = uniform_at(pair_state(key, users[r], indices[p]), 0)
    return out


def _subset(csr: sp.csr_matrix, keep: np.ndarray, values: np.ndarray | None = None
            ) -> sp.csr_matrix:
    """The entries ``keep`` (a mask) of ``csr`` (sorted rows), with ``values`` (default 1)."""
    kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    indptr = kept[csr.indptr]
    data = np.ones(int(indptr[-1])) if values is None else values
    return sp.csr_matrix((data, csr.indices[keep], indptr), shape=csr.shape)


def _user_ids(ids: np.ndarray | None, n: int) -> np.ndarray:
    """The global user id of each of ``n`` rows (default ``0..n-1``)."""
    return np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)


def count_sample(train: sp.csr_matrix, k: int, seed: int, purpose: str = COUNT,
                 ids: np.ndarray | None = None) -> sp.csr_matrix:
    """At most ``k`` of each user's items, uniformly at random (the ``k`` smallest keys,
    key of item ``j``: the user's counter-based uniform of ``j`` (:mod:`.draws`), ``ids``:
    the rows' user ids; ties, which have probability about 2^-53, by the smaller item id),
    as 0/1 CSR."""
    csr = _binary(train)
    users = _user_ids(ids, csr.shape[0])
    keys = _sample_keys(csr.indptr, csr.indices, users, stream_key(seed, purpose, 0))
    return _subset(csr, _first_k(csr.indptr, keys, int(k)))


def _least_frequent(csr: sp.csr_matrix, counts: np.ndarray, k: int) -> np.ndarray:
    return _first_k(csr.indptr, counts[csr.indices], int(k))


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


@numba.njit(parallel=True, cache=True)
def _item_statistics(U: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                     data: np.ndarray, users: np.ndarray, key: np.uint64, gamma: float,
                     beta: float, n_items: int, bounds: np.ndarray) -> np.ndarray:
    f = U.shape[1]
    t = f * (f + 1) // 2
    width = t + f
    acc = np.zeros((bounds.size - 1, n_items, width), dtype=np.int64)
    for c in numba.prange(bounds.size - 1):
        vals = np.empty(width)
        for r in range(bounds[c], bounds[c + 1]):
            if indptr[r] == indptr[r + 1]:
                continue
            at = 0
            for a in range(f):
                for b in range(a, f):
                    vals[at] = U[r, a] * U[r, b]
                    at += 1
            for a in range(f):
                vals[t + a] = beta * U[r, a]
            for p in range(indptr[r], indptr[r + 1]):
                item = indices[p]
                scale = gamma * data[p]
                s = pair_state(key, users[r], item)
                for j in range(width):
                    y = scale * vals[j]
                    low = np.floor(y)
                    up = 1 if uniform_at(s, j) < y - low else 0
                    acc[c, item, j] += np.int64(low) + up
    out = np.zeros((n_items, width), dtype=np.int64)
    for c in range(bounds.size - 1):
        out += acc[c]
    return out


def item_statistics(U: np.ndarray, weights: sp.csr_matrix, gamma: float, seed: int,
                    round_id: int, rhs_weight: float = 1.0, ids: np.ndarray | None = None
                    ) -> np.ndarray:
    """``sum_u R(gamma c_uj (UT(u u^T), beta u))`` per item (``beta`` = rhs_weight):
    (items, W) int64, the exact integer sum of every client's quantised per-item statistics
    (zeros off its selected items, and a zero rounds to zero, so only the selected items
    draw); ``ids``: the rows' user ids. The rounding of coordinate ``i`` of user ``u``'s
    item ``j`` uses the uniform ``(u, j, i)`` of the round's STATS stream (:mod:`.draws`)."""
    w = sp.csr_matrix(weights)
    n_users, n_items = w.shape
    width = stats_width(U.shape[1])
    indptr = w.indptr.astype(np.int64)
    return _item_statistics(np.ascontiguousarray(U, dtype=np.float64), indptr,
                            w.indices.astype(np.int64), np.asarray(w.data, np.float64),
                            _user_ids(ids, n_users), stream_key(seed, STATS, round_id),
                            float(gamma), float(rhs_weight), int(n_items),
                            accumulator_chunks(indptr, n_items * width))


@numba.njit(parallel=True, cache=True)
def _gram_statistics(U: np.ndarray, users: np.ndarray, key: np.uint64, gamma: float,
                     bounds: np.ndarray) -> np.ndarray:
    f = U.shape[1]
    t = f * (f + 1) // 2
    acc = np.zeros((bounds.size - 1, t), dtype=np.int64)
    for c in numba.prange(bounds.size - 1):
        for r in range(bounds[c], bounds[c + 1]):
            s = pair_state(key, users[r], 0)
            at = 0
            for a in range(f):
                for b in range(a, f):
                    y = gamma * (U[r, a] * U[r, b])
                    low = np.floor(y)
                    up = 1 if uniform_at(s, at) < y - low else 0
                    acc[c, at] += np.int64(low) + up
                    at += 1
    out = np.zeros(t, dtype=np.int64)
    for c in range(bounds.size - 1):
        out += acc[c]
    return out


def gram_statistics(U: np.ndarray, gamma: float, seed: int, round_id: int,
                    ids: np.ndarray | None = None) -> np.ndarray:
    """``sum_u R(gamma UT(u u^T))``: (T,) int64, the exact sum of the quantised global
    Gramian terms; ``ids``: the rows' user ids (user ``u``'s coordinate ``i`` rounds with the
    uniform ``(u, 0, i)`` of the round's GRAM stream)."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    n, t = U.shape[0], triangle_size(U.shape[1])
    return _gram_statistics(U, _user_ids(ids, n), stream_key(seed, GRAM, round_id),
                            float(gamma), accumulator_chunks(np.arange(n + 1, dtype=np.int64), t))


def restrict_to(train: sp.csr_matrix, mask: np.ndarray | None) -> sp.csr_matrix:
    """``train`` with the entries outside ``mask``'s items dropped (itself when no mask)."""
    if mask is None:
        return train
    csr = sp.csr_matrix(train)
    keep = mask[csr.indices]
    kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    return sp.csr_matrix((csr.data[keep], csr.indices[keep], kept[csr.indptr]),
                         shape=csr.shape)


def contributions(train: sp.csr_matrix, cfg: DpalsConfig, seed: int,
                  counts: np.ndarray | None, max_items: int,
                  ids: np.ndarray | None = None) -> sp.csr_matrix:
    """The weights ``c_ij`` the rows of ``train`` contribute with: the selection of
    :func:`select_items` among each user's head items (all items without a head
    restriction); ``counts``: the DP counts (None when the run releases none)."""
    mask = None if counts is None else head_mask(counts, cfg.head_items)
    return select_items(restrict_to(train, mask), cfg.weighting, int(cfg.k), seed,
                        counts if cfg.weighting != "uniform" else None, max_items,
                        float(cfg.exponent), ids)
