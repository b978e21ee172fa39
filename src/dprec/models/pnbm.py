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

import logging
import math
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError, NotFittedError, check_int, check_real
from dprec.iteration import IterationHook
from dprec.mechanisms.gradient_laplace import GradientLaplace, error_bound, gradient_sensitivity
from dprec.privacy.events import EventLog, LocalReportDpEvent
from dprec.privacy.posterior import posterior_sample_epsilon

logger = logging.getLogger(__name__)

__all__ = [
    "DPPSPNBM",
    "DPPSPNBMConfig",
    "DPSGDPNBM",
    "DPSGDPNBMConfig",
    "GradientLaplace",
    "PNBM",
    "PNBMConfig",
    "batch_gradient",
    "cap_user_ratings",
    "corated_neighbours",
    "error_bound",
    "gradient_sensitivity",
    "pair_inclusion_probability",
    "pearson_weights",
]

def _check_common(cfg: PNBMConfig | DPSGDPNBMConfig | DPPSPNBMConfig) -> None:
    check_int("neighbours", cfg.neighbours, 1)
    check_real("lr", cfg.lr, low=0.0, low_open=True)
    check_real("reg", cfg.reg, low=0.0)
    check_int("iterations", cfg.iterations, 1)
    check_real("batch_fraction", cfg.batch_fraction, low=0.0, low_open=True, high=1.0)
    check_real("init_scale", cfg.init_scale, low=0.0, low_open=True)
    check_real("min_norm", cfg.min_norm, low=0.0)
    check_real("rating_min", cfg.rating_min)
    check_real("rating_max", cfg.rating_max)
    if not cfg.rating_min < cfg.rating_max:
        raise DprecError(f"rating_min must be < rating_max, got {cfg.rating_min} and "
                         f"{cfg.rating_max}")


@dataclass(frozen=True)
class PNBMConfig:
    """Hyper-parameters of :class:`PNBM` (validated at construction)."""

    neighbours: int = 500
    """Nk: neighbours kept per item, the most co-rated items (paper: 500); >= 1, capped at
    n_items - 1."""
    lr: float = 0.002
    """eta, the SGD step of Eq. 4 (> 0); the gradient is a sum over the mini-batch."""
    reg: float = 0.005
    """lambda = alpha_S / alpha_R, the weight of |S|^2 (>= 0)."""
    iterations: int = 50
    """K, the number of mini-batch updates (>= 1)."""
    batch_fraction: float = 0.1
    """gamma = L / |R|: each update uses a uniform sample of this fraction of the ratings,
    without replacement (in (0, 1])."""
    init_scale: float = 1.0
    """beta: S starts at beta x (Pearson correlation) or beta x U(-0.1, 0.1) (> 0)."""
    init: Literal["pearson", "random"] = "pearson"
    """Initial similarity: Pearson correlation of the two items over their co-raters
    (centred by item means), or uniform noise as in the authors' (DP) code. The paper does
    not say for the non-private model; on ML-100K Pearson starts where random ends."""
    min_norm: float = 0.0
    """C: the denominator sum |s_ij| I_uj is floored at C (>= 0; 0 is Eq. 2 as printed)."""
    rating_min: float = 1.0
    """Lowest possible rating (public; every training rating must be >= it)."""
    rating_max: float = 5.0
    """Highest possible rating (public; > rating_min)."""

    def __post_init__(self) -> None:
        _check_common(self)
        if self.init not in ("pearson", "random"):
            raise DprecError(f"init must be 'pearson' or 'random', got {self.init!r}")


