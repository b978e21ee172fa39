"""The noisy power-iteration start of dpals (``init = "power"``): item factors spanning a
DP estimate of the top-F right singular subspace of the users' weighted item matrix, instead
of random ones (Chien, Jain, Krichene, Rendle, Song, Thakurta, Zhang, "Private Alternating
Least Squares", ICML 2021, the private initialisation of their analysis; the noisy power
method of Hardt and Price, NeurIPS 2014).

Each of ``init_iterations`` rounds, every client

1. orthonormalises the broadcast item factors itself, ``Q = qr(V)`` (``Q^T Q = I`` whatever
   the server sent: the bound below never rests on the server);
2. takes its contribution weights ``c_u`` (:func:`~.client.contributions`: the same items and
   weights its ALS rounds use), normalised to ``a = c_u / ||c_u||_2``;
3. sends ``R(gamma_0 a (a^T Q))`` (items x F, zeros off its selected items), quantised by
   randomised rounding.

The secure sum releases ``sum_u a_u a_u^T Q + noise`` (one noisy step of the power method on
``A^T A``); the server zeroes the tail rows (a head restriction, post-processing of the DP
counts) and publishes ``V = init_scale sqrt(items) qr(Y)``, whose entries have the root mean
square of the random start's. The first ALS round then solves the users from it.

Sensitivity against the zero vector (zero-out, as every dpals release, :mod:`.accounting`):
``||a (a^T Q)||_F = ||a|| ||Q^T a|| <= 1``, each coordinate is at most 1, and the at most
``M F`` non-zero coordinates (``M`` the items bound) give ``||x||_1 <= sqrt(M F)``; with the
rounding, ``Delta_2 = gamma_0 + sqrt(M F)`` and ``Delta_1 = gamma_0 sqrt(M F) + M F``.
``gamma_0`` keeps the rounding term within 1% of ``gamma_0``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp

from dprec.systems.dpals.accounting import ROUNDING_SLACK
from dprec.systems.dpals.draws import pair_state, stream_key, uniform_at
from dprec.systems.dpals.statistics import accumulator_chunks

__all__ = ["INIT", "INIT_RELEASE", "init_gamma", "init_round_id", "init_sensitivity",
           "orthonormal", "power_factors", "power_statistics", "unit_rows"]

INIT = "init"
"""The purpose of the clients' rounding draws in the init rounds."""
INIT_RELEASE = "init_power"
"""The release's name in the plan, the event log and the report."""
_ROUND_BASE = 1 << 20
"""Init round ``i``'s id (its draws' key): ``_ROUND_BASE + i``, apart from the counts' 0
and the ALS steps' ``1..steps``."""


def init_round_id(iteration: int) -> int:
    """The round id the clients' draws of power iteration ``iteration`` are keyed by."""
    return _ROUND_BASE + int(iteration)


def init_gamma(max_items: int, factors: int) -> float:
    """The smallest ``gamma_0`` with the rounding term ``sqrt(M F)`` within
    :data:`~.accounting.ROUNDING_SLACK` of ``gamma_0``."""
    return math.sqrt(max_items * factors) / ROUNDING_SLACK


def init_sensitivity(max_items: int, factors: int, gamma: float) -> tuple[float, float]:
    """(Delta_1, Delta_2) of one client's quantised init contribution (module docstring)."""
    s = max_items * factors
    return gamma * math.sqrt(s) + s, gamma + math.sqrt(s)


def orthonormal(V: np.ndarray) -> np.ndarray:
    """``Q`` of the reduced QR of ``V`` (Householder: ``Q^T Q = I`` for any finite ``V``,
    rank-deficient too)."""
    return np.linalg.qr(np.asarray(V, dtype=np.float64), mode="reduced")[0]


def unit_rows(weights: sp.csr_matrix) -> sp.csr_matrix:
    """``weights`` with every non-empty row scaled to L2 norm 1."""
    w = sp.csr_matrix(weights, dtype=np.float64, copy=True)
    norms = np.sqrt(np.asarray(w.multiply(w).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    w.data *= np.repeat(scale, np.diff(w.indptr))
    return w


@numba.njit(parallel=True, cache=True)
def _outer_rows(P: np.ndarray, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                users: np.ndarray, key: np.uint64, gamma: float, n_items: int,
                bounds: np.ndarray) -> np.ndarray:
    f = P.shape[1]
    acc = np.zeros((bounds.size - 1, n_items, f), dtype=np.int64)
    for c in numba.prange(bounds.size - 1):
        for r in range(bounds[c], bounds[c + 1]):
            for p in range(indptr[r], indptr[r + 1]):
                item = indices[p]
                s = pair_state(key, users[r], item)
                for j in range(f):
                    y = gamma * data[p] * P[r, j]
                    low = np.floor(y)
                    up = 1 if uniform_at(s, j) < y - low else 0
                    acc[c, item, j] += np.int64(low) + up
    out = np.zeros((n_items, f), dtype=np.int64)
    for c in range(bounds.size - 1):
        out += acc[c]
    return out


def power_statistics(V: np.ndarray, weights: sp.csr_matrix, gamma: float, seed: int,
                     round_id: int, ids: np.ndarray) -> np.ndarray:
    """``sum_u R(gamma a_u (a_u^T Q))``, (items, F) int64: the exact integer sum of the
    clients' quantised init contributions (module docstring), ``Q = orthonormal(V)``,
    ``a_u`` the unit rows of ``weights``; user ``u``'s coordinate ``f`` of item ``j`` rounds
    with the uniform ``(u, j, f)`` of the round's INIT stream (:mod:`.draws`)."""
    a = unit_rows(weights)
    n_items, f = a.shape[1], V.shape[1]
    P = np.ascontiguousarray(a @ orthonormal(V))
    indptr = a.indptr.astype(np.int64)
    return _outer_rows(P, indptr, a.indices.astype(np.int64), np.asarray(a.data, np.float64),
                       np.asarray(ids, np.int64), stream_key(seed, INIT, round_id),
                       float(gamma), int(n_items), accumulator_chunks(indptr, n_items * f))


def power_factors(total: np.ndarray, gamma: float, init_scale: float,
                  head: np.ndarray | None = None) -> np.ndarray:
    """The server's step: ``init_scale sqrt(items) qr(Y)`` from the released noisy sum
    ``total`` (items x F at scale ``gamma``), the rows outside ``head`` zeroed first."""
    Y = np.asarray(total, dtype=np.float64) / gamma
    if head is not None:
        Y = np.where(head[:, None], Y, 0.0)
    return init_scale * math.sqrt(Y.shape[0]) * orthonormal(Y)
