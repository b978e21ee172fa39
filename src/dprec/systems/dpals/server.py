"""The server step of dpals: item factors from the noisy sums (Chien et al., ICML 2021).

From the released integer sums the server unscales (Gramians by ``C^2 / gamma``,
right-hand sides by ``C / (gamma beta)``: the clients sent their vectors in units of the clip
``C``, the right-hand side weighted by ``beta``), unpacks the per-item
Gramians ``G_j`` and the global Gramian ``G``, projects each to the PSD cone (symmetrise, then
eigenvalues floored at 0: the nearest PSD matrix in Frobenius norm; ``_project_psd`` of the
anchor), and solves the implicit ALS normal equations of every item

    (G_j + w G + reg I) v_j = b_j          (w = unobserved_weight),

which are positive definite for ``reg > 0``.
"""

from __future__ import annotations

import numba
import numpy as np

from dprec.systems.dpals.statistics import triangle_size, unpack_gram

__all__ = ["project_psd", "solve_items"]


def project_psd(M: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """The symmetric part of ``M`` (``(F, F)`` or ``(n, F, F)``) with eigenvalues below
    ``floor`` raised to ``floor``."""
    M = np.asarray(M, dtype=np.float64)
    sym = 0.5 * (M + np.swapaxes(M, -1, -2))
    batch = np.ascontiguousarray(sym.reshape(-1, *sym.shape[-2:]))
    return _project_rows(batch, float(floor)).reshape(sym.shape)


@numba.njit(cache=True)
def _project_rows(batch: np.ndarray, floor: float) -> np.ndarray:
    # one LAPACK eigh per matrix (NumPy's batched eigh is several times slower here)
    out = np.empty_like(batch)
    for i in range(batch.shape[0]):
        values, vectors = np.linalg.eigh(batch[i])
        out[i] = (vectors * np.maximum(values, floor)) @ vectors.T
    return out


def solve_items(stats: np.ndarray, gram: np.ndarray, gamma: float, factors: int, reg: float,
                unobserved_weight: float, clip: float = 1.0, rhs_weight: float = 1.0
                ) -> np.ndarray:
    """(items, F) item factors from the released sums: ``stats`` (items, T + F) and ``gram``
    (T,), both at scale ``gamma`` in units of the clip (module docstring)."""
    t = triangle_size(factors)
    stats = np.asarray(stats, dtype=np.float64)
    scale = clip * clip / gamma
    local = project_psd(unpack_gram(stats[:, :t] * scale, factors))
    glob = project_psd(unpack_gram(np.asarray(gram, dtype=np.float64) * scale, factors))
    rhs = stats[:, t:] * (clip / (gamma * rhs_weight))
    lhs = local + unobserved_weight * glob + reg * np.eye(factors)
    return np.linalg.solve(lhs, rhs[..., None])[..., 0]
