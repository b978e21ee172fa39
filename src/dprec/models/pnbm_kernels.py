"""The data and numba kernels of the probabilistic neighbourhood model
(:mod:`dprec.models.pnbm`): item means, co-rated neighbours, per-user caps, Pearson initial
weights, Eq. 2's prediction and the mini-batch gradient of Eq. 3, processed in parallel by
item (each row owned by one thread, a fixed number of per-chunk buffers so that sums do not
depend on the threads)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError, check_int

__all__ = ["Data", "as_ratings", "batch_gradient", "cap_user_ratings", "corated_neighbours",
           "item_means", "nbm_predict", "pearson_weights", "touched_pairs"]


def as_ratings(R: sp.spmatrix | sp.sparray, low: float, high: float) -> sp.csr_matrix:
    """Canonical float64 CSR with sorted indices, every rating finite and in [low, high]."""
    if not sp.issparse(R):
        raise DprecError(f"R must be a scipy.sparse matrix, got {type(R).__name__}")
    R = sp.csr_matrix(R, dtype=np.float64, copy=True)
    R.sum_duplicates()
    R.sort_indices()
    if R.nnz == 0:
        raise DprecError("R must hold at least one rating, got 0")
    if R.shape[1] < 2:
        raise DprecError(f"R must have at least 2 items (a neighbourhood), got {R.shape[1]}")
    bad = ~np.isfinite(R.data) | (R.data < low) | (R.data > high)
    if bad.any():
        raise DprecError(f"ratings must be finite and in [rating_min, rating_max] = "
                         f"[{low:g}, {high:g}], got {R.data[bad][0]!r} "
                         f"({int(bad.sum())} outside)")
    return R


def item_means(R: sp.csr_matrix) -> np.ndarray:
    """r_bar_i, the mean rating of each item; the global mean for items with no rating."""
    n = np.bincount(R.indices, minlength=R.shape[1])
    s = np.bincount(R.indices, weights=R.data, minlength=R.shape[1])
    return np.where(n > 0, s / np.maximum(n, 1), float(R.data.mean()))


def corated_neighbours(R: sp.csr_matrix, k: int, chunk: int = 1024) -> np.ndarray:
    """(n_items, k) int32: per item, the k other items co-rated by the most users.

    Ties go to the lower item id; each row is sorted by id. Computed from the binary
    pattern by rows of I^T I, ``chunk`` items at a time (memory ``chunk`` x n_items).
    """
    n_items = R.shape[1]
    check_int("k", k, 1)
    if k > n_items - 1:
        raise DprecError(f"k must be <= n_items - 1 = {n_items - 1}, got {k}")
    B = sp.csr_matrix((np.ones(R.nnz, np.float64), R.indices, R.indptr), shape=R.shape)
    BT = B.T.tocsr()
    out = np.empty((n_items, k), np.int32)
    ids = np.arange(n_items, dtype=np.int64)
    for a in range(0, n_items, chunk):
        b = min(a + chunk, n_items)
        counts = np.asarray((BT[a:b] @ B).todense(), dtype=np.int64)
        key = counts * n_items + (n_items - 1 - ids)[None, :]
        key[np.arange(b - a), np.arange(a, b)] = -1  # never oneself
        top = np.argpartition(-key, k - 1, axis=1)[:, :k]
        out[a:b] = np.sort(top, axis=1)
    return out


def cap_user_ratings(R: sp.csr_matrix, tau: int, rng: np.random.Generator) -> sp.csr_matrix:
    """Keep a uniformly random subset of ``tau`` ratings of every user with more (Sec. 4.3).

    Users with at most ``tau`` ratings are untouched; the result is canonical CSR.
    """
    check_int("tau", tau, 1)
    R = sp.csr_matrix(R)
    users = np.repeat(np.arange(R.shape[0], dtype=np.int64), np.diff(R.indptr))
    order = np.lexsort((rng.random(R.nnz), users))
    rank = np.empty(R.nnz, np.int64)
    rank[order] = np.arange(R.nnz) - R.indptr[users[order]]
    keep = rank < tau
    indptr = np.zeros(R.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(users[keep], minlength=R.shape[0]), out=indptr[1:])
    return sp.csr_matrix((R.data[keep], R.indices[keep], indptr), shape=R.shape)


def pearson_weights(R: sp.csr_matrix, nbr: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Pearson correlation of items i and nbr[i, k] over their co-raters, ratings centred by
    the item means (0 where fewer than 2 co-raters or a zero variance)."""
    C = R.tocsc()
    C.sort_indices()
    x = C.data - means[np.repeat(np.arange(C.shape[1]), np.diff(C.indptr))]
    return _pearson(C.indptr.astype(np.int64), C.indices.astype(np.int64), x, nbr)


