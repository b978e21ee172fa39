"""Differentially private matrix factorisation of explicit ratings: the two DP-MF baselines of
seed 004 (docs/architecture.md §4), both central: the curator sees the raw ratings and DP
protects what the released model reveals.

Both models predict r_hat_ui = m + g + b_u + b_i + U_u . V_i (``biases=False``: m + U_u . V_i)
from ratings clipped to the public range [r_min, r_max]. The offset m is public (default: the
midpoint of the range); the global bias g is learned with the other parameters from the same
noisy quantities, so no separate privacy is spent on a global mean.

**DPSGD-MF** (Berlioz, Friedman, Kaafar, Boreli, Berkovsky, "Applying differential privacy to
matrix factorization", RecSys 2015: the perturbed-SGD variant, Friedman, Berkovsky, Kaafar,
UMUAI 2016, private SGD). K epochs of SGD over the ratings in a fresh random order; each visit
of rating (u, i) perturbs and clamps the error, then makes the usual step:

    e'_ui = clamp(r_ui - r_hat_ui + Lap(b), -e_max, e_max),     b = K Dr / eps,  Dr = r_max - r_min
    b_u += lr (e' - reg b_u),  b_i += lr (e' - reg b_i),  g += lr (M / n) e',
    U_u += lr (e' V_i - reg U_u),  V_i += lr (e' U_u - reg V_i)   (both from the old values).

g (our addition; Berlioz et al. spend part of eps on a DP global mean instead) is visited by
all n ratings, so its step is scaled by M / n (M users) to move like an average user bias;
otherwise its random walk on the clamped noise dominates the predictions at small eps.

Privacy (rating level: neighbouring data sets differ in the value of one rating; which pairs
are rated is public, as in Berlioz et al.). In an epoch the model reads r_ui once, through
e_ui, whose change between neighbours is at most Dr given the current state; adding Lap(b) makes
that read (Dr / b = eps / K)-DP (Laplace mechanism), and the clamp and the update are
post-processing. Over K epochs basic (adaptive) composition gives K (eps / K) = eps per rating
(Dwork & Roth 2014, Thm 3.16). A user with n_u ratings undergoes n_u K such reads; the event
log records them and the accountant composes them.

**DPPS-MF** (Liu, Wang, Smola, "Fast differentially private matrix factorization", RecSys
2015; as seed 004 uses it, Algorithm 2 and Eq. 8 applied to MF). Each user is capped at tau
ratings (seeded random removal), so the energy

    E(theta) = sum_(u,i) (r_ui - clip(r_hat_ui))^2 + reg |theta|^2

has per-user data terms in [0, B], B = Dr^2 tau (seed §4.3). The target is the scaled posterior
pi(theta) ~ exp(-(c / rho) E(theta)) with c = eps / (4 B) (``calibration="paper"``) and
temperature rho; it is sampled by SGLD (Welling & Teh 2011; seed Eq. 8) on uniform mini-batches
drawn with replacement, with step h_t = lr t^-xi:

    theta <- theta - h_t (n / L sum_(u,i in batch) (clip(r_hat_ui) - r_ui) d r_hat_ui + reg theta)
             + N(0, rho h_t / c),

which is Eq. 8 with step eta_t = rho h_t / c on exp(-(c / rho) E), i.e. the seed's Algorithm 2
(noise N(0, rho eta_t)) with the factor 2 of the squared error kept. g, whose gradient sums all
n ratings, takes the step h_t M / n (step and noise variance: a constant preconditioner, which
leaves the target unchanged); with h_t it would overshoot and leave [r_min, r_max] for good.
The gradient of clip(r_hat) is 0 outside [r_min, r_max]. The prior term is exact (every
parameter is updated and noised at every step), so the H^-1 de-biasing of seed Eq. 12 is not
needed. One sample, the last iterate, is released.

Privacy (user level: neighbours replace one user's ratings, <= tau of them). The convention
shared with DPPS-PNBM (:mod:`dprec.privacy.posterior`): a target exp(-beta sum_u l_u) with
0 <= l_u <= B is 2 beta B-DP per user. Here beta = c / rho on the squared errors, so the
sample is (2 c B / rho)-DP: eps / (2 rho) under the paper's calibration (the paper claims eps;
its sup |log p| <= B bound counts the one-sided squared error twice, and a temperature
rho < 1 sharpens the target by 1 / rho). DPPS-PNBM follows Algorithm 2 literally (its
gradient is that of (1/2) sum e^2), so the same rule gives eps / (4 rho) there.
``calibration="exact"`` sets c = rho eps / (2 B) so that the sample is eps-DP. Either holds
only for an exact sample: a sample delta-far from pi in total variation gives
(eps, (1 + e^eps) delta) (seed Thm 2), and the sampler's delta is unknown (the paper assumes
delta -> 0).

Noise comes from the caller's Generator: seeded noise is for simulation; a deployment needs a
cryptographically seeded generator and a floating-point-safe Laplace sampler (Mironov 2012).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook, iterations
from dprec.models.als import _check_int
from dprec.models.configured import Configured
from dprec.models.dp_mf_config import DPPSMFConfig, DPSGDMFConfig
from dprec.models.fitted import fitted_array, fitted_flag, require_fitted
from dprec.models.funk_svd import _check_real
from dprec.models.pairs import check_pairs
from dprec.models.sgd_kernels import biased_prediction, sgd_step
from dprec.privacy.events import EventLog, LocalReportDpEvent

logger = logging.getLogger(__name__)

__all__ = ["DPPSMF", "DPSGDMF", "ErrorPerturbation", "cap_user_ratings"]


@dataclass(frozen=True)
class ErrorPerturbation:
    """DPSGD-MF's per-visit mechanism (Berlioz et al. 2015): e' = clamp(e + Lap(b), +-e_max).

    b = epochs Dr / eps: each of the ``epochs`` reads of a rating is (eps / epochs)-DP for a
    change of the rating's value within a range of width Dr = ``sensitivity`` (Laplace
    mechanism); the clamp is post-processing. Central model, two-sided in the value.
    """

    epsilon: float
    """Per-rating eps over all epochs (> 0)."""
    epochs: int
    """Number of reads of each rating (>= 1)."""
    sensitivity: float
    """Dr, the largest change of the error between neighbours (> 0)."""
    error_bound: float
    """e_max (> 0)."""

    def __post_init__(self) -> None:
        _check_real("epsilon", self.epsilon, strictly_positive=True)
        _check_int("epochs", self.epochs, 1)
        _check_real("sensitivity", self.sensitivity, strictly_positive=True)
        _check_real("error_bound", self.error_bound, strictly_positive=True)

    @property
    def epsilon_per_read(self) -> float:
        """eps / epochs, the cost of one read."""
        return self.epsilon / self.epochs

    @property
    def scale(self) -> float:
        """b = epochs Dr / eps, the Laplace scale."""
        return self.epochs * self.sensitivity / self.epsilon

    def __call__(self, errors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """clamp(errors + Lap(b), -e_max, e_max), elementwise (the kernel does the same)."""
        e = np.asarray(errors, dtype=np.float64)
        noisy = e + rng.laplace(0.0, self.scale, e.shape)
        return np.clip(noisy, -self.error_bound, self.error_bound)

    def dp_event(self) -> dp_accounting.LaplaceDpEvent:
        """One read: ``LaplaceDpEvent(b / Dr)`` (dp-accounting's event has sensitivity 1)."""
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.scale / self.sensitivity)

    def describe(self) -> dict[str, object]:
        """A small record for the privacy report."""
        return {"name": "laplace-error-perturbation", "epsilon_per_rating": self.epsilon,
                "epochs": self.epochs, "epsilon_per_read": self.epsilon_per_read,
                "sensitivity": self.sensitivity, "scale": self.scale,
                "error_bound": self.error_bound}


