"""EASE: an item-item linear model in closed form (Steck, "Embarrassingly Shallow
Autoencoders for Sparse Data", WWW 2019, Eq. 8).

With X the binary (users x items) training matrix and lambda the L2 penalty,

    P = (X^T X + lambda I)^-1,    B = I - P diagMat(1 / diag(P)),

so B_ij = -P_ij / P_jj off the diagonal and diag(B) = 0 (the constraint that keeps an item
from predicting itself). A user's scores are their history times B: x_u B. There are no
per-user parameters, so a user unseen at training is scored from their history alone.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from dprec.errors import DprecError

__all__ = ["EASEConfig", "ease_weights"]


@dataclass(frozen=True)
class EASEConfig:
    """EASE's one hyper-parameter."""

    regularization: float = 500.0
    """lambda, the L2 penalty on B (Steck's ML-20M value is 500; tune it per data set)."""

    def __post_init__(self) -> None:
        lam = self.regularization
        if (isinstance(lam, bool) or not isinstance(lam, numbers.Real)
                or not math.isfinite(lam) or lam <= 0):
            raise DprecError(f"regularization must be a finite number > 0, got {lam!r}")


def ease_weights(train: sp.spmatrix, regularization: float) -> np.ndarray:
    """B (n_items x n_items, float64) of Steck's Eq. 8 for the binarised ``train``: the
    Cholesky solve of (X^T X + lambda I) P = I, then B = -P / diag(P) column-wise with
    diag(B) = 0. Memory: about three n_items^2 float64 arrays."""
    x = sp.csr_matrix(train, dtype=np.float64, copy=True)
    x.eliminate_zeros()
    x.data[:] = 1.0
    n = x.shape[1]
    gram = np.asarray((x.T @ x).toarray(), dtype=np.float64)
    gram[np.diag_indices(n)] += float(regularization)
    p = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram, overwrite_a=True,
                                                       check_finite=False),
                               np.eye(n), overwrite_b=True, check_finite=False)
    b = p / -np.diag(p)[None, :]
    b[np.diag_indices(n)] = 0.0
    return b