@numba.njit(cache=True, parallel=True)
def _pearson(indptr, indices, x, nbr):
    n_items, k = nbr.shape
    out = np.zeros((n_items, k))
    for i in numba.prange(n_items):
        for c in range(k):
            j = nbr[i, c]
            a, ae = indptr[i], indptr[i + 1]
            b, be = indptr[j], indptr[j + 1]
            sxy = sxx = syy = 0.0
            n = 0
            a, b = _next_common(indices, a, ae, indices, b, be)
            while a < ae and b < be:
                sxy += x[a] * x[b]
                sxx += x[a] * x[a]
                syy += x[b] * x[b]
                n += 1
                a, b = _next_common(indices, a + 1, ae, indices, b + 1, be)
            if n >= 2 and sxx > 0.0 and syy > 0.0:
                out[i, c] = sxy / np.sqrt(sxx * syy)
    return out


# -- kernels -----------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _next_common(xs, a, ae, ys, b, be):
    """The next positions (a, b) with xs[a] == ys[b] in the sorted runs xs[a:ae] and
    ys[b:be], by the merge walk (the smaller side steps on); a == ae or b == be when the
    runs share no further value."""
    while a < ae and b < be:
        if xs[a] == ys[b]:
            break
        if xs[a] < ys[b]:
            a += 1
        else:
            b += 1
    return a, b


@numba.njit(cache=True, inline="always")
def _merge(indptr, indices, x, u, nbr_row, w_row):
    """(sum_j s_ij x_uj, sum_j |s_ij|) over j in nbr_row rated by u (two sorted lists)."""
    a, ae = indptr[u], indptr[u + 1]
    c, k = 0, nbr_row.shape[0]
    num = den = 0.0
    a, c = _next_common(indices, a, ae, nbr_row, c, k)
    while a < ae and c < k:
        num += w_row[c] * x[a]
        den += abs(w_row[c])
        a, c = _next_common(indices, a + 1, ae, nbr_row, c + 1, k)
    return num, den


@numba.njit(cache=True, parallel=True)
def nbm_predict(indptr, indices, x, nbr, W, means, users, items, min_norm, fallback):
    out = np.empty(users.shape[0])
    n_users, n_items = indptr.shape[0] - 1, nbr.shape[0]
    for q in numba.prange(users.shape[0]):
        u, i = users[q], items[q]
        if i < 0 or i >= n_items:
            out[q] = fallback
            continue
        out[q] = means[i]
        if u < 0 or u >= n_users:
            continue
        num, den = _merge(indptr, indices, x, u, nbr[i], W[i])
        d = max(den, min_norm)
        if d > 0.0:
            out[q] += num / d
    return out


_CHUNKS = 4  # fixed number of per-chunk gradient buffers: sums do not depend on the threads