@dataclass(frozen=True)
class DPSGDPNBMConfig:
    """Hyper-parameters of :class:`DPSGDPNBM`, Algorithm 1 (validated at construction).

    Defaults inside the paper's Section 5.1 grid where it gives one (eta, lambda, beta, C,
    Nk); K and gamma are not given there (the authors' code runs full batches).
    """

    epsilon: float = 1.0
    """Claimed per-rating epsilon of the whole run (the paper's Theorem 1); > 0."""
    neighbours: int = 500
    """Nk: neighbours kept per item, the most co-rated items (paper: 500)."""
    lr: float = 0.4
    """eta in S <- S - eta (beta G + lambda S) (paper grid {0.1, 0.4}); > 0."""
    reg: float = 0.005
    """lambda (paper grid {0.05, 0.005}); >= 0."""
    iterations: int = 5
    """K, the number of noisy updates (paper: K in [1, 20], fewer for smaller eps); >= 1."""
    batch_fraction: float = 1.0
    """gamma = L / |R|, uniform mini-batches without replacement (in (0, 1])."""
    init_scale: float = 10.0
    """beta: S starts at beta x U(-0.1, 0.1) and the gradient is up-scaled by beta
    (paper grid {10, 20}); > 0."""
    min_norm: float = 10.0
    """C, the floor of |S_i| I_u that bounds the gradient (paper grid {10, 15}); > 0."""
    min_ratings: int = 21
    """Only users with at least this many training ratings train S (paper: more than 20)."""
    rating_min: float = 1.0
    """r_min (public)."""
    rating_max: float = 5.0
    """r_max (public); phi = r_max - r_min."""

    def __post_init__(self) -> None:
        check_real("epsilon", self.epsilon, low=0.0, low_open=True)
        _check_common(self)
        check_real("min_norm", self.min_norm, low=0.0, low_open=True)
        check_int("min_ratings", self.min_ratings, 1)


@dataclass(frozen=True)
class DPPSPNBMConfig:
    """Hyper-parameters of :class:`DPPSPNBM`, Algorithm 2 (validated at construction)."""

    epsilon: float = 1.0
    """Claimed user-level epsilon of the released sample (Theorem 2); > 0."""
    neighbours: int = 500
    """Nk: neighbours kept per item, the most co-rated items (paper: 500)."""
    lr: float = 1000.0
    """eta_1, the first SGLD step; eta_t = eta_1 t^-decay (> 0). The paper's grid
    {8e-8, 4e-7, 8e-6} fits the authors' code, whose drift is |R| times larger than
    Algorithm 2's; with Algorithm 2's eps/(4B) scaling such steps leave S at its start."""
    decay: float = 0.3
    """xi in eta_t = eta_1 t^-xi (paper: 0.3); in [0, 1]."""
    temperature: float = 0.006
    """rho: the injected noise is N(0, rho eta_t) (paper grid {0.001, 0.006, 0.09}); > 0.
    The chain then targets the scaled posterior to the power 1/rho."""
    reg: float = 0.02
    """lambda, the prior precision ratio (paper grid {0.02, 0.002}); >= 0."""
    iterations: int = 50
    """K, SGLD steps before the one released sample (the authors' code: 300); >= 1."""
    batch_fraction: float = 0.1
    """gamma = L / |R|: mini-batches of L ratings drawn with replacement (in (0, 1])."""
    init_scale: float = 1.0
    """S starts at init_scale x U(-0.1, 0.1) (the authors' code); > 0."""
    min_norm: float = 0.0
    """C, the floor of |S_i| I_u (>= 0)."""
    tau: int = 200
    """Ratings kept per user (a seeded uniform subset of larger profiles; paper: 200)."""
    prior: Literal["debiased", "exact"] = "debiased"
    """Prior term of the stochastic gradient: "debiased" applies lambda s_ij / H_ij only when
    items i and j both occur in the mini-batch (Eq. 10-13); "exact" applies lambda s_ij at
    every step."""
    rating_min: float = 1.0
    """r_min (public)."""
    rating_max: float = 5.0
    """r_max (public); B = (r_max - r_min)^2 tau."""

    def __post_init__(self) -> None:
        check_real("epsilon", self.epsilon, low=0.0, low_open=True)
        _check_common(self)
        check_real("decay", self.decay, low=0.0, high=1.0)
        check_real("temperature", self.temperature, low=0.0, low_open=True)
        check_int("tau", self.tau, 1)
        if self.prior not in ("debiased", "exact"):
            raise DprecError(f"prior must be 'debiased' or 'exact', got {self.prior!r}")

    @property
    def loglik_bound(self) -> float:
        """B = (r_max - r_min)^2 tau, the bound on one user's squared errors."""
        return (self.rating_max - self.rating_min) ** 2 * self.tau

    @property
    def target_scale(self) -> float:
        """beta = eps / (8 B rho): the sampler targets exp(-beta sum e^2 - ...).

        Algorithm 2's drift is eps/(4B) eta/2 times the gradient of (1/2) sum e^2 (g_ui =
        e_ui dr_hat/dS, seed Eq. 9) and its noise is N(0, rho eta), so the target is
        exp(-(eps / (4 B rho)) (1/2) sum e^2)."""
        return float(self.epsilon) / (8.0 * self.loglik_bound * float(self.temperature))

    @property
    def true_epsilon(self) -> float:
        """eps of one exact sample, replace-one user: 2 beta B = eps / (4 rho)
        (:func:`~dprec.privacy.posterior.posterior_sample_epsilon`)."""
        return posterior_sample_epsilon(self.target_scale, self.loglik_bound)


