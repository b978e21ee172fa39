"""Probabilistic neighbourhood model (PNBM) and its two DP trainers (seed 004,
docs/architecture.md §4).

Item-item NBM with a *learned* similarity S (seed 004, Eq. 2):

    r_hat_ui = r_bar_i + sum_{j != i} s_ij (r_uj - r_bar_j) I_uj / max(sum_{j != i} |s_ij| I_uj, C)

r_bar_i is item i's mean training rating. The floor C (``min_norm``) is the lower bound
|S_i| I_u >= C of Algorithm 1, enforced here rather than assumed (as the authors' code does);
C = 0 gives Eq. 2 exactly (r_bar_i when no neighbour is rated). S is learned by minimising
sum (r_ui - r_hat_ui)^2 + lambda |S|^2 (Eq. 3), three ways:

- :class:`PNBM`: mini-batch SGD (Eq. 4), non-private.
- :class:`DPSGDPNBM`: Algorithm 1, Laplace noise on the gradient with the clamped error
  |e| <= e_max(t) = 0.5 + (phi - 1)/(t + 1) and sensitivity DeltaF_t = 2 e_max(t) phi / C
  (:class:`~dprec.mechanisms.gradient_laplace.GradientLaplace`).
- :class:`DPPSPNBM`: Algorithm 2, one SGLD sample of the posterior scaled by eps/(4B),
  B = (r_max - r_min)^2 tau, each user capped at tau ratings.

Sparsity: item i keeps ``neighbours`` = Nk neighbours, the items co-rated with i by the most
training users (ties to the lower id), fixed at the start of ``fit``; S is stored blocked, as
``(n_items, k)`` neighbour ids (sorted) and weights, k = min(Nk, n_items - 1). A rating's
gradient touches only row i at u's rated neighbours, O(n_u + k) by a merge of two sorted
lists; a mini-batch is processed in parallel by item (each row is owned by one thread).

Randomness comes only from the caller's Generator (initial S, mini-batches, noise, caps).
Noise is float64 ``numpy`` sampling, fine for simulation; a deployment should draw it from a
CSPRNG with a snapping or discrete sampler (Mironov, CCS 2012).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.mechanisms.gradient_laplace import GradientLaplace, error_bound
from dprec.models.configured import Configured
from dprec.models.fitted import fitted_array, fitted_flag
from dprec.models.pairs import check_pairs
from dprec.models.pnbm_config import DPPSPNBMConfig, DPSGDPNBMConfig, PNBMConfig
from dprec.models.pnbm_kernels import (
    Data,
    as_ratings,
    batch_gradient,
    cap_user_ratings,
    corated_neighbours,
    item_means,
    nbm_predict,
    pearson_weights,
    touched_pairs,
)
from dprec.privacy.events import EventLog, LocalReportDpEvent

__all__ = ["DPPSPNBM", "DPSGDPNBM", "PNBM", "pair_inclusion_probability"]


class _NeighbourhoodModel(Configured[Any]):
    """Shared state and prediction (Eq. 2) of the three trainers."""

    config: PNBMConfig | DPSGDPNBMConfig | DPPSPNBMConfig

    def __init__(self, config: PNBMConfig | DPSGDPNBMConfig | DPPSPNBMConfig | None = None
                 ) -> None:
        super().__init__(config)
        self._W: np.ndarray | None = None
        self._W0: np.ndarray | None = None
        self._nbr: np.ndarray | None = None
        self._means: np.ndarray | None = None
        self._hist: Data | None = None
        self._mu = 0.0
        self.loss_history: list[float] = []
        """Sum of squared training errors of each mini-batch, divided by its size."""

    def _prepare(self, R: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
        cfg = self.config
        R = as_ratings(R, cfg.rating_min, cfg.rating_max)
        self._means = item_means(R)
        self._mu = float(R.data.mean())
        self._hist = Data.of(R, self._means)
        self.loss_history = []
        return R

    def _structure(self, R: sp.csr_matrix) -> None:
        k = min(int(self.config.neighbours), R.shape[1] - 1)
        self._nbr = corated_neighbours(R, k)

    @classmethod
    def from_weights(cls, R: sp.spmatrix | sp.sparray, neighbours: np.ndarray,
                     weights: np.ndarray, config: object | None = None) -> _NeighbourhoodModel:
        """A model predicting with a given S (e.g. a released one) from ``R``'s ratings.

        ``neighbours``: (n_items, k) ids, each row strictly increasing and without the item
        itself; ``weights``: the (n_items, k) similarities aligned with it.
        """
        model = cls(config)  # type: ignore[call-arg]
        R = model._prepare(R)
        nbr = np.asarray(neighbours)
        W = np.array(weights, dtype=np.float64)
        n = R.shape[1]
        if nbr.ndim != 2 or nbr.shape[0] != n or not 1 <= nbr.shape[1] <= n - 1:
            raise DprecError(f"neighbours must have shape ({n}, k) with 1 <= k <= {n - 1}, "
                             f"got {nbr.shape}")
        if not np.issubdtype(nbr.dtype, np.integer) or nbr.min() < 0 or nbr.max() >= n:
            raise DprecError(f"neighbours must be integer item ids in [0, {n})")
        if (np.diff(nbr, axis=1) <= 0).any() or (nbr == np.arange(n)[:, None]).any():
            raise DprecError("neighbours rows must be strictly increasing and must not hold "
                             "the item itself")
        if W.shape != nbr.shape or not np.isfinite(W).all():
            raise DprecError(f"weights must be finite with shape {nbr.shape}, got {W.shape}")
        model._nbr = nbr.astype(np.int32)
        model._W, model._W0 = W, W.copy()
        return model

    neighbours = fitted_array("_nbr", "(n_items, k) int32 neighbour ids of each item, sorted.")
    weights = fitted_array(
        "_W", "(n_items, k) similarities s_ij, aligned with :attr:`neighbours`.")

    initial_weights = fitted_array("_W0", "S(1) as drawn (times beta), before the first update.")
    item_means = fitted_array(
        "_means", "r_bar_i of the training ratings (the global mean for unrated items).")

    is_fitted = fitted_flag("_W")

    def similarity(self) -> sp.csr_matrix:
        """S as a sparse (n_items, n_items) matrix with at most k entries per row."""
        nbr, W = self.neighbours, self.weights
        n, k = nbr.shape
        return sp.csr_matrix((W.ravel(), nbr.ravel(), np.arange(0, n * k + 1, k)),
                             shape=(n, n))

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """r_hat (Eq. 2) of the pairs from each user's training ratings; an unknown user gets
        r_bar_i, an unknown item (outside the training matrix) the global mean."""
        W = self.weights
        users, items = check_pairs(users, items)
        h = self._hist
        assert h is not None and self._means is not None and self._nbr is not None
        return nbm_predict(h.indptr, h.indices, h.x, self._nbr, W, self._means, users, items,
                        float(self.config.min_norm), self._mu)

    def objective(self, R: sp.spmatrix | sp.sparray) -> float:
        """sum (r_ui - r_hat_ui)^2 + lambda |S|^2 over the stored ratings of ``R`` (Eq. 3),
        each predicted from the model's training ratings of u other than i."""
        R = sp.csr_matrix(R)
        coo = R.tocoo()
        pred = self.predict(coo.row.astype(np.int64), coo.col.astype(np.int64))
        return float(np.sum((coo.data - pred) ** 2) + self.config.reg * np.sum(self.weights**2))

    def _init_weights(self, R: sp.csr_matrix, rng: np.random.Generator,
                      init: str = "random") -> np.ndarray:
        assert self._nbr is not None and self._means is not None
        beta = float(self.config.init_scale)
        if init == "pearson":
            return beta * pearson_weights(R, self._nbr, self._means)
        return beta * rng.uniform(-0.1, 0.1, self._nbr.shape)

    def _step_done(self, W: np.ndarray, t: int, hook: IterationHook | None) -> None:
        if not np.isfinite(W).all():
            raise DprecError(f"{type(self).__name__} diverged at iteration {t + 1} "
                             f"(non-finite similarities); lower lr (got {self.config.lr})")
        if hook is not None:
            hook(t, self)