@numba.njit(cache=True, parallel=True)
def _batch_gradient(indptr, indices, x, r, rows, ratings, bounds, nbr, W, means, min_norm,
                    e_max, f_max, clip_low, clip_high, clip, Gs, sq):
    """Gs[c, i] += e (x_uj - p sgn s_ij) / d over the batch ratings in chunk c (Eq. 5).

    ``ratings`` are CSR positions sorted by user, cut into chunks at ``bounds``; each chunk
    scatters its current user's centred ratings into a dense buffer, so a rating costs
    O(k) gathers. e = r_hat - r clamped to [-e_max, e_max]; each factor
    (x_uj - p sgn s_ij) clamped to [-f_max, f_max]; d = max(|S_i| I_u, C) and, below the
    floor, r_hat = r_bar_i + num / C has derivative x_uj / C. ``clip``: r_hat is clipped to
    [clip_low, clip_high] and a clipped rating contributes no gradient (DPPS's bounded
    likelihood). sq[c] = sum of squared (unclamped, clipped if ``clip``) errors.
    """
    n_items, k = nbr.shape
    for ch in numba.prange(bounds.shape[0] - 1):
        buf = np.zeros(n_items)
        rated = np.zeros(n_items)
        G = Gs[ch]
        acc = 0.0
        q, end = bounds[ch], bounds[ch + 1]
        while q < end:
            u = rows[ratings[q]]
            for a in range(indptr[u], indptr[u + 1]):
                buf[indices[a]] = x[a]
                rated[indices[a]] = 1.0
            while q < end and rows[ratings[q]] == u:
                pos = ratings[q]
                q += 1
                i = indices[pos]
                nr, wr = nbr[i], W[i]
                num = den = 0.0
                for c in range(k):
                    j = nr[c]
                    num += wr[c] * buf[j]
                    den += abs(wr[c]) * rated[j]
                floor = den < min_norm
                d = min_norm if floor else den
                if d <= 0.0:
                    acc += (means[i] - r[pos]) ** 2
                    continue
                p = num / d
                pred = means[i] + p
                if clip and (pred < clip_low or pred > clip_high):
                    acc += (min(max(pred, clip_low), clip_high) - r[pos]) ** 2
                    continue
                e = pred - r[pos]
                acc += e * e
                e = min(max(e, -e_max), e_max) / d
                ps = 0.0 if floor else p
                for c in range(k):
                    j = nr[c]
                    s = wr[c]
                    f = buf[j] - ps * rated[j] * ((s > 0.0) - (s < 0.0))
                    G[i, c] += e * min(max(f, -f_max), f_max)
            for a in range(indptr[u], indptr[u + 1]):
                buf[indices[a]] = 0.0
                rated[indices[a]] = 0.0
        sq[ch] = acc


@numba.njit(cache=True, parallel=True)
def touched_pairs(indptr, indices, nbr, users):
    """Per user: sum over their items k of |nbr(k) & I_u|, the gradient entries their terms
    reach (the L1 multiplier of one rating's influence)."""
    out = np.zeros(users.shape[0], np.int64)
    for q in numba.prange(users.shape[0]):
        u = users[q]
        total = 0
        for pos in range(indptr[u], indptr[u + 1]):
            nr = nbr[indices[pos]]
            a, ae = indptr[u], indptr[u + 1]
            c, k = 0, nr.shape[0]
            a, c = _next_common(indices, a, ae, nr, c, k)
            while a < ae and c < k:
                total += 1
                a, c = _next_common(indices, a + 1, ae, nr, c + 1, k)
        out[q] = total
    return out


# -- the model ---------------------------------------------------------------------------------


@dataclass
class Data:
    """Training ratings as the kernels read them (CSR by user, values centred by item)."""

    indptr: np.ndarray
    indices: np.ndarray
    r: np.ndarray
    x: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, R: sp.csr_matrix, means: np.ndarray) -> Data:
        indices = R.indices.astype(np.int64)
        return cls(R.indptr.astype(np.int64), indices, R.data.astype(np.float64),
                   R.data - means[indices],
                   np.repeat(np.arange(R.shape[0], dtype=np.int64), np.diff(R.indptr)))


def batch_gradient(data: Data, batch: np.ndarray, nbr: np.ndarray, W: np.ndarray,
                   means: np.ndarray, min_norm: float, e_max: float = math.inf,
                   f_max: float = math.inf, clip: tuple[float, float] | None = None
                   ) -> tuple[np.ndarray, float]:
    """(G, sum of squared errors) of the ratings at CSR positions ``batch`` (Eq. 4-5).

    G has the shape of W; repeated positions count repeatedly (sampling with replacement).
    """
    ratings = np.sort(np.asarray(batch, dtype=np.int64))
    bounds = np.linspace(0, len(ratings), _CHUNKS + 1).astype(np.int64)
    Gs = np.zeros((_CHUNKS, *W.shape))
    sq = np.zeros(_CHUNKS)
    lo, hi = clip if clip is not None else (0.0, 0.0)
    _batch_gradient(data.indptr, data.indices, data.x, data.r, data.rows, ratings, bounds, nbr,
                    W, means, float(min_norm), float(e_max), float(f_max), float(lo),
                    float(hi), clip is not None, Gs, sq)
    return Gs.sum(axis=0), float(sq.sum())