# -- data preparation --------------------------------------------------------------------------


def _as_ratings(R: sp.spmatrix | sp.sparray, low: float, high: float) -> sp.csr_matrix:
    """Canonical float64 CSR with sorted indices, every rating finite and in [low, high]."""
    if not sp.issparse(R):
        raise DprecError(f"R must be a scipy.sparse matrix, got {type(R).__name__}")
    R = sp.csr_matrix(R, dtype=np.float64, copy=True)
    R.sum_duplicates()
    R.sort_indices()
    if R.nnz == 0:
        raise DprecError("R must hold at least one rating, got 0")
    if R.shape[1] < 2:
        raise DprecError(f"R must have at least 2 items (a neighbourhood), got {R.shape[1]}")
    bad = ~np.isfinite(R.data) | (R.data < low) | (R.data > high)
    if bad.any():
        raise DprecError(f"ratings must be finite and in [rating_min, rating_max] = "
                         f"[{low:g}, {high:g}], got {R.data[bad][0]!r} "
                         f"({int(bad.sum())} outside)")
    return R


def item_means(R: sp.csr_matrix) -> np.ndarray:
    """r_bar_i, the mean rating of each item; the global mean for items with no rating."""
    n = np.bincount(R.indices, minlength=R.shape[1])
    s = np.bincount(R.indices, weights=R.data, minlength=R.shape[1])
    return np.where(n > 0, s / np.maximum(n, 1), float(R.data.mean()))


def corated_neighbours(R: sp.csr_matrix, k: int, chunk: int = 1024) -> np.ndarray:
    """(n_items, k) int32: per item, the k other items co-rated by the most users.

    Ties go to the lower item id; each row is sorted by id. Computed from the binary
    pattern by rows of I^T I, ``chunk`` items at a time (memory ``chunk`` x n_items).
    """
    n_items = R.shape[1]
    check_int("k", k, 1)
    if k > n_items - 1:
        raise DprecError(f"k must be <= n_items - 1 = {n_items - 1}, got {k}")
    B = sp.csr_matrix((np.ones(R.nnz, np.float64), R.indices, R.indptr), shape=R.shape)
    BT = B.T.tocsr()
    out = np.empty((n_items, k), np.int32)
    ids = np.arange(n_items, dtype=np.int64)
    for a in range(0, n_items, chunk):
        b = min(a + chunk, n_items)
        counts = np.asarray((BT[a:b] @ B).todense(), dtype=np.int64)
        key = counts * n_items + (n_items - 1 - ids)[None, :]
        key[np.arange(b - a), np.arange(a, b)] = -1  # never oneself
        top = np.argpartition(-key, k - 1, axis=1)[:, :k]
        out[a:b] = np.sort(top, axis=1)
    return out


def cap_user_ratings(R: sp.csr_matrix, tau: int, rng: np.random.Generator) -> sp.csr_matrix:
    """Keep a uniformly random subset of ``tau`` ratings of every user with more (Sec. 4.3).

    Users with at most ``tau`` ratings are untouched; the result is canonical CSR.
    """
    check_int("tau", tau, 1)
    R = sp.csr_matrix(R)
    users = np.repeat(np.arange(R.shape[0], dtype=np.int64), np.diff(R.indptr))
    order = np.lexsort((rng.random(R.nnz), users))
    rank = np.empty(R.nnz, np.int64)
    rank[order] = np.arange(R.nnz) - R.indptr[users[order]]
    keep = rank < tau
    indptr = np.zeros(R.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(users[keep], minlength=R.shape[0]), out=indptr[1:])
    return sp.csr_matrix((R.data[keep], R.indices[keep], indptr), shape=R.shape)