def cap_user_ratings(R: sp.csr_matrix, tau: int, rng: np.random.Generator
                     ) -> tuple[sp.csr_matrix, int]:
    """Keep a uniformly random ``tau`` of each user's ratings (all of them if fewer).

    Vectorised: one uniform key per rating, ratings ranked by key within their row, ranks
    below ``tau`` kept. Returns the capped CSR (same shape) and the number removed.
    """
    _check_int("tau", tau, 1)
    R = sp.csr_matrix(R)
    counts = np.diff(R.indptr)
    if R.nnz == 0 or counts.max() <= tau:
        return R.copy(), 0
    rows = np.repeat(np.arange(R.shape[0]), counts)
    order = np.lexsort((rng.random(R.nnz), rows))
    rank = np.empty(R.nnz, np.int64)
    rank[order] = np.arange(R.nnz) - R.indptr[rows[order]]
    keep = rank < tau
    out = sp.csr_matrix((R.data[keep], R.indices[keep], np.r_[0, np.cumsum(
        np.minimum(counts, tau))]), shape=R.shape)
    return out, int(R.nnz - keep.sum())


class _RatingMF(Configured[Any]):
    """Shared state of the two models: parameters, offset, prediction."""

    config: DPSGDMFConfig | DPPSMFConfig

    def __init__(self, config: DPSGDMFConfig | DPPSMFConfig | None = None) -> None:
        super().__init__(config)
        self._U: np.ndarray | None = None
        self._V: np.ndarray | None = None
        self._bu: np.ndarray | None = None
        self._bi: np.ndarray | None = None
        self._g = np.zeros(1)
        self.events: EventLog | None = None
        """Who underwent which mechanism, filled by ``fit``."""
        self.diagnostics: dict[str, object] = {}
        """Counters measured by ``fit``."""

    @property
    def offset(self) -> float:
        """m, the public offset: ``config.offset`` or the midpoint of the rating range."""
        c = self.config
        return float(c.offset) if c.offset is not None else 0.5 * (c.rating_min + c.rating_max)

    def _prepare(self, R: sp.spmatrix | sp.sparray) -> tuple[sp.csr_matrix, int]:
        """R as CSR float64 with ratings clipped to the public range; (matrix, n clipped)."""
        if not sp.issparse(R):
            raise DprecError(f"R must be a scipy.sparse matrix, got {type(R).__name__}")
        R = sp.csr_matrix(R, dtype=np.float64, copy=True)
        R.sort_indices()
        if R.nnz == 0:
            raise DprecError("R must hold at least one rating, got 0")
        if not np.all(np.isfinite(R.data)):
            raise DprecError("R ratings contain NaN or infinite values")
        lo, hi = self.config.rating_min, self.config.rating_max
        clipped = int(np.count_nonzero((R.data < lo) | (R.data > hi)))
        np.clip(R.data, lo, hi, out=R.data)
        return R, clipped

    def _init(self, shape: tuple[int, int], rng: np.random.Generator) -> None:
        c = self.config
        n_users, n_items = shape
        self._U = c.init_std * rng.standard_normal((n_users, c.factors))
        self._V = c.init_std * rng.standard_normal((n_items, c.factors))
        self._bu = np.zeros(n_users)
        self._bi = np.zeros(n_items)
        self._g = np.zeros(1)

    def _check_finite(self, epoch: int) -> None:
        arrays = (self._U, self._V, self._bu, self._bi, self._g)
        if not all(np.isfinite(a).all() for a in arrays if a is not None):
            raise DprecError(f"{type(self).__name__} diverged in epoch {epoch + 1} "
                             f"(non-finite parameters); lower lr (got {self.config.lr})")

    is_fitted = fitted_flag("_U")

    user_factors = fitted_array("_U", "(M, d) user factors U (released).")
    item_factors = fitted_array("_V", "(N, d) item factors V (released).")

    @property
    def global_bias(self) -> float:
        """g, the learned global bias (0 when ``biases`` is False)."""
        require_fitted(self._U, type(self).__name__)
        return float(self._g[0])

    user_biases = fitted_array("_bu", "(M,) user biases (0 when ``biases`` is False).")
    item_biases = fitted_array("_bi", "(N,) item biases (0 when ``biases`` is False).")

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """clip(m + g + b_u + b_i + U_u . V_i) for the pairs (users[j], items[j]), float64.

        An index outside the training matrix (e.g. -1) contributes nothing: such a user
        (item) is predicted from m + g and the item's (user's) bias. No data-dependent fallback:
        a row without training ratings is predicted from its released parameters.
        """
        U = self.user_factors
        users, items = check_pairs(users, items)
        ku = (users >= 0) & (users < U.shape[0])
        ki = (items >= 0) & (items < self.item_factors.shape[0])
        out = np.full(len(users), self.offset + self.global_bias)
        out[ku] += self.user_biases[users[ku]]
        out[ki] += self.item_biases[items[ki]]
        both = ku & ki
        out[both] += np.einsum("jf,jf->j", U[users[both]], self.item_factors[items[both]])
        return np.clip(out, self.config.rating_min, self.config.rating_max)


