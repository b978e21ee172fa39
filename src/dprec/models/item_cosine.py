"""Item-kNN for implicit feedback: cosine item-item similarity with shrinkage, each item's
top-k neighbours kept (Sarwar et al., WWW 2001, Sec. 3.1.2 and 3.2.1; the shrunk cosine of
Koren, KDD 2008, Sec. 2.2, as in LensKit's ``ItemKNNScorer``).

With X the binary (users x items) training matrix, c_ij = (X^T X)_ij the number of users of
both items and n_i = c_ii the users of item i,

    sim(i, j) = c_ij / (sqrt(n_i n_j) + shrinkage),   i != j,

(0 where c_ij = 0). Each item i keeps its ``neighbours`` most similar other items KNN(i)
(ties: the smaller item id, :func:`dprec.selection.top_k`), and a user's score for i is the
sum of the similarities to their own items among them (DPLCF's Eq. 12 form,
:func:`dprec.models.itemknn.score_item_neighbourhood`):

    score(u, i) = sum_{j in KNN(i)} sim(i, j) x_uj.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.selection import top_k

__all__ = ["ItemKNNConfig", "cosine_neighbours"]


@dataclass(frozen=True)
class ItemKNNConfig:
    """Item-kNN's two hyper-parameters."""

    neighbours: int = 100
    """k: the most similar other items each item keeps (capped at n_items - 1)."""
    shrinkage: float = 0.0
    """Added to the cosine's denominator: pulls the similarity of rarely co-used pairs to 0."""

    def __post_init__(self) -> None:
        k = self.neighbours
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise DprecError(f"neighbours must be an integer >= 1, got {k!r}")
        s = self.shrinkage
        if (isinstance(s, bool) or not isinstance(s, numbers.Real)
                or not math.isfinite(s) or s < 0):
            raise DprecError(f"shrinkage must be a finite number >= 0, got {s!r}")


def cosine_neighbours(train: sp.spmatrix, neighbours: int, shrinkage: float,
                      block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Each item's ``neighbours`` most similar other items under the shrunk cosine of the
    binarised ``train``: (indices (n, k) int32, sims (n, k) float32), rows by decreasing
    similarity, ties by the smaller item id; an item is never its own neighbour.

    Blocks of ``block`` items at a time (X[:, B]^T X as a sparse product): memory about
    ``block`` x n_items float64 beside the training matrix, never n_items^2.
    """
    x = sp.csc_matrix(train, dtype=np.float64, copy=True)
    x.eliminate_zeros()
    x.data[:] = 1.0
    n = x.shape[1]
    k = min(int(neighbours), n - 1)
    root = np.sqrt(np.diff(x.indptr).astype(np.float64))
    xt = x.T.tocsr()
    idx = np.zeros((n, max(k, 0)), np.int32)
    val = np.zeros((n, max(k, 0)), np.float32)
    if k <= 0:
        return idx, val
    for start in range(0, n, block):
        stop = min(start + block, n)
        co = (xt[start:stop] @ x).toarray()
        denom = root[start:stop, None] * root[None, :] + float(shrinkage)
        with np.errstate(divide="ignore", invalid="ignore"):
            sim = np.where(co > 0, co / denom, 0.0).astype(np.float32)
        rows = np.arange(stop - start)
        sim[rows, start + rows] = -np.inf
        best = top_k(sim, k)
        idx[start:stop] = best
        val[start:stop] = np.take_along_axis(sim, best, axis=1)
    return idx, val
