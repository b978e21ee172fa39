"""Funk-style matrix factorisation of explicit ratings, trained by SGD.

docs/architecture.md §3 (the server model of Laplace-SVD / Laplace-RR-SVD); Funk's Netflix-prize
"SVD" in the biased form of Koren, Bell and Volinsky, "Matrix Factorization Techniques for
Recommender Systems", IEEE Computer 2009, Eq. 4-5, which is also Surprise's ``SVD``:

    r_hat_ui = mu + b_u + b_i + U_u . I_i        (``biases=False``: r_hat_ui = U_u . I_i)

minimising sum_{(u,i) observed} (r_ui - r_hat_ui)^2 + reg (|U_u|^2 + |I_i|^2 + b_u^2 + b_i^2)
by SGD over the observed ratings. With e = r_ui - r_hat_ui, one step is

    b_u += lr (e - reg b_u),   b_i += lr (e - reg b_i)
    U_u += lr (e I_i - reg U_u),   I_i += lr (e U_u - reg I_i)   (both from the old values).

mu is the mean training rating and is not learned. Unlike Surprise, which visits the ratings
user by user in a fixed order, every epoch is one pass over the ratings in a fresh random
order drawn from the caller's Generator.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook, iterations
from dprec.models.als import _check_int
from dprec.models.configured import Configured
from dprec.models.fitted import fitted_array, fitted_flag, fitted_value, require_fitted
from dprec.models.pairs import check_pairs
from dprec.models.sgd_kernels import biased_prediction, sgd_step

logger = logging.getLogger(__name__)

__all__ = ["FunkSVD", "FunkSVDConfig"]


@dataclass(frozen=True)
class FunkSVDConfig:
    """Hyper-parameters of :class:`FunkSVD` (validated at construction).

    The defaults are Surprise ``SVD``'s (n_factors=100, lr_all=0.005, reg_all=0.02,
    n_epochs=20, biased=True, init_mean=0, init_std_dev=0.1).
    """

    factors: int = 100
    """Number of latent factors F (>= 0; 0 is a biases-only model and needs ``biases``)."""
    lr: float = 0.005
    """SGD learning rate, the same for biases and factors (finite, > 0)."""
    reg: float = 0.02
    """L2 weight applied to b_u, b_i, U_u and I_i at every step (finite, >= 0)."""
    epochs: int = 20
    """Number of passes over the training ratings (>= 1)."""
    biases: bool = True
    """Model mu + b_u + b_i + U_u . I_i (True) or the paper's plain U_u . I_i (False)."""
    init_mean: float = 0.0
    """Mean of the Gaussian initial factors (finite); biases start at 0."""
    init_std: float = 0.1
    """Standard deviation of the Gaussian initial factors (finite, >= 0)."""

    def __post_init__(self) -> None:
        _check_int("factors", self.factors, 0)
        _check_real("lr", self.lr, strictly_positive=True)
        _check_real("reg", self.reg, nonnegative=True)
        _check_int("epochs", self.epochs, 1)
        if not isinstance(self.biases, bool | np.bool_):
            raise DprecError(f"biases must be True or False, got {self.biases!r}")
        _check_real("init_mean", self.init_mean)
        _check_real("init_std", self.init_std, nonnegative=True)
        if self.factors == 0 and not self.biases:
            raise DprecError("factors must be >= 1 when biases is False (nothing to learn), "
                             "got factors=0")


def _check_real(name: str, value: object, *, strictly_positive: bool = False,
                nonnegative: bool = False) -> None:
    ok = (not isinstance(value, bool) and isinstance(value, int | float | np.integer
                                                     | np.floating)
          and math.isfinite(value))
    if ok and strictly_positive:
        ok = value > 0
    if ok and nonnegative:
        ok = value >= 0
    rule = "finite and > 0" if strictly_positive else "finite and >= 0" if nonnegative \
        else "a finite number"
    if not ok:
        raise DprecError(f"{name} must be {rule}, got {value!r}")


