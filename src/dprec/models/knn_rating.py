"""Item-based k-nearest-neighbour rating prediction (Surprise's KNNWithMeans / KNNBasic).

Similarities between items x and y are computed over their co-rating users U_xy (Surprise's
``similarities.pearson`` and ``similarities.cosine``):

    pearson(x, y) = (n P - S_x S_y) / sqrt((n Q_x - S_x^2)(n Q_y - S_y^2))
    cosine(x, y)  = P / sqrt(Q_x Q_y)

with n = |U_xy|, P = sum_{u in U_xy} r_ux r_uy, S_x = sum_{u in U_xy} r_ux and
Q_x = sum_{u in U_xy} r_ux^2 (so Pearson centres on the means over the co-rating users
only, and cosine is on the raw ratings); a similarity is 0 where n < ``min_support`` or a
denominator is 0, and sim(x, x) = 1. Optional shrinkage multiplies by n / (n + lambda)
(Koren, "Factor in the Neighbors", TKDD 2010, Sec. 2.2).

Prediction of (u, i) takes N_k(u, i), the k items rated by u most similar to i (ties broken
by item index), and averages over those with a positive similarity (Surprise's KNNWithMeans,
``item_based=True``):

    centered:      r_hat_ui = m_i + sum_j sim(i, j) (r_uj - m_j) / sum_j sim(i, j)
    not centered:  r_hat_ui = sum_j sim(i, j) r_uj / sum_j sim(i, j)

where m_i is item i's mean training rating. With no positive neighbour the prediction is m_i;
an item without training ratings is predicted as the global mean mu, and a user without
training ratings as m_i (Surprise gives mu to both unknown users and items).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.models.als import _check_int
from dprec.models.configured import Configured
from dprec.models.fitted import fitted_array, fitted_flag, fitted_value
from dprec.models.pairs import check_pairs

__all__ = ["ItemKNN", "KNNRatingConfig", "item_similarity"]

Similarity = Literal["pearson", "cosine"]

_BLOCK_ENTRIES = 1 << 22  # dense entries per block of similarity rows (32 MiB per array)


@dataclass(frozen=True)
class KNNRatingConfig:
    """Hyper-parameters of :class:`ItemKNN` (validated at construction).

    The defaults are Surprise KNNWithMeans' (k=40, min_support=1, Pearson on items).
    """

    similarity: Similarity = "pearson"
    """Item-item similarity over co-rating users: "pearson" (centred on the co-rated means)
    or "cosine" (raw ratings)."""
    k: int = 40
    """Maximum number of neighbours: the k items the user rated that are most similar to
    the target item (>= 1); only those with a positive similarity take part."""
    min_support: int = 1
    """Minimum number of co-rating users for a non-zero similarity (>= 0; 0 and 1 agree)."""
    shrinkage: float = 0.0
    """lambda in sim * n / (n + lambda) (Koren 2010), n = number of co-rating users
    (finite, >= 0; 0 = no shrinkage, as in Surprise's pearson and cosine)."""
    centered: bool = True
    """Average the neighbours' deviations from their item means and add the target item's
    mean (KNNWithMeans, True), or average the raw ratings (KNNBasic, False)."""

    def __post_init__(self) -> None:
        if self.similarity not in ("pearson", "cosine"):
            raise DprecError(f"similarity must be 'pearson' or 'cosine', "
                             f"got {self.similarity!r}")
        _check_int("k", self.k, 1)
        _check_int("min_support", self.min_support, 0)
        s = self.shrinkage
        if isinstance(s, bool) or not isinstance(s, int | float | np.integer | np.floating) \
                or not (math.isfinite(s) and s >= 0):
            raise DprecError(f"shrinkage must be finite and >= 0, got {s!r}")
        if not isinstance(self.centered, bool | np.bool_):
            raise DprecError(f"centered must be True or False, got {self.centered!r}")


def item_similarity(R: sp.spmatrix | sp.sparray, similarity: Similarity = "pearson",
                    min_support: int = 1, shrinkage: float = 0.0) -> np.ndarray:
    """(N, N) float64 item-item similarities of the stored ratings of R (module docstring).

    Computed by sparse products over the co-rating users, ``_BLOCK_ENTRIES`` dense entries
    at a time: P = R^T R, n = B^T B, S_x = R^T B, Q_x = (R o R)^T B, with B the 0/1 pattern of
    the stored entries (explicit zeros included).
    """
    R = _ratings(R)
    if similarity not in ("pearson", "cosine"):
        raise DprecError(f"similarity must be 'pearson' or 'cosine', got {similarity!r}")
    n_items = R.shape[1]
    B = R.copy()
    B.data = np.ones_like(B.data)
    R2 = R.copy()
    R2.data = R2.data ** 2
    Rt, Bt, R2t = R.T.tocsr(), B.T.tocsr(), R2.T.tocsr()
    out = np.empty((n_items, n_items))
    step = max(1, _BLOCK_ENTRIES // max(n_items, 1))
    for lo in range(0, n_items, step):
        hi = min(n_items, lo + step)
        b = hi - lo
        p = (Rt[lo:hi] @ R).toarray()
        if similarity == "cosine":
            stats = (sp.vstack([R2t[lo:hi], Bt[lo:hi]], format="csr") @ B).toarray()
            q_x, n = stats[:b], stats[b:]
            q_y = (Bt[lo:hi] @ R2).toarray()
            sim = _ratio(p, q_x * q_y)
        else:
            stats = (sp.vstack([Rt[lo:hi], R2t[lo:hi], Bt[lo:hi]], format="csr") @ B).toarray()
            s_x, q_x, n = stats[:b], stats[b:2 * b], stats[2 * b:]
            right = (Bt[lo:hi] @ sp.hstack([R, R2], format="csr")).toarray()
            s_y, q_y = right[:, :n_items], right[:, n_items:]
            v_x = n * q_x - s_x * s_x
            v_y = n * q_y - s_y * s_y
            # cancellation leaves rounding noise where all co-rated values are equal
            v_x[v_x <= 1e-12 * n * q_x] = 0.0
            v_y[v_y <= 1e-12 * n * q_y] = 0.0
            sim = _ratio(n * p - s_x * s_y, v_x * v_y)
        np.clip(sim, -1.0, 1.0, out=sim)
        sim[n < max(min_support, 1)] = 0.0
        if shrinkage > 0:
            sim *= n / (n + shrinkage)
        sim[np.arange(b), np.arange(lo, hi)] = 1.0
        out[lo:hi] = sim
    return out


def _ratio(num: np.ndarray, sq_denom: np.ndarray) -> np.ndarray:
    """num / sqrt(sq_denom), 0 where the denominator is 0."""
    d = np.sqrt(np.maximum(sq_denom, 0.0))
    return np.divide(num, d, out=np.zeros_like(num), where=d > 0)


class ItemKNN(Configured[KNNRatingConfig], config=KNNRatingConfig):
    """Item-based kNN rating predictor (module docstring; Surprise KNNWithMeans, item-based).

    ``fit`` computes the dense item-item similarity matrix (N^2 float64: 23 MB for
    ML-100K's 1,682 items, 110 MB for ML-1M's 3,706) and the item means; ``predict`` selects
    each pair's k neighbours among the user's rated items in a parallel numba loop
    (O(n_u log n_u) per pair). Deterministic: ``rng`` is accepted for the common interface
    and not used.
    """

    _sim: np.ndarray | None = None
    _R: sp.csr_matrix | None = None
    _means: np.ndarray | None = None
    _item_known: np.ndarray | None = None
    _mu = 0.0

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator | None = None,
            on_iteration: IterationHook | None = None) -> ItemKNN:
        """Fit on the (users x items) sparse matrix whose stored entries are the ratings
        (one closed-form pass: ``on_iteration`` is accepted for the common interface and
        never called, as Surprise's KNNWithMeans has no epochs)."""
        cfg = self.config
        R = _ratings(R)
        n_items = R.shape[1]
        counts = np.bincount(R.indices, minlength=n_items)
        sums = np.bincount(R.indices, weights=R.data, minlength=n_items)
        self._mu = float(R.data.mean())
        self._means = np.divide(sums, counts, out=np.full(n_items, self._mu), where=counts > 0)
        self._item_known = counts > 0
        self._sim = item_similarity(R, cfg.similarity, cfg.min_support, cfg.shrinkage)
        self._R = R
        return self

    similarity_matrix = fitted_array("_sim", "(N, N) item-item similarities.")
    item_means = fitted_array(
        "_means", "(N,) mean training rating of each item (mu for items without ratings).")

    global_mean = fitted_value("_mu", "_sim", "mu, the mean of the stored training ratings.")
    is_fitted = fitted_flag("_sim")

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """r_hat for the pairs (users[j], items[j]), float64 (module docstring)."""
        sim = self.similarity_matrix
        users, items = check_pairs(users, items)
        R = self._R
        out = np.empty(len(users))
        _predict(R.indptr, R.indices, R.data, sim, self._means, self._item_known, self._mu,
                 users, items, int(self.config.k), bool(self.config.centered), out)
        return out


def _ratings(R: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """R as float64 CSR with sorted indices and int64 index arrays (stored zeros kept)."""
    if not sp.issparse(R):
        raise DprecError(f"R must be a scipy.sparse matrix, got {type(R).__name__}")
    R = sp.csr_matrix(R, dtype=np.float64, copy=True)
    if R.nnz == 0:
        raise DprecError("R must hold at least one rating, got 0")
    if not np.all(np.isfinite(R.data)):
        raise DprecError("R ratings contain NaN or infinite values")
    if not R.has_sorted_indices:
        R.sort_indices()
    return sp.csr_matrix((R.data, R.indices.astype(np.int64), R.indptr.astype(np.int64)),
                         shape=R.shape)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _predict(indptr, indices, data, sim, means, item_known, mu, users, items, k, centered,
             out):
    n_users = indptr.shape[0] - 1
    n_items = sim.shape[0]
    for j in numba.prange(users.shape[0]):
        u = users[j]
        i = items[j]
        if i < 0 or i >= n_items or not item_known[i]:
            out[j] = mu
            continue
        out[j] = means[i]
        if u < 0 or u >= n_users:
            continue
        start = indptr[u]
        n = indptr[u + 1] - start
        if n == 0:
            continue
        neg = np.empty(n)
        for q in range(n):
            neg[q] = -sim[i, indices[start + q]]
        order = np.argsort(neg, kind="mergesort")  # stable: ties keep item order
        num = 0.0
        den = 0.0
        for q in range(min(k, n)):
            w = -neg[order[q]]
            if w > 0.0:
                p = start + order[q]
                den += w
                if centered:
                    num += w * (data[p] - means[indices[p]])
                else:
                    num += w * data[p]
        if den > 0.0:
            out[j] = means[i] + num / den if centered else num / den