def pearson_weights(R: sp.csr_matrix, nbr: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Pearson correlation of items i and nbr[i, k] over their co-raters, ratings centred by
    the item means (0 where fewer than 2 co-raters or a zero variance)."""
    C = R.tocsc()
    C.sort_indices()
    x = C.data - means[np.repeat(np.arange(C.shape[1]), np.diff(C.indptr))]
    return _pearson(C.indptr.astype(np.int64), C.indices.astype(np.int64), x, nbr)


@numba.njit(cache=True, parallel=True)
def _pearson(indptr, indices, x, nbr):
    n_items, k = nbr.shape
    out = np.zeros((n_items, k))
    for i in numba.prange(n_items):
        for c in range(k):
            j = nbr[i, c]
            a, ae = indptr[i], indptr[i + 1]
            b, be = indptr[j], indptr[j + 1]
            sxy = sxx = syy = 0.0
            n = 0
            while a < ae and b < be:
                if indices[a] == indices[b]:
                    sxy += x[a] * x[b]
                    sxx += x[a] * x[a]
                    syy += x[b] * x[b]
                    n += 1
                    a += 1
                    b += 1
                elif indices[a] < indices[b]:
                    a += 1
                else:
                    b += 1
            if n >= 2 and sxx > 0.0 and syy > 0.0:
                out[i, c] = sxy / np.sqrt(sxx * syy)
    return out


# -- kernels -----------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _merge(indptr, indices, x, u, nbr_row, w_row):
    """(sum_j s_ij x_uj, sum_j |s_ij|) over j in nbr_row rated by u (two sorted lists)."""
    a, ae = indptr[u], indptr[u + 1]
    c, k = 0, nbr_row.shape[0]
    num = den = 0.0
    while a < ae and c < k:
        ja, jb = indices[a], nbr_row[c]
        if ja == jb:
            num += w_row[c] * x[a]
            den += abs(w_row[c])
            a += 1
            c += 1
        elif ja < jb:
            a += 1
        else:
            c += 1
    return num, den


@numba.njit(cache=True, parallel=True)
def _predict(indptr, indices, x, nbr, W, means, users, items, min_norm, fallback):
    out = np.empty(users.shape[0])
    n_users, n_items = indptr.shape[0] - 1, nbr.shape[0]
    for q in numba.prange(users.shape[0]):
        u, i = users[q], items[q]
        if i < 0 or i >= n_items:
            out[q] = fallback
            continue
        out[q] = means[i]
        if u < 0 or u >= n_users:
            continue
        num, den = _merge(indptr, indices, x, u, nbr[i], W[i])
        d = max(den, min_norm)
        if d > 0.0:
            out[q] += num / d
    return out


_CHUNKS = 4  # fixed number of per-chunk gradient buffers: sums do not depend on the threads


@numba.njit(cache=True, parallel=True)
def _batch_gradient(indptr, indices, x, r, rows, ratings, bounds, nbr, W, means, min_norm,
                    e_max, f_max, clip_low, clip_high, clip, Gs, sq):
    """Gs[c, i] += e (x_uj - p sgn s_ij) / d over the batch ratings in chunk c (Eq. 5).

    ``ratings`` are CSR positions sorted by user, cut into chunks at ``bounds``; each chunk
    scatters its current user's centred ratings into a dense buffer, so a rating costs
    O(k) gathers. e = r_hat - r clamped to [-e_max, e_max]; each factor
    (x_uj - p sgn s_ij) clamped to [-f_max, f_max]; d = max(|S_i| I_u, C) and, below the
    floor, r_hat = r_bar_i + num / C has derivative x_uj / C. ``clip``: r_hat is clipped to
    [clip_low, clip_high] and a clipped rating contributes no gradient (DPPS's bounded
    likelihood). sq[c] = sum of squared (unclamped, clipped if ``clip``) errors.
    """
    n_items, k = nbr.shape
    for ch in numba.prange(bounds.shape[0] - 1):
        buf = np.zeros(n_items)
        rated = np.zeros(n_items)
        G = Gs[ch]
        acc = 0.0
        q, end = bounds[ch], bounds[ch + 1]
        while q < end:
            u = rows[ratings[q]]
            for a in range(indptr[u], indptr[u + 1]):
                buf[indices[a]] = x[a]
                rated[indices[a]] = 1.0
            while q < end and rows[ratings[q]] == u:
                pos = ratings[q]
                q += 1
                i = indices[pos]
                nr, wr = nbr[i], W[i]
                num = den = 0.0
                for c in range(k):
                    j = nr[c]
                    num += wr[c] * buf[j]
                    den += abs(wr[c]) * rated[j]
                floor = den < min_norm
                d = min_norm if floor else den
                if d <= 0.0:
                    acc += (means[i] - r[pos]) ** 2
                    continue
                p = num / d
                pred = means[i] + p
                if clip and (pred < clip_low or pred > clip_high):
                    acc += (min(max(pred, clip_low), clip_high) - r[pos]) ** 2
                    continue
                e = pred - r[pos]
                acc += e * e
                e = min(max(e, -e_max), e_max) / d
                ps = 0.0 if floor else p
                for c in range(k):
                    j = nr[c]
                    s = wr[c]
                    f = buf[j] - ps * rated[j] * ((s > 0.0) - (s < 0.0))
                    G[i, c] += e * min(max(f, -f_max), f_max)
            for a in range(indptr[u], indptr[u + 1]):
                buf[indices[a]] = 0.0
                rated[indices[a]] = 0.0
        sq[ch] = acc


@numba.njit(cache=True, parallel=True)
def _touched(indptr, indices, nbr, users):
    """Per user: sum over their items k of |nbr(k) & I_u|, the gradient entries their terms
    reach (the L1 multiplier of one rating's influence)."""
    out = np.zeros(users.shape[0], np.int64)
    for q in numba.prange(users.shape[0]):
        u = users[q]
        total = 0
        for pos in range(indptr[u], indptr[u + 1]):
            nr = nbr[indices[pos]]
            a, ae = indptr[u], indptr[u + 1]
            c, k = 0, nr.shape[0]
            while a < ae and c < k:
                if indices[a] == nr[c]:
                    total += 1
                    a += 1
                    c += 1
                elif indices[a] < nr[c]:
                    a += 1
                else:
                    c += 1
        out[q] = total
    return out


# -- the model ---------------------------------------------------------------------------------


@dataclass
class _Data:
    """Training ratings as the kernels read them (CSR by user, values centred by item)."""

    indptr: np.ndarray
    indices: np.ndarray
    r: np.ndarray
    x: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, R: sp.csr_matrix, means: np.ndarray) -> _Data:
        indices = R.indices.astype(np.int64)
        return cls(R.indptr.astype(np.int64), indices, R.data.astype(np.float64),
                   R.data - means[indices],
                   np.repeat(np.arange(R.shape[0], dtype=np.int64), np.diff(R.indptr)))


def batch_gradient(data: _Data, batch: np.ndarray, nbr: np.ndarray, W: np.ndarray,
                   means: np.ndarray, min_norm: float, e_max: float = math.inf,
                   f_max: float = math.inf, clip: tuple[float, float] | None = None
                   ) -> tuple[np.ndarray, float]:
    """(G, sum of squared errors) of the ratings at CSR positions ``batch`` (Eq. 4-5).

    G has the shape of W; repeated positions count repeatedly (sampling with replacement).
    """
    ratings = np.sort(np.asarray(batch, dtype=np.int64))
    bounds = np.linspace(0, len(ratings), _CHUNKS + 1).astype(np.int64)
    Gs = np.zeros((_CHUNKS, *W.shape))
    sq = np.zeros(_CHUNKS)
    lo, hi = clip if clip is not None else (0.0, 0.0)
    _batch_gradient(data.indptr, data.indices, data.x, data.r, data.rows, ratings, bounds, nbr,
                    W, means, float(min_norm), float(e_max), float(f_max), float(lo),
                    float(hi), clip is not None, Gs, sq)
    return Gs.sum(axis=0), float(sq.sum())


class _NeighbourhoodModel:
    """Shared state and prediction (Eq. 2) of the three trainers."""

    config: PNBMConfig | DPSGDPNBMConfig | DPPSPNBMConfig

    def __init__(self) -> None:
        self._W: np.ndarray | None = None
        self._W0: np.ndarray | None = None
        self._nbr: np.ndarray | None = None
        self._means: np.ndarray | None = None
        self._hist: _Data | None = None
        self._mu = 0.0
        self.loss_history: list[float] = []
        """Sum of squared training errors of each mini-batch, divided by its size."""

    def _prepare(self, R: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
        cfg = self.config
        R = _as_ratings(R, cfg.rating_min, cfg.rating_max)
        self._means = item_means(R)
        self._mu = float(R.data.mean())
        self._hist = _Data.of(R, self._means)
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

    @property
    def neighbours(self) -> np.ndarray:
        """(n_items, k) int32 neighbour ids of each item, sorted."""
        return self._fitted(self._nbr)

    @property
    def weights(self) -> np.ndarray:
        """(n_items, k) similarities s_ij, aligned with :attr:`neighbours`."""
        return self._fitted(self._W)

    @property
    def initial_weights(self) -> np.ndarray:
        """S(1) as drawn (times beta), before the first update."""
        return self._fitted(self._W0)

    @property
    def item_means(self) -> np.ndarray:
        """r_bar_i of the training ratings (the global mean for unrated items)."""
        return self._fitted(self._means)

    @property
    def is_fitted(self) -> bool:
        return self._W is not None

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
        users, items = _pairs(users, items)
        h = self._hist
        assert h is not None and self._means is not None and self._nbr is not None
        return _predict(h.indptr, h.indices, h.x, self._nbr, W, self._means, users, items,
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

    @staticmethod
    def _fitted(x: np.ndarray | None) -> np.ndarray:
        if x is None:
            raise NotFittedError("the model is not fitted; call fit() first")
        return x


def _pairs(users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    users, items = np.asarray(users), np.asarray(items)
    if users.ndim != 1 or items.shape != users.shape:
        raise DprecError(f"users and items must be 1-d arrays of equal length, "
                         f"got shapes {users.shape} and {items.shape}")
    for label, a in (("users", users), ("items", items)):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise DprecError(f"{label} must hold integer indices, got dtype {a.dtype}")
    return users.astype(np.int64), items.astype(np.int64)


def _batch_size(n: int, fraction: float) -> int:
    return max(1, min(n, int(round(fraction * n))))


def _sgd(model: _NeighbourhoodModel, data: _Data, positions: np.ndarray, W: np.ndarray,
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


class PNBM(_NeighbourhoodModel):
    """Non-private PNBM: S learned by mini-batch SGD on Eq. 3 (Eq. 4)."""

    def __init__(self, config: PNBMConfig | None = None) -> None:
        super().__init__()
        self.config: PNBMConfig = config if config is not None else PNBMConfig()

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


class DPSGDPNBM(_NeighbourhoodModel):
    """DPSGD-PNBM, Algorithm 1: SGD with clamped errors and Laplace noise on the gradient.

    Only users with >= ``min_ratings`` training ratings train S (all users' ratings still
    form the item means and the histories used to predict). S(1) = beta U(-0.1, 0.1)
    (data-independent); per iteration the gradient's error is clamped to e_max(t), each
    factor (x_uj - p sgn s_ij) to phi, the denominator floored at C, and
    :class:`GradientLaplace` noise is added before S <- S - eta (beta G + lambda S).
    """

    def __init__(self, config: DPSGDPNBMConfig | None = None) -> None:
        super().__init__()
        self.config: DPSGDPNBMConfig = config if config is not None else DPSGDPNBMConfig()
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
        self.touched_ = _touched(h.indptr, h.indices, self._nbr, users)
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


class DPPSPNBM(_NeighbourhoodModel):
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

    def __init__(self, config: DPPSPNBMConfig | None = None) -> None:
        super().__init__()
        self.config: DPPSPNBMConfig = config if config is not None else DPPSPNBMConfig()
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
        data = _Data.of(capped, self._means)
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
