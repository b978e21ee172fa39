"""Top-k selection with an explicit tie rule, the same on every CPU.

NumPy's ``argpartition`` and its default ``argsort`` are unstable: which of several equal
scores they return depends on the SIMD kernel they dispatch to (AVX-512 machines use
x86-simd-sort), so a selection that can tie must not rely on them. Here the rule is written
out: a larger score first, and among equal scores the smaller index. NaN ranks below every
number (as ``-inf``, then by index).
"""

from __future__ import annotations

import numpy as np

__all__ = ["top_k", "top_k_row"]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` largest entries of each row of a 2-D ``scores`` array.

    Rows of the (n, min(k, m)) int64 result are ordered by (score descending, index
    ascending); the set chosen among tied scores at the boundary is the smallest indices.
    The result is a function of the values only, never of a sort kernel's tie order.
    """
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"top_k expects a 2-D array, got shape {s.shape}")
    n, m = s.shape
    k = min(int(k), m)
    if k <= 0 or n == 0:
        return np.empty((n, max(k, 0)), np.int64)
    if s.dtype.kind == "f":
        if np.isnan(s).any():  # a copy only when there is a NaN to rank last
            s = np.where(np.isnan(s), -np.inf, s)
    elif s.dtype.kind in "iub":
        s = s.astype(np.int64)
    else:
        raise ValueError(f"top_k needs real scores, got dtype {s.dtype}")
    if k == m:
        chosen = np.broadcast_to(np.arange(m, dtype=np.int64), (n, m))
    else:
        kth = np.partition(s, m - k, axis=1)[:, m - k:m - k + 1]  # the k-th largest value
        above = s > kth
        tied = s == kth
        need = k - above.sum(axis=1)
        mask = above
        ambiguous = np.flatnonzero(tied.sum(axis=1) > need)
        if len(ambiguous):
            rank = np.cumsum(tied[ambiguous], axis=1, dtype=np.int32)
            tied[ambiguous] &= rank <= need[ambiguous, None]
        mask |= tied
        chosen = np.nonzero(mask)[1].reshape(n, k)  # row-major: ascending index in a row
    values = np.take_along_axis(s, chosen, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")
    return np.take_along_axis(chosen, order, axis=1).astype(np.int64, copy=False)


def top_k_row(scores: np.ndarray, k: int) -> np.ndarray:
    """:func:`top_k` for one 1-D score vector."""
    s = np.asarray(scores)
    if s.ndim != 1:
        raise ValueError(f"top_k_row expects a 1-D array, got shape {s.shape}")
    return top_k(s[None, :], k)[0]
