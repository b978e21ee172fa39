"""GMF: Generalised Matrix Factorisation trained with binary cross-entropy and negative sampling.

He, Liao, Zhang, Nie, Hu and Chua, "Neural Collaborative Filtering", WWW 2017, Sec. 3.2.
The prediction is

    y_hat(u, i) = sigma(h . (p_u * q_i) + b)

with user and item embeddings p_u, q_i (F each), an output weight vector h (F) and the bias
b of the prediction layer (a ``Dense(1, activation="sigmoid")`` in the paper's reference
code; a constant shift, so it never changes a ranking). Training minimises the log loss
(Sec. 3.1.1, Eq. 7)

    L = - sum_{(u,i) in Y} ln y_hat_ui - sum_{(u,j) in Y-} ln(1 - y_hat_uj)
        + reg sum (|p_u|^2 + |q_i|^2)   (per step, see ``GMFConfig.regularization``)

where Y are the observed positives and Y- holds, for every positive and every epoch,
``negatives`` items drawn uniformly among the items the user never interacted with (the
paper's sampling, ratio 4 by default). We optimise by plain per-instance SGD instead of
mini-batch Adam; with z = h . (p_u * q_i) + b, label y and g = sigma(z) - y a step is

    p_u -= lr (g h * q_i + reg p_u)
    q_i -= lr (g h * p_u + reg q_i)
    h   -= lr g p_u * q_i
    b   -= lr g.

h and b are shared by every instance and are not regularised (per-step weight decay on them
would shrink them millions of times an epoch). h starts at ones, so training starts from
logistic MF (the paper's remark that GMF with h = 1 recovers MF); p and q start Gaussian.

Ranking needs only the logit, and h . (p_u * q_i) = (p_u * h) . q_i, so
``user_factors = P * h`` and ``item_factors = Q`` rank exactly as GMF does; this is how
DPLCF's "GMF trained centrally on obfuscated data" baseline uses it (see
:class:`dprec.systems.central.TrainedOnObfuscated`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DataError, DprecError, check_positive
from dprec.iteration import IterationHook, iterations
from dprec.models.als import _check_int, _check_nonnegative
from dprec.models.bpr import _positives
from dprec.models.factor_model import FactorModel
from dprec.models.fitted import fitted_array, require_fitted

logger = logging.getLogger(__name__)

__all__ = ["GMF", "GMFConfig"]


@dataclass(frozen=True)
class GMFConfig:
    """Hyper-parameters of :class:`GMF` (validated at construction).

    Defaults from a small sweep on ML-100K (latest leave-one-out, 3 seeds) for the DPLCF
    baseline: at eps = 1 (30% ones after flipping) few factors and a stronger L2 help, and
    8 factors with reg 0.03 stay within noise of the best there while losing little
    (sampled HR@10 0.56 vs 0.58) on unflipped data.
    """

    factors: int = 8
    """Number of latent factors F, the size of p_u, q_i and h (>= 1)."""
    epochs: int = 10
    """Number of epochs; one epoch visits every positive once, in a fresh random order, each
    followed by its ``negatives`` sampled negatives (>= 1)."""
    lr: float = 0.02
    """SGD learning rate for every parameter (> 0)."""
    regularization: float = 0.03
    """L2 weight on p_u and q_i, applied at every step they take part in (>= 0); h and b are
    not regularised."""
    negatives: int = 4
    """Negative instances per positive per epoch, each drawn uniformly among the items the
    user never interacted with (the paper's sampling ratio, default 4; integer >= 1)."""
    init_scale: float = 0.1
    """Standard deviation of the Gaussian initial embeddings P and Q (> 0)."""

    def __post_init__(self) -> None:
        _check_int("factors", self.factors, 1)
        _check_int("epochs", self.epochs, 1)
        check_positive("lr", self.lr)
        _check_nonnegative("regularization", self.regularization)
        _check_int("negatives", self.negatives, 1)
        check_positive("init_scale", self.init_scale)


class GMF(FactorModel[GMFConfig], config=GMFConfig, label="GMF"):
    """GMF (He et al. 2017, Sec. 3.2) trained by per-instance SGD in a numba loop.

    Sampling: each epoch shuffles the positives (entries with r_ui > 0) of the usable users
    and follows each positive (u, i) by ``negatives`` items j drawn uniformly from the
    complement of u's row: the k-th absent item is found by a binary search in the sorted
    row, so a draw costs O(log n_u) at any density and never loops. Users with every item
    (no negative exists) or with no item are skipped and counted in :attr:`diagnostics`.

    Randomness: P and Q are drawn from the ``rng`` given to :meth:`fit`, then one seed is
    drawn from it for a fresh Generator that the compiled loop advances (shuffles and
    negatives). No global state is touched; the same seed gives bit-identical factors. The
    loop is serial for that reason.
    """

    _P: np.ndarray | None = None
    _Q: np.ndarray | None = None
    _h: np.ndarray | None = None
    _b: float | None = None

    def __init__(self, config: GMFConfig | None = None) -> None:
        super().__init__(config)
        self.diagnostics: dict[str, object] = {}
        """Counters of the last fit: ``users_without_negatives`` (full rows, skipped),
        ``users_without_positives`` (empty rows, nothing to train on),
        ``instances_per_epoch`` and ``epoch_loss`` (= :attr:`loss_history`)."""

    def _fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator, progress: str | None,
             track_loss: bool, on_iteration: IterationHook | None) -> None:
        """Entries with r_ui > 0 are the positives. loss_history, filled whatever
        ``track_loss``: the mean log loss of each epoch's instances, each measured just
        before its SGD step (the data term of L per instance, without the regulariser)."""
        cfg = self.config
        pos = _positives(R)
        n_users, n_items = pos.shape
        counts = np.diff(pos.indptr)
        usable = (counts > 0) & (counts < n_items)
        full = int(np.count_nonzero(counts == n_items)) if n_items else 0
        if full:
            logger.info("GMF: %d user(s) interacted with every item; no negative can be "
                        "sampled for them, skipped", full)
        if not usable.any():
            raise DataError("R has no user with both a positive and a negative item; "
                            "GMF needs at least one")
        inst_users = np.repeat(np.arange(n_users, dtype=np.int64), np.where(usable, counts, 0))
        inst_items = pos.indices[np.repeat(usable, counts)].astype(np.int64)

        P = cfg.init_scale * rng.standard_normal((n_users, cfg.factors))
        Q = cfg.init_scale * rng.standard_normal((n_items, cfg.factors))
        h = np.ones(cfg.factors)
        b = np.zeros(1)
        kernel_rng = np.random.default_rng(int(rng.integers(2**63)))
        order = np.arange(inst_users.shape[0], dtype=np.int64)

        for epoch in iterations(cfg.epochs, on_iteration, self, progress=progress):
            loss = _gmf_epoch(pos.indptr, pos.indices, inst_users, inst_items, order, P, Q, h,
                              b, cfg.lr, cfg.regularization, cfg.negatives, n_items,
                              kernel_rng)
            self.loss_history.append(loss)
            logger.debug("GMF epoch %d: mean log loss %.6g", epoch + 1, loss)
            self._P, self._Q, self._h, self._b = P, Q, h, float(b[0])
        if not all(np.all(np.isfinite(x)) for x in (P, Q, h, b)):
            raise DprecError(f"GMF diverged (non-finite parameters); lower lr (got {cfg.lr})")
        self._P, self._Q, self._h, self._b = P, Q, h, float(b[0])
        self.diagnostics = {
            "users_without_negatives": full,
            "users_without_positives": int(np.count_nonzero(counts == 0)),
            "instances_per_epoch": int(inst_users.shape[0] * (1 + cfg.negatives)),
            "epoch_loss": list(self.loss_history),
        }

    @property
    def user_factors(self) -> np.ndarray:
        """(M, F) user factors P * h: ``user_factors @ item_factors.T`` is the logit minus b."""
        return require_fitted(self._P, "GMF") * self.h

    item_factors = fitted_array("_Q", "(N, F) item embeddings Q.")
    h = fitted_array("_h", "(F,) weights of the prediction layer.")

    @property
    def bias(self) -> float:
        """Bias b of the prediction layer (shifts every logit, changes no ranking)."""
        require_fitted(self._h, "GMF")
        return float(self._b)  # type: ignore[arg-type]

    def score(self, users: np.ndarray) -> np.ndarray:
        """(len(users), N) logits h . (p_u * q_i) + b; sigma of these is y_hat."""
        return super().score(users) + self.bias