def _observations(R: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(R.shape[0], dtype=np.int64), np.diff(R.indptr))
    return rows, R.indices.astype(np.int64), np.ascontiguousarray(R.data, dtype=np.float64)


class DPSGDMF(_RatingMF, config=DPSGDMFConfig):
    """DPSGD-MF: SGD with a clamped Laplace-perturbed error (Berlioz et al. 2015), eps-DP per
    rating (module docstring).

    ``fit`` draws U, then V, from N(0, init_std^2) with ``rng``; every epoch draws a
    permutation and one Laplace draw per rating inside the compiled loop, so the same
    generator state gives bit-identical parameters. ``events`` records, per epoch, one
    Laplace read of each rating.
    """

    config: DPSGDMFConfig

    @property
    def mechanism(self) -> ErrorPerturbation:
        """The per-visit mechanism, with b = epochs Dr / eps."""
        c = self.config
        return ErrorPerturbation(c.epsilon, c.epochs, c.rating_max - c.rating_min,
                                 c.error_bound)

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DPSGDMF:
        """Fit on the (users x items) sparse ratings; ``on_iteration(e, self)`` after epoch e
        (0-based)."""
        c = self.config
        R, clipped = self._prepare(R)
        rows, cols, vals = _observations(R)
        self._init(R.shape, rng)
        mech = self.mechanism
        event = mech.dp_event()
        counts = np.diff(R.indptr)
        groups = [(int(n), np.flatnonzero(counts == n)) for n in np.unique(counts[counts > 0])]
        self.events = EventLog(R.shape[0])
        clamped = 0
        lr = float(c.lr)
        for epoch in iterations(c.epochs, on_iteration, self):
            clamped += _dpsgd_epoch(rows, cols, vals, self._U, self._V, self._bu, self._bi,
                                    self._g, self.offset, lr, lr * R.shape[0] / len(vals),
                                    float(c.reg), bool(c.biases), mech.scale,
                                    float(c.error_bound), rng)
            for n, users in groups:
                self.events.record(epoch, event, users, count=n, unit="interaction")
            self._check_finite(epoch)
            logger.debug("DPSGD-MF epoch %d done", epoch + 1)
        self.diagnostics = {"ratings_clipped_to_range": clipped,
                            "noisy_errors_clamped_fraction": clamped / (len(vals) * c.epochs),
                            "laplace_scale": mech.scale}
        return self


