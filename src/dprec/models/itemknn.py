"""Item-based collaborative filtering with Jaccard similarity and top-K neighbour lists.

DPLCF (Gao et al., SIGIR 2020) Eq. 12: score(u, i) = sum_{j in KNN(i)} sim(i, j) R[u, j].
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np
import scipy.sparse as sp

from dprec.selection import top_k

__all__ = [
    "Neighbourhood", "history_values", "jaccard_from_counts", "neighbour_matrix",
    "score_item_candidates", "score_item_neighbourhood", "score_user_neighbourhood",
    "top_k_neighbours",
]

Neighbourhood = Literal["item", "user"]


def top_k_neighbours(
    sim: np.ndarray, k: int, block: int = 2048
) -> tuple[np.ndarray, np.ndarray]:
    """Each item's ``k`` most similar other items: (indices (N, k) int32, sims (N, k) float32).

    Rows are sorted by decreasing similarity, ties by the smaller item id (the same choice on
    every CPU); the item itself is never its own neighbour.
    """
    n = sim.shape[0]
    k = min(k, n - 1)
    idx = np.empty((n, k), np.int32)
    val = np.empty((n, k), np.float32)
    for start in range(0, n, block):
        s = np.array(sim[start:start + block], dtype=np.float32)
        r = np.arange(len(s))
        s[r, start + r] = -np.inf
        best = top_k(s, k)
        idx[start:start + len(s)] = best
        val[start:start + len(s)] = np.take_along_axis(s, best, axis=1)
    return idx, val


def neighbour_matrix(indices: np.ndarray, sims: np.ndarray) -> sp.csr_matrix:
    """Sparse W with W[i, j] = sim(i, j) for j in KNN(i)."""
    n, k = indices.shape
    indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
    w = sp.csr_matrix((sims.ravel(), indices.ravel(), indptr), shape=(n, n))
    w.sum_duplicates()
    return w


def score_item_neighbourhood(
    history: sp.csr_matrix, indices: np.ndarray, sims: np.ndarray
) -> np.ndarray:
    """Eq. 12 for a batch of users: scores = R W^T with W the global top-K neighbour lists."""
    w = neighbour_matrix(indices, sims)
    return np.asarray((history @ w.T).toarray(), dtype=np.float64)


def history_values(history: sp.csr_matrix, items: np.ndarray) -> np.ndarray:
    """``history[r, items[r, j]]`` for a (b, c) index array, by binary search (no densifying)."""
    h = sp.csr_matrix(history)
    h.sort_indices()
    n = h.shape[1]
    rows = np.repeat(np.arange(h.shape[0], dtype=np.int64), np.diff(h.indptr))
    keys = rows * n + h.indices
    want = (np.arange(items.shape[0], dtype=np.int64)[:, None] * n + items).ravel()
    pos = np.searchsorted(keys, want)
    pos_c = np.minimum(pos, max(len(keys) - 1, 0))
    hit = (pos < len(keys)) & (keys[pos_c] == want) if len(keys) else np.zeros(want.shape, bool)
    out = np.zeros(want.shape, np.float64)
    out[hit] = h.data[pos_c[hit]]
    return out.reshape(items.shape)


def score_item_candidates(history: sp.csr_matrix, indices: np.ndarray, sims: np.ndarray,
                          items: np.ndarray) -> np.ndarray:
    """Eq. 12 for (b, c) candidate items only: sum_k sims[i, k] R[u, indices[i, k]]."""
    b, c = items.shape
    nb = indices[items]  # (b, c, K)
    r = history_values(history, nb.reshape(b, -1)).reshape(nb.shape)
    return np.einsum("bck,bck->bc", sims[items].astype(np.float64), r)


@numba.njit(parallel=True, cache=True)
def _user_knn_scores(indptr, items, sim, k, cands, out):  # pragma: no cover - compiled
    n_users = len(indptr) - 1
    for u in numba.prange(n_users):
        h = items[indptr[u]:indptr[u + 1]]
        m = len(h)
        if m == 0:
            continue
        buf = np.empty(m, np.float32)
        for c in range(cands.shape[1]):
            i = cands[u, c]
            for a in range(m):
                buf[a] = sim[i, h[a]] if h[a] != i else np.float32(0.0)
            if m > k:
                buf.sort()
                out[u, c] = buf[m - k:].sum()
            else:
                out[u, c] = buf.sum()


def score_user_neighbourhood(history: sp.csr_matrix, sim: np.ndarray, k: int,
                             items: np.ndarray | None = None) -> np.ndarray:
    """score(u, i) = sum of the ``k`` largest sim(i, j) over items j in u's history.

    The neighbourhood used by the DPLCF authors' public code (ranking among the user's items).
    ``items``: (b, c) candidate items per user (default: every item).
    """
    h = history.tocsr()
    if items is None:
        items = np.broadcast_to(np.arange(h.shape[1], dtype=np.int64), h.shape)
    cands = np.ascontiguousarray(items, dtype=np.int64)
    out = np.zeros(cands.shape, np.float32)
    _user_knn_scores(h.indptr.astype(np.int64), h.indices.astype(np.int64),
                     np.ascontiguousarray(sim, dtype=np.float32), int(k), cands, out)
    return out.astype(np.float64)


def jaccard_from_counts(
    n11: np.ndarray, union: np.ndarray
) -> tuple[np.ndarray, int]:
    """sim = n11 / union clipped to [0, 1] (0 where union <= 0); returns (sim, n_clipped)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.where(union > 0, n11 / union, 0.0)
    clipped = int(np.count_nonzero((raw < 0) | (raw > 1) | (union <= 0) & (n11 != 0)))
    np.clip(raw, 0.0, 1.0, out=raw)
    return raw.astype(np.float32, copy=False), clipped
