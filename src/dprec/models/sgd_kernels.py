"""The compiled per-rating pieces that the SGD rating factorisations share (FunkSVD,
DPSGD-MF, DPPS-MF): the biased prediction and the regularised SGD step.

Koren, Bell and Volinsky, IEEE Computer 2009, Eq. 4-5 (docs/architecture.md §3). Each sums
in a fixed order, so every caller's numbers are bit-identical to its inlined form.
"""

from __future__ import annotations

import numba

__all__ = ["biased_prediction", "sgd_step"]


@numba.njit(cache=True, error_model="numpy")
def biased_prediction(U, V, bu, bi, g, offset, u, i, biases):  # pragma: no cover - compiled
    """offset (+ g[0] + b_u + b_i when ``biases``) + U_u . V_i, summed left to right."""
    pred = offset
    if biases:
        pred += g[0] + bu[u] + bi[i]
    for a in range(U.shape[1]):
        pred += U[u, a] * V[i, a]
    return pred


@numba.njit(cache=True, error_model="numpy")
def sgd_step(U, V, bu, bi, u, i, e, lr, reg, biases):  # pragma: no cover - compiled
    """For the error e = r_ui - r_hat_ui: b_u += lr (e - reg b_u), b_i likewise (``biases``);
    U_u += lr (e V_i - reg U_u), V_i += lr (e U_u - reg V_i), both from the old values."""
    if biases:
        bu[u] += lr * (e - reg * bu[u])
        bi[i] += lr * (e - reg * bi[i])
    for a in range(U.shape[1]):
        uf = U[u, a]
        vf = V[i, a]
        U[u, a] = uf + lr * (e * vf - reg * uf)
        V[i, a] = vf + lr * (e * uf - reg * vf)