@numba.njit(cache=True)
def _uniform_index(rng, n):
    return min(int(rng.random() * n), n - 1)


@numba.njit(cache=True)
def _kth_absent(indices, start, end, k):
    """The k-th (0-based) item not in the sorted row indices[start:end].

    Before position m of the row, indices[m] - (m - start) items are absent, which never
    decreases in m; the answer is k + (number of row items below it) = k + (m - start) for
    the first m whose count of absent items exceeds k.
    """
    lo, hi = start, end
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] - (mid - start) <= k:
            lo = mid + 1
        else:
            hi = mid
    return k + (lo - start)


@numba.njit(cache=True)
def _sample_negatives(indptr, indices, users, n_items, rng, out):
    """One negative per entry of ``users`` (for tests of the sampler)."""
    for t in range(users.shape[0]):
        u = users[t]
        start, end = indptr[u], indptr[u + 1]
        out[t] = _kth_absent(indices, start, end, _uniform_index(rng, n_items - (end - start)))


@numba.njit(cache=True, error_model="numpy")
def _sgd_step(P, Q, h, b, u, i, y, lr, reg):
    """One SGD step on instance (u, i, y); returns its log loss before the step."""
    f = P.shape[1]
    z = b[0]
    for a in range(f):
        z += h[a] * P[u, a] * Q[i, a]
    # sigma(z) and the log loss ln(1 + e^-z) (y = 1) or ln(1 + e^z) (y = 0) from one exp
    if z >= 0.0:
        e = np.exp(-z)
        s = 1.0 / (1.0 + e)
        loss = np.log1p(e) + (0.0 if y > 0.5 else z)
    else:
        e = np.exp(z)
        s = e / (1.0 + e)
        loss = np.log1p(e) - (z if y > 0.5 else 0.0)
    g = s - y
    for a in range(f):
        pa = P[u, a]
        qa = Q[i, a]
        ha = h[a]
        P[u, a] -= lr * (g * ha * qa + reg * pa)
        Q[i, a] -= lr * (g * ha * pa + reg * qa)
        h[a] -= lr * g * pa * qa
    b[0] -= lr * g
    return loss


@numba.njit(cache=True, error_model="numpy")
def _gmf_epoch(indptr, indices, inst_users, inst_items, order, P, Q, h, b, lr, reg, negatives,
               n_items, rng):
    """Shuffle ``order`` (Fisher-Yates), then each positive and its sampled negatives."""
    n = order.shape[0]
    for t in range(n - 1, 0, -1):
        s = _uniform_index(rng, t + 1)
        order[t], order[s] = order[s], order[t]
    total = 0.0
    for t in range(n):
        k = order[t]
        u = inst_users[k]
        total += _sgd_step(P, Q, h, b, u, inst_items[k], 1.0, lr, reg)
        start, end = indptr[u], indptr[u + 1]
        n_neg = n_items - (end - start)
        for _ in range(negatives):
            j = _kth_absent(indices, start, end, _uniform_index(rng, n_neg))
            total += _sgd_step(P, Q, h, b, u, j, 0.0, lr, reg)
    return total / (n * (1 + negatives))
