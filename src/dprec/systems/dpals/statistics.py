"""The layout of a dpals contribution, shared by the client and the server.

A user's sufficient statistics for one item ``j`` are ``c_j (UT(u u^T), r_j u)``: the upper
triangle of ``u u^T`` row by row (``T = F (F + 1) / 2`` entries, off-diagonal entries once)
followed by ``r_j u`` (``F`` entries), ``W = T + F`` numbers per item. The global Gramian term
is ``UT(u u^T)`` alone. Quantisation is unbiased randomised rounding at a scale ``gamma``:
``R(y) = floor(y) + 1[U < y - floor(y)]`` with ``U`` uniform on [0, 1), so ``E R(y) = y``,
``|R(y) - y| < 1``, and ``R(y) = y`` for an integer ``y`` (a zero stays zero).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["accumulator_chunks", "pack_gram", "randomised_round", "stats_width", "triangle",
           "triangle_size", "unpack_gram"]

ACCUMULATOR_BYTES = 1 << 28
"""The most bytes the per-chunk accumulators of one statistics kernel hold together."""


def accumulator_chunks(indptr: np.ndarray, cells: int) -> np.ndarray:
    """Row bounds of at most one chunk per thread, balanced by entries, each with its own
    ``cells``-number accumulator (no more chunks than fit in :data:`ACCUMULATOR_BYTES`)."""
    n = indptr.size - 1
    parts = max(1, min(numba.get_num_threads(), ACCUMULATOR_BYTES // max(8 * cells, 1), n))
    targets = np.linspace(0, indptr[-1], parts + 1)
    bounds = np.searchsorted(indptr, targets[1:-1], side="left")
    return np.concatenate([[0], bounds, [n]]).astype(np.int64)


def triangle_size(factors: int) -> int:
    """``T = F (F + 1) / 2``: entries of the upper triangle of an ``F x F`` matrix."""
    return factors * (factors + 1) // 2


def stats_width(factors: int) -> int:
    """``W = T + F``: numbers per item in a contribution."""
    return triangle_size(factors) + factors


def triangle(factors: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the upper triangle, row by row (``np.triu_indices``)."""
    return np.triu_indices(factors)


def pack_gram(U: np.ndarray) -> np.ndarray:
    """``(n, T)``: row ``i`` is ``UT(U[i] U[i]^T)``."""
    U = np.asarray(U, dtype=np.float64)
    rows, cols = triangle(U.shape[1])
    return U[:, rows] * U[:, cols]


def unpack_gram(flat: np.ndarray, factors: int) -> np.ndarray:
    """``(..., F, F)`` symmetric matrices from ``(..., T)`` upper triangles."""
    flat = np.asarray(flat, dtype=np.float64)
    rows, cols = triangle(factors)
    out = np.zeros((*flat.shape[:-1], factors, factors))
    out[..., rows, cols] = flat
    out[..., cols, rows] = flat
    return out


def randomised_round(y: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """``floor(y) + 1[uniforms < y - floor(y)]`` as int64 (unbiased; module docstring)."""
    low = np.floor(y)
    return (low + (uniforms < y - low)).astype(np.int64)
