"""FCF / FMF-LDP server (untrusted): unbiased gradient estimate from shuffled reports, descent.

Never imports client code (SYSTEMS.md §2, step 5).
"""

from __future__ import annotations

import numpy as np


def estimate_mean_gradient(items: np.ndarray, factors: np.ndarray, values: np.ndarray,
                           n_items: int, n_factors: int) -> np.ndarray:
    """Unbiased estimate of the mean over users of the clipped gradient matrix (Eq. 9).

    Each report (i, f, y) with E[y | x] = x (y = +-C for the binary mechanism) stands for the
    matrix N F y e_if; as (i, f) is uniform, E[N F y e_if] = clip(f(u, .)). The estimate is
    the average over all n reports: G_hat = (N F / n) sum_r y_r e_{i_r f_r}.
    """
    n = len(values)
    if n == 0:
        return np.zeros((n_items, n_factors))
    flat = items.astype(np.int64) * n_factors + factors
    g = np.bincount(flat, weights=values, minlength=n_items * n_factors)
    return (g * (n_items * n_factors / n)).reshape(n_items, n_factors)


def descend(V: np.ndarray, mean_gradient: np.ndarray, lr: float, reg: float,
            steps: int) -> np.ndarray:
    """``steps`` updates V <- V + lr (2 G - 2 lambda V) with the epoch's estimate G.

    -dJ/dv_i = 2 sum_u f(u, i) - 2 lambda v_i (Eq. 6) for J = sum c (p - x.v)^2 + lambda |V|^2,
    taken per user (G is a mean over users), so each step descends J.
    """
    for _ in range(steps):
        V = V + lr * (2.0 * mean_gradient - 2.0 * reg * V)
    return V