def _batch_size(n: int, fraction: float) -> int:
    return max(1, min(n, int(round(fraction * n))))


def _sgd(model: _NeighbourhoodModel, data: Data, positions: np.ndarray, W: np.ndarray,
         rng: np.random.Generator, hook: IterationHook | None, *, grad_scale: float = 1.0,
         noise: GradientLaplace | None = None, phi: float = math.inf) -> None:
    """The SGD loop of Eq. 4 and Algorithm 1, written once.

    Per iteration t = 1..K: a uniform sample of gamma |positions| ratings without
    replacement; G = sum e dr_hat/dS (clamped when ``noise`` is given); G += Lap(b_t)
    (``noise``); S <- S - eta (grad_scale G + lambda S).
    """
    cfg = model.config
    assert model._nbr is not None and model._means is not None
    L = _batch_size(len(positions), float(cfg.batch_fraction))
    lr, reg = float(cfg.lr), float(cfg.reg)
    for t in range(1, int(cfg.iterations) + 1):
        batch = positions[rng.choice(len(positions), L, replace=False)] \
            if L < len(positions) else positions
        e_max = error_bound(t, phi) if noise is not None else math.inf
        G, sq = batch_gradient(data, batch, model._nbr, W, model._means,
                               float(cfg.min_norm), e_max, phi)
        if noise is not None:
            G = noise(G, t, rng)
        W *= 1.0 - lr * reg
        W -= lr * grad_scale * G
        model.loss_history.append(sq / L)
        model._step_done(W, t - 1, hook)


