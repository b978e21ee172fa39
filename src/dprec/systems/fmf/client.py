"""FCF / FMF-LDP client (on device): private user vector, item gradient, LDP reports.

Never imports server code; shares only messages and mechanisms (SYSTEMS.md §2, steps 2-3).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from dprec.models.als import solve_user_factors


def user_vectors(V: np.ndarray, history: sp.csr_matrix, alpha: float, reg: float,
                 gram: np.ndarray | None = None) -> np.ndarray:
    """x_u = (V^T C_u V + lambda I)^-1 V^T C_u p(u) (paper Eq. 4); never leaves the device."""
    return solve_user_factors(V, history, alpha, reg, gram=gram)


def sample_slots(n_clients: int, k: int, n_items: int, n_factors: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, lines 2 and 4, k times per client: item and factor uniformly at random."""
    items = rng.integers(0, n_items, size=(n_clients, k), dtype=np.int32)
    factors = rng.integers(0, n_factors, size=(n_clients, k), dtype=np.uint8)
    return items, factors


@numba.njit(parallel=True, cache=True)
def _entries(indptr, indices, data, X, V, items, factors, alpha, out):  # pragma: no cover
    n, k = items.shape
    for u in numba.prange(n):
        lo, hi = indptr[u], indptr[u + 1]
        for s in range(k):
            i = items[u, s]
            pos = lo + np.searchsorted(indices[lo:hi], i)
            r = data[pos] if pos < hi and indices[pos] == i else 0.0
            pref = 1.0 if r > 0 else 0.0
            c = 1.0 + alpha * r
            dot = 0.0
            for f in range(X.shape[1]):
                dot += X[u, f] * V[i, f]
            out[u, s] = c * (pref - dot) * X[u, factors[u, s]]


def gradient_entries(X: np.ndarray, V: np.ndarray, history: sp.csr_matrix, items: np.ndarray,
                     factors: np.ndarray, alpha: float) -> np.ndarray:
    """Only the sampled entries f(u, i)_f = c_ui (p_ui - x_u . v_i) x_uf (Eq. 5), (n, k).

    The dense N x F gradient of a user is never built.
    """
    h = history.tocsr()
    h.sort_indices()
    out = np.empty(items.shape, np.float64)
    _entries(h.indptr.astype(np.int64), h.indices.astype(np.int64), h.data.astype(np.float64),
             np.ascontiguousarray(X, np.float64), np.ascontiguousarray(V, np.float64),
             items, factors, float(alpha), out)
    return out


@numba.njit(cache=True)
def _nnz_gradient(indptr, indices, data, X, V, alpha, out):  # pragma: no cover
    for u in range(len(indptr) - 1):
        for pos in range(indptr[u], indptr[u + 1]):
            i = indices[pos]
            r = data[pos]
            s = 0.0
            for f in range(X.shape[1]):
                s += X[u, f] * V[i, f]
            c = 1.0 + alpha * r
            pref = 1.0 if r > 0 else 0.0
            w = c * (pref - s) + s
            for f in range(X.shape[1]):
                out[i, f] += w * X[u, f]


def gradient_sum(X: np.ndarray, V: np.ndarray, history: sp.csr_matrix, alpha: float) -> np.ndarray:
    """sum_u f(u, .) over a batch of clients, exactly (FCF): (N, F).

    sum_u c_u * (p_u - V x_u) x_u^T = -V (X^T X) + sum over observed (u, i) of
    [c_ui (p_ui - s_ui) + s_ui] x_u with s_ui = x_u . v_i.
    """
    h = history.tocsr()
    out = -V @ (X.T @ X)
    _nnz_gradient(h.indptr.astype(np.int64), h.indices.astype(np.int64),
                  h.data.astype(np.float64), np.ascontiguousarray(X, np.float64),
                  np.ascontiguousarray(V, np.float64), float(alpha), out)
    return out