class DPPSMF(_RatingMF, config=DPPSMFConfig):
    """DPPS-MF: one SGLD sample of the scaled MF posterior (Liu, Wang, Smola 2015; seed 004
    Algorithm 2), user-level DP for an exact sample (module docstring).

    ``fit`` caps every user at tau ratings (random removal from ``rng``), draws U, then V,
    from N(0, init_std^2), then runs ``epochs`` x ceil(n / L) SGLD steps in the compiled loop,
    every draw from ``rng``. ``events`` records one pure eps-DP release per user.
    """

    config: DPPSMFConfig

    def fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> DPPSMF:
        """Fit on the (users x items) sparse ratings; ``on_iteration(e, self)`` after epoch e
        (0-based)."""
        c = self.config
        R, clipped = self._prepare(R)
        capped = int(np.count_nonzero(np.diff(R.indptr) > c.max_ratings))
        R, removed = cap_user_ratings(R, c.max_ratings, rng)
        rows, cols, vals = _observations(R)
        self._init(R.shape, rng)
        steps = -(-len(vals) // c.batch_size)
        noise_var = c.temperature / c.scale
        GU, GV = np.zeros_like(self._U), np.zeros_like(self._V)
        gbu, gbi = np.zeros_like(self._bu), np.zeros_like(self._bi)
        outside = 0
        for epoch in iterations(c.epochs, on_iteration, self):
            outside += _sgld_epoch(rows, cols, vals, self._U, self._V, self._bu, self._bi,
                                   self._g, R.shape[0] / len(vals), self.offset,
                                   float(c.rating_min), float(c.rating_max), float(c.reg),
                                   bool(c.biases), float(c.lr), float(c.decay), noise_var,
                                   int(c.batch_size), steps, epoch * steps, rng,
                                   GU, GV, gbu, gbi)
            self._check_finite(epoch)
            logger.debug("DPPS-MF epoch %d done", epoch + 1)
        self.events = EventLog(R.shape[0])
        self.events.record(0, LocalReportDpEvent(c.true_epsilon), np.arange(R.shape[0]),
                           unit="user")
        self.diagnostics = {
            "ratings_clipped_to_range": clipped,
            "ratings_removed_by_cap": removed,
            "users_capped": capped,
            "sgld_steps": steps * c.epochs,
            "batch_predictions_outside_range_fraction":
                outside / (steps * c.epochs * c.batch_size),
            "posterior_scale_c": c.scale,
            "true_epsilon": c.true_epsilon,
        }
        return self


@numba.njit(cache=True, error_model="numpy")
def _dpsgd_epoch(rows, cols, vals, U, V, bu, bi, g, offset, lr, lr_g, reg, biases, scale, bound,
                 rng):  # pragma: no cover - compiled
    """One DPSGD-MF pass in the order ``rng.permutation(n)``; returns how many errors clamped."""
    order = rng.permutation(vals.shape[0])
    clamped = 0
    for t in range(order.shape[0]):
        k = order[t]
        u = rows[k]
        i = cols[k]
        e = vals[k] - biased_prediction(U, V, bu, bi, g, offset, u, i, biases) \
            + rng.laplace(0.0, scale)
        if e > bound:
            e = bound
            clamped += 1
        elif e < -bound:
            e = -bound
            clamped += 1
        if biases:
            g[0] += lr_g * e
        sgd_step(U, V, bu, bi, u, i, e, lr, reg, biases)
    return clamped


@numba.njit(cache=True, error_model="numpy")
def _langevin_update(P, G, b, gb, h, reg, weight, sd, biases, rng):  # pragma: no cover
    """P <- P - h (weight G + reg P) + N(0, sd^2) on every entry (and the biases); G <- 0."""
    for r in range(P.shape[0]):
        for a in range(P.shape[1]):
            P[r, a] += -h * (weight * G[r, a] + reg * P[r, a]) + sd * rng.standard_normal()
            G[r, a] = 0.0
        if biases:
            b[r] += -h * (weight * gb[r] + reg * b[r]) + sd * rng.standard_normal()
            gb[r] = 0.0


@numba.njit(cache=True, error_model="numpy")
def _sgld_epoch(rows, cols, vals, U, V, bu, bi, g, g_scale, offset, lo, hi, reg, biases, lr,
                decay, noise_var, batch, steps, t0, rng, GU, GV, gbu, gbi):  # pragma: no cover
    """``steps`` SGLD steps (step t0 + 1, ...); returns how many batch predictions were
    outside (lo, hi), where the clipped likelihood has no gradient. g's step (and noise
    variance) is h g_scale: a constant preconditioner, which leaves the target unchanged."""
    n = vals.shape[0]
    f = U.shape[1]
    weight = n / batch
    outside = 0
    for s in range(steps):
        h = lr * (t0 + s + 1.0) ** (-decay)
        gg = 0.0
        for _ in range(batch):
            k = rng.integers(0, n)
            u = rows[k]
            i = cols[k]
            pred = biased_prediction(U, V, bu, bi, g, offset, u, i, biases)
            if pred <= lo or pred >= hi:
                outside += 1
                continue
            e = pred - vals[k]
            if biases:
                gg += e
                gbu[u] += e
                gbi[i] += e
            for a in range(f):
                GU[u, a] += e * V[i, a]
                GV[i, a] += e * U[u, a]
        sd = math.sqrt(h * noise_var)
        if biases:
            hg = h * g_scale
            g[0] += -hg * (weight * gg + reg * g[0]) + math.sqrt(hg * noise_var) * \
                rng.standard_normal()
        _langevin_update(U, GU, bu, gbu, h, reg, weight, sd, biases, rng)
        _langevin_update(V, GV, bi, gbi, h, reg, weight, sd, biases, rng)
    return outside