class PNBM(_NeighbourhoodModel, config=PNBMConfig):
    """Non-private PNBM: S learned by mini-batch SGD on Eq. 3 (Eq. 4)."""

    config: PNBMConfig

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> PNBM:
        """Learn S from the stored ratings of ``R`` (users x items); randomness from ``rng``."""
        R = self._prepare(R)
        self._structure(R)
        W = self._init_weights(R, rng, self.config.init)
        self._W0, self._W = W.copy(), W
        assert self._hist is not None
        _sgd(self, self._hist, np.arange(R.nnz, dtype=np.int64), W, rng, on_iteration)
        return self


class DPSGDPNBM(_NeighbourhoodModel, config=DPSGDPNBMConfig):
    """DPSGD-PNBM, Algorithm 1: SGD with clamped errors and Laplace noise on the gradient.

    Only users with >= ``min_ratings`` training ratings train S (all users' ratings still
    form the item means and the histories used to predict). S(1) = beta U(-0.1, 0.1)
    (data-independent); per iteration the gradient's error is clamped to e_max(t), each
    factor (x_uj - p sgn s_ij) to phi, the denominator floored at C, and
    :class:`GradientLaplace` noise is added before S <- S - eta (beta G + lambda S).
    """

    config: DPSGDPNBMConfig

    def __init__(self, config: DPSGDPNBMConfig | None = None) -> None:
        super().__init__(config)
        self.mechanism = GradientLaplace(
            self.config.epsilon, self.config.iterations, self.config.batch_fraction,
            self.config.rating_max - self.config.rating_min, self.config.min_norm)
        self.train_users_: np.ndarray | None = None
        """Users who trained S (>= ``min_ratings`` ratings)."""
        self.train_ratings_: np.ndarray | None = None
        """Their numbers of training ratings."""
        self.touched_: np.ndarray | None = None
        """Per training user: gradient entries their ratings' terms reach (the L1
        multiplier of :meth:`GradientLaplace.dp_event`)."""

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DPSGDPNBM:
        cfg = self.config
        R = self._prepare(R)
        self._structure(R)
        n_u = np.diff(R.indptr)
        users = np.flatnonzero(n_u >= cfg.min_ratings).astype(np.int64)
        if users.size == 0:
            raise DprecError(f"no user has min_ratings = {cfg.min_ratings} training ratings "
                             f"(largest: {int(n_u.max())})")
        W = self._init_weights(R, rng)
        self._W0, self._W = W.copy(), W
        h = self._hist
        assert h is not None and self._nbr is not None
        self.train_users_ = users
        self.train_ratings_ = n_u[users]
        self.touched_ = touched_pairs(h.indptr, h.indices, self._nbr, users)
        positions = np.flatnonzero(n_u[h.rows] >= cfg.min_ratings).astype(np.int64)
        _sgd(self, h, positions, W, rng, on_iteration, grad_scale=float(cfg.init_scale),
             noise=self.mechanism, phi=self.mechanism.phi)
        return self


