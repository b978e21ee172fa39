"""Item-based collaborative filtering with Jaccard similarity and top-K neighbour lists.

DPLCF (Gao et al., SIGIR 2020) Eq. 12: score(u, i) = sum_{j in KNN(i)} sim(i, j) R[u, j].
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np
import scipy.sparse as sp

Neighbourhood = Literal["item", "user"]


def top_k_neighbours(
    sim: np.ndarray, k: int, block: int = 2048
) -> tuple[np.ndarray, np.ndarray]:
    """Each item's ``k`` most similar other items: (indices (N, k) int32, sims (N, k) float32).

    Rows are sorted by decreasing similarity; the item itself is never its own neighbour.
    """
    n = sim.shape[0]
    k = min(k, n - 1)
    idx = np.empty((n, k), np.int32)
    val = np.empty((n, k), np.float32)
    for start in range(0, n, block):
        s = np.array(sim[start:start + block], dtype=np.float32)
        r = np.arange(len(s))
        s[r, start + r] = -np.inf
        part = np.argpartition(-s, k - 1, axis=1)[:, :k]
        pv = np.take_along_axis(s, part, axis=1)
        order = np.argsort(-pv, axis=1, kind="stable")
        idx[start:start + len(s)] = np.take_along_axis(part, order, axis=1)
        val[start:start + len(s)] = np.take_along_axis(pv, order, axis=1)
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


@numba.njit(parallel=True, cache=True)
def _user_knn_scores(indptr, items, sim, k, out):  # pragma: no cover - compiled
    n_users = len(indptr) - 1
    n_items = sim.shape[0]
    for u in numba.prange(n_users):
        h = items[indptr[u]:indptr[u + 1]]
        m = len(h)
        if m == 0:
            continue
        buf = np.empty(m, np.float32)
        for i in range(n_items):
            for a in range(m):
                buf[a] = sim[i, h[a]] if h[a] != i else np.float32(0.0)
            if m > k:
                buf.sort()
                out[u, i] = buf[m - k:].sum()
            else:
                out[u, i] = buf.sum()


def score_user_neighbourhood(history: sp.csr_matrix, sim: np.ndarray, k: int) -> np.ndarray:
    """score(u, i) = sum of the ``k`` largest sim(i, j) over items j in u's history.

    The neighbourhood used by the DPLCF authors' public code (ranking among the user's items).
    """
    h = history.tocsr()
    out = np.zeros(h.shape, np.float32)
    _user_knn_scores(h.indptr.astype(np.int64), h.indices.astype(np.int64),
                     np.ascontiguousarray(sim, dtype=np.float32), int(k), out)
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