class FunkSVD(Configured[FunkSVDConfig], config=FunkSVDConfig):
    """Biased (or plain) MF of explicit ratings by SGD (docs/architecture.md §3; Koren et al. 2009).

    ``fit`` draws U ~ N(init_mean, init_std^2) (users x F), then I likewise (items x F),
    from ``rng``; biases start at 0. Each epoch draws a permutation of the stored ratings
    from ``rng`` inside the compiled loop and makes one SGD step per rating, so the same
    generator state gives bit-identical parameters.

    Every stored entry of the training CSR is an observation, including explicit zeros and
    negative values (locally perturbed ratings can take any real value). A user (item) with
    no stored entry, or an index outside the training matrix, is unknown: its pairs are
    predicted as mu plus the bias of the known side (``biases=False``: mu), as Surprise does.
    """

    _U: np.ndarray | None = None
    _I: np.ndarray | None = None
    _bu: np.ndarray | None = None
    _bi: np.ndarray | None = None
    _mu = 0.0
    _user_known: np.ndarray | None = None
    _item_known: np.ndarray | None = None

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> FunkSVD:
        """Fit on the (users x items) sparse matrix whose stored entries are the ratings.

        ``on_iteration(e, self)`` is called after epoch e (0-based); :meth:`predict` works
        inside it.
        """
        cfg = self.config
        rows, cols, vals, shape = _observations(R)
        n_users, n_items = shape
        mu = float(vals.mean())
        U = cfg.init_mean + cfg.init_std * rng.standard_normal((n_users, cfg.factors))
        V = cfg.init_mean + cfg.init_std * rng.standard_normal((n_items, cfg.factors))
        bu = np.zeros(n_users)
        bi = np.zeros(n_items)
        self._U, self._I, self._bu, self._bi, self._mu = U, V, bu, bi, mu
        self._user_known = np.bincount(rows, minlength=n_users) > 0
        self._item_known = np.bincount(cols, minlength=n_items) > 0
        for epoch in iterations(cfg.epochs, on_iteration, self):
            _sgd_epoch(rows, cols, vals, U, V, bu, bi, mu, float(cfg.lr), float(cfg.reg),
                       bool(cfg.biases), rng)
            if not (np.isfinite(U).all() and np.isfinite(V).all()
                    and np.isfinite(bu).all() and np.isfinite(bi).all()):
                raise DprecError(f"FunkSVD diverged in epoch {epoch + 1} (non-finite "
                                 f"parameters); lower lr (got {cfg.lr})")
            logger.debug("FunkSVD epoch %d done", epoch + 1)
        return self

    user_factors = fitted_array("_U", "(M, F) user factors U.")
    item_factors = fitted_array("_I", "(N, F) item factors I.")
    user_biases = fitted_array("_bu", "(M,) user biases b_u (all 0 when ``biases`` is False).")
    item_biases = fitted_array("_bi", "(N,) item biases b_i (all 0 when ``biases`` is False).")

    global_mean = fitted_value("_mu", "_U", "mu, the mean of the stored training ratings.")
    is_fitted = fitted_flag("_U")

    @property
    def known(self) -> tuple[np.ndarray, np.ndarray]:
        """(users, items) with a stored training entry, as boolean masks."""
        name = type(self).__name__
        return require_fitted(self._user_known, name), require_fitted(self._item_known, name)

    @classmethod
    def from_parameters(cls, config: FunkSVDConfig, mu: float, user_factors: np.ndarray,
                        item_factors: np.ndarray, user_biases: np.ndarray,
                        item_biases: np.ndarray, user_known: np.ndarray,
                        item_known: np.ndarray) -> FunkSVD:
        """A fitted model with these parameters (what :meth:`fit` leaves), e.g. one sent
        over the wire; it predicts exactly as the model they were read from."""
        model = cls(config)
        model._U = np.asarray(user_factors, np.float64)
        model._I = np.asarray(item_factors, np.float64)
        model._bu = np.asarray(user_biases, np.float64)
        model._bi = np.asarray(item_biases, np.float64)
        model._mu = float(mu)
        model._user_known = np.asarray(user_known, bool)
        model._item_known = np.asarray(item_known, bool)
        return model

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """r_hat for the pairs (users[j], items[j]), float64; unknown sides fall back (above)."""
        U = self.user_factors
        users, items = check_pairs(users, items)
        ku = _known(users, self._user_known)
        ki = _known(items, self._item_known)
        out = np.full(len(users), self._mu)
        if self.config.biases:
            out[ku] += self._bu[users[ku]]
            out[ki] += self._bi[items[ki]]
        both = ku & ki
        dot = np.einsum("jf,jf->j", U[users[both]], self._I[items[both]])
        if self.config.biases:
            out[both] += dot
        else:
            out[both] = dot
        return out


def _observations(R: sp.spmatrix | sp.sparray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         tuple[int, int]]:
    """(rows int64, cols int64, ratings float64, shape) of every stored entry of R as CSR."""
    if not sp.issparse(R):
        raise DprecError(f"R must be a scipy.sparse matrix, got {type(R).__name__}")
    R = sp.csr_matrix(R)
    if R.nnz == 0:
        raise DprecError("R must hold at least one rating, got 0")
    vals = np.asarray(R.data, dtype=np.float64)
    if not np.all(np.isfinite(vals)):
        raise DprecError("R ratings contain NaN or infinite values")
    rows = np.repeat(np.arange(R.shape[0], dtype=np.int64), np.diff(R.indptr))
    return rows, R.indices.astype(np.int64), vals, (int(R.shape[0]), int(R.shape[1]))


def _known(index: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """True where ``index`` is inside ``seen`` and that row had a training rating."""
    inside = (index >= 0) & (index < len(seen))
    inside[inside] = seen[index[inside]]
    return inside


@numba.njit(cache=True, error_model="numpy")
def _sgd_epoch(rows, cols, vals, U, V, bu, bi, mu, lr, reg, biases, rng):
    """One SGD pass over the ratings in the order ``rng.permutation(n)``."""
    order = rng.permutation(vals.shape[0])
    for t in range(order.shape[0]):
        k = order[t]
        u = rows[k]
        i = cols[k]
        e = vals[k] - biased_prediction(U, V, bu, bi, bu, 0.0, u, i, False)  # U_u . V_i
        if biases:
            e -= mu + bu[u] + bi[i]
        sgd_step(U, V, bu, bi, u, i, e, lr, reg, biases)