def pair_inclusion_probability(counts: np.ndarray, nbr: np.ndarray, n: int,
                               batch: int) -> np.ndarray:
    """H_ij = P(items i and j both occur in a batch of ``batch`` draws with replacement from
    ``n`` ratings), item i holding counts[i] of them (Eq. 12's quantity, computed exactly):

        H_ij = 1 - (1 - p_i)^L - (1 - p_j)^L + (1 - p_i - p_j)^L,   p = counts / n,

    evaluated as -expm1(L l_i) + (1 - p_j)^L expm1(L (log1p(-p_i - p_j) - l_j)) with
    l = log1p(-p), so tiny probabilities keep their digits.
    """
    p = np.asarray(counts, dtype=np.float64) / float(n)
    pj = p[nbr]
    li = np.log1p(-np.minimum(p, 1.0))[:, None]
    lj = np.log1p(-np.minimum(pj, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        lij = np.log1p(-np.minimum(p[:, None] + pj, 1.0))
        h = -np.expm1(batch * li) + np.exp(batch * lj) * np.expm1(batch * (lij - lj))
    return np.where(np.isfinite(h), np.clip(h, 0.0, 1.0), 0.0)


class DPPSPNBM(_NeighbourhoodModel, config=DPPSPNBMConfig):
    """DPPS-PNBM, Algorithm 2: one SGLD sample of the posterior scaled by eps / (4B).

    Users are capped at tau ratings (:func:`cap_user_ratings`); the likelihood uses r_hat
    clipped to [r_min, r_max], so one user's sum of squared errors is <= B =
    (r_max - r_min)^2 tau. Per step t: a batch of L = gamma |R| ratings drawn with
    replacement, eta_t = eta_1 t^-xi and (Eq. 13, Algorithm 2 line 5)

        S <- S - eps/(4B) eta_t/2 (|R|/L sum_batch g + lambda S o mask o H^-1) + N(0, rho eta_t)

    with mask_ij = 1 when items i and j both occur in the batch and H = E[mask]
    (:func:`pair_inclusion_probability`; pairs with an unrated item get the prior every
    step). ``prior="exact"`` uses lambda S at every step instead. The last S is released.
    Predictions use each user's full training history; S saw the capped one.
    """

    config: DPPSPNBMConfig

    def __init__(self, config: DPPSPNBMConfig | None = None) -> None:
        super().__init__(config)
        self.removed_: int | None = None
        """Ratings removed by the cap."""
        self.max_user_ratings_: int | None = None
        """Largest number of ratings of one user that S was trained on (<= tau)."""
        self.events: EventLog | None = None
        """After ``fit``: one pure ``true_epsilon``-DP release per user (the sample of S)."""

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DPPSPNBM:
        cfg = self.config
        R = self._prepare(R)
        capped = cap_user_ratings(R, int(cfg.tau), rng)
        self.removed_ = int(R.nnz - capped.nnz)
        self.max_user_ratings_ = int(np.diff(capped.indptr).max())
        self._structure(capped)
        assert self._means is not None and self._nbr is not None
        data = Data.of(capped, self._means)
        W = self._init_weights(capped, rng)
        self._W0, self._W = W.copy(), W
        n = capped.nnz
        L = _batch_size(n, float(cfg.batch_fraction))
        counts = np.bincount(capped.indices, minlength=capped.shape[1])
        H = pair_inclusion_probability(counts, self._nbr, n, L)
        always = (counts == 0)[:, None] | (counts[self._nbr] == 0)
        inv_h = np.where(always, 1.0, 1.0 / np.where(H > 0, H, 1.0))
        scale = float(cfg.epsilon) / (4.0 * cfg.loglik_bound)
        clip = (float(cfg.rating_min), float(cfg.rating_max))
        for t in range(1, int(cfg.iterations) + 1):
            eta = float(cfg.lr) * t ** (-float(cfg.decay))
            batch = rng.integers(0, n, L)
            G, sq = batch_gradient(data, batch, self._nbr, W, self._means,
                                   float(cfg.min_norm), clip=clip)
            if cfg.prior == "exact":
                prior = W
            else:
                present = np.zeros(capped.shape[1], bool)
                present[data.indices[batch]] = True
                mask = always | (present[:, None] & present[self._nbr])
                prior = W * mask * inv_h
            W -= scale * (eta / 2.0) * ((n / L) * G + float(cfg.reg) * prior)
            W += rng.normal(0.0, math.sqrt(float(cfg.temperature) * eta), W.shape)
            self.loss_history.append(sq / L)
            self._step_done(W, t - 1, on_iteration)
        self.events = EventLog(R.shape[0])
        self.events.record(0, LocalReportDpEvent(cfg.true_epsilon), np.arange(R.shape[0]),
                           unit="user")
        return self
