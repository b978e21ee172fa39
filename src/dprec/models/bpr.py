"""BPR-MF: matrix factorisation trained for pairwise ranking by SGD.

Rendle, Freudenthaler, Gantner and Schmidt-Thieme, "BPR: Bayesian Personalized Ranking from
Implicit Feedback", UAI 2009. The score is x_ui = w_u . h_i and training maximises

    BPR-Opt = sum_{(u,i,j) in D_S} ln sigma(x_ui - x_uj) - reg |Theta|^2

over triples with i in R_u (a positive) and j not in R_u, by LearnBPR (Sec. 4.3): stochastic
gradient ascent on bootstrap-sampled triples. With x_uij = w_u . (h_i - h_j) and
g = sigma(-x_uij), one step is

    w_u += lr (g (h_i - h_j) - reg w_u)
    h_i += lr (g w_u - reg h_i)
    h_j += lr (-g w_u - reg h_j).

Used as the "BPR-MF trained centrally on obfuscated data" baseline of DPLCF, where the input
may be dense (30% ones after bit flipping); the negative sampler handles that by rejection.

Parallel training (``BPRConfig.threads >= 2``) is Hogwild (Niu, Recht, Re and Wright,
"HOGWILD!: A Lock-Free Approach to Parallelizing Stochastic Gradient Descent", NIPS 2011):
each thread runs its share of an epoch's steps on the shared factors without locks, drawing
its triples from its own xoshiro256** generator (Blackman and Vigna 2018) seeded from the
caller's generator through ``numpy.random.SeedSequence.spawn``. Two threads rarely touch the
same row at once (one user row and two item rows per step), and when they do, one update
may be partly lost; so a fit is reproducible only up to those races, and its quality, not
its bits, is what the tests check.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from numba import types
from numba.extending import overload

from dprec.errors import DataError, DprecError, check_positive
from dprec.iteration import IterationHook, iterations
from dprec.models.als import _check_int, _check_nonnegative
from dprec.models.factor_model import FactorModel
from dprec.models.fitted import fitted_array

logger = logging.getLogger(__name__)

__all__ = ["BPRConfig", "BPRMF"]

_LOSS_SAMPLE = 10_000


@dataclass(frozen=True)
class BPRConfig:
    """Hyper-parameters of :class:`BPRMF` (validated at construction)."""

    factors: int = 32
    """Number of latent factors F (>= 1)."""
    lr: float = 0.05
    """SGD learning rate (> 0)."""
    regularization: float = 0.01
    """L2 weight applied to w_u, h_i and h_j at every step (>= 0)."""
    epochs: int = 50
    """Number of epochs; one epoch is as many SGD steps as there are positives (>= 1)."""
    init_scale: float = 0.1
    """Standard deviation of the Gaussian initial factors (> 0)."""
    threads: int = 1
    """SGD threads: 1 runs the serial LearnBPR loop (bit-identical factors for a given
    seed); n >= 2 runs Hogwild on min(n, NUMBA_NUM_THREADS) threads, each with its own
    generator derived from the seed (reproducible only up to thread races); 0 uses all of
    numba's threads (>= 0)."""

    def __post_init__(self) -> None:
        _check_int("factors", self.factors, 1)
        check_positive("lr", self.lr)
        _check_nonnegative("regularization", self.regularization)
        _check_int("epochs", self.epochs, 1)
        check_positive("init_scale", self.init_scale)
        _check_int("threads", self.threads, 0)


class BPRMF(FactorModel[BPRConfig], config=BPRConfig, label="BPR"):
    """BPR-MF trained by LearnBPR (Rendle et al. 2009, Sec. 4.3) in a numba loop.

    Sampling: each SGD step draws a positive (u, i) uniformly from the stored entries with
    r_ui > 0 (bootstrap, with replacement), then j uniformly from the items not in R_u by
    rejection (expected 1 / (1 - density_u) tries, so 30%-dense obfuscated rows are cheap).
    Users with a full row (no negative) or an empty row are never drawn. An epoch is as
    many steps as there are drawable positives.

    Randomness: with ``threads=1`` the caller's ``numpy.random.Generator`` itself is passed
    into the compiled serial loop (numba supports Generator objects) and advanced there; no
    global state is touched, and the same seed gives bit-identical factors. With
    ``threads >= 2`` one seed drawn from it seeds a ``SeedSequence`` whose spawned children
    seed one xoshiro256** stream per thread (Hogwild, see the module docstring). A step
    costs O(F) arithmetic plus a few random memory accesses, which dominate on large data
    (about 0.1-0.5 us per step and thread).
    """

    _W: np.ndarray | None = None
    _H: np.ndarray | None = None

    def _fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator, progress: str | None,
             track_loss: bool, on_iteration: IterationHook | None) -> None:
        """Entries with r_ui > 0 are the positives. loss_history: the mean -ln sigma(x_uij)
        over a fixed sample of triples after each epoch (the data term of -BPR-Opt, without
        the regulariser)."""
        cfg = self.config
        pos = _positives(R)
        n_users, n_items = pos.shape
        sampler = _TripleSampler.build(pos)
        W = cfg.init_scale * rng.standard_normal((n_users, cfg.factors))
        H = cfg.init_scale * rng.standard_normal((n_items, cfg.factors))
        # drawn whether or not the loss is tracked, so tracking does not change the factors
        eval_seed = int(rng.integers(2**63))
        if track_loss:
            eval_triples = sampler.sample(min(_LOSS_SAMPLE, sampler.n_steps),
                                          np.random.default_rng(eval_seed))
        threads = _resolve_threads(cfg.threads)
        if threads > 1:
            states = thread_states(int(rng.integers(2**63)), threads)
        for epoch in iterations(cfg.epochs, on_iteration, self, progress=progress):
            if threads > 1:
                with _numba_threads(threads):
                    _bpr_epoch_hogwild(*sampler.arrays(), W, H, cfg.lr, cfg.regularization,
                                       sampler.n_steps, states)
            else:
                _bpr_epoch(*sampler.arrays(), W, H, cfg.lr, cfg.regularization,
                           sampler.n_steps, rng)
            if track_loss:
                loss = _bpr_loss(W, H, eval_triples)
                self.loss_history.append(loss)
                logger.debug("BPR epoch %d: sampled loss %.6g", epoch + 1, loss)
            self._W, self._H = W, H
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(H))):
            raise DprecError(f"BPR diverged (non-finite factors); lower lr (got {cfg.lr})")
        self._W, self._H = W, H

    user_factors = fitted_array("_W", "(M, F) user factors W.")
    item_factors = fitted_array("_H", "(N, F) item factors H; scores are x_ui = W[users] H^T.")


def _resolve_threads(threads: int) -> int:
    available = numba.config.NUMBA_NUM_THREADS
    return available if threads == 0 else min(threads, available)


class _numba_threads:
    """Context manager: run numba's parallel loops on ``n`` threads, then restore."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> None:
        self.saved = numba.get_num_threads()
        numba.set_num_threads(self.n)

    def __exit__(self, *exc: object) -> None:
        numba.set_num_threads(self.saved)


def thread_states(seed: int, threads: int) -> np.ndarray:
    """(threads, 4) uint64 xoshiro256** states, one independent stream per thread.

    Derived from ``seed`` by ``SeedSequence(seed).spawn(threads)`` (each child's 256-bit
    state; an all-zero state, the one fixed point, is replaced).
    """
    children = np.random.SeedSequence(seed).spawn(threads)
    states = np.stack([c.generate_state(4, np.uint64) for c in children])
    states[~states.any(axis=1), 0] = 1
    return states


def _positives(R: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """The 0/1 pattern of r_ui > 0 as a canonical CSR (sorted indices, int64 indptr)."""
    if not sp.issparse(R):
        raise DprecError(f"R must be a scipy.sparse matrix, got {type(R).__name__}")
    R = sp.csr_matrix(R)
    if R.nnz and not np.all(np.isfinite(R.data)):
        raise DataError("R must be finite, got NaN or infinite values")
    pos = sp.csr_matrix(R > 0, dtype=np.int8)
    pos.sum_duplicates()
    pos.sort_indices()
    return sp.csr_matrix((pos.data, pos.indices, pos.indptr.astype(np.int64)), shape=pos.shape)


@dataclass(frozen=True)
class _TripleSampler:
    """Uniform (u, i) among the positives of usable users, then uniform j not in R_u.

    (u, i): u from a Walker alias table with weights n_u (0 for users with no negative),
    then i uniform in R_u, which is uniform over those positives in O(1). j: rejection
    against a users x items bitset (one memory access per try) when it fits in
    ``_BITSET_MAX_BYTES``, else a binary search in the sorted row.
    """

    indptr: np.ndarray
    indices: np.ndarray
    prob: np.ndarray
    alias: np.ndarray
    bits: np.ndarray
    n_items: int
    n_steps: int

    @classmethod
    def build(cls, pos: sp.csr_matrix) -> _TripleSampler:
        n_users, n_items = pos.shape
        counts = np.diff(pos.indptr)
        weights = np.where((counts > 0) & (counts < n_items), counts, 0).astype(np.float64)
        if not weights.any():
            raise DataError("R has no user with both a positive and a negative item; "
                            "BPR needs at least one (u, i, j) triple")
        prob, alias = _alias_table(weights)
        n_words = (n_items + 63) // 64
        if n_users * n_words * 8 <= _BITSET_MAX_BYTES:
            bits = np.zeros((n_users, n_words), np.uint64)
            _fill_bitset(pos.indptr, pos.indices, bits)
        else:
            bits = np.zeros((0, 0), np.uint64)
        return cls(pos.indptr, pos.indices, prob, alias, bits, n_items, int(weights.sum()))

    def arrays(self) -> tuple:
        return self.indptr, self.indices, self.prob, self.alias, self.bits, self.n_items

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty((n, 3), np.int64)
        _sample_triples(*self.arrays(), rng, out)
        return out


_BITSET_MAX_BYTES = 512 * 2**20


@numba.njit(cache=True)
def _alias_table(weights):
    """Walker/Vose alias table: draw k uniform, keep it with prob[k], else take alias[k]."""
    n = weights.shape[0]
    scaled = weights * (n / weights.sum())
    prob = np.ones(n)
    alias = np.arange(n)
    stacks = np.empty((2, n), np.int64)  # row 0: "small" (scaled < 1), row 1: "large"
    top = np.zeros(2, np.int64)
    for k in range(n):
        _push(stacks, top, k, scaled[k])
    while top[0] > 0 and top[1] > 0:
        top -= 1
        s = stacks[0, top[0]]
        g = stacks[1, top[1]]
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] += scaled[s] - 1.0
        _push(stacks, top, g, scaled[g])
    return prob, alias  # entries left on a stack keep prob 1 (they are 1 up to rounding)


@numba.njit(cache=True, inline="always")
def _push(stacks, top, k, scaled_k):
    """Push ``k`` on the small stack if ``scaled_k < 1``, else on the large one."""
    side = 0 if scaled_k < 1.0 else 1
    stacks[side, top[side]] = k
    top[side] += 1


@numba.njit(cache=True)
def _fill_bitset(indptr, indices, bits):
    for u in range(indptr.shape[0] - 1):
        for k in range(indptr[u], indptr[u + 1]):
            j = indices[k]
            bits[u, j >> 6] |= np.uint64(1) << np.uint64(j & 63)


@numba.njit(cache=True)
def _is_positive(indptr, indices, bits, u, j):
    if bits.shape[0] > 0:
        return (bits[u, j >> 6] >> np.uint64(j & 63)) & np.uint64(1) != 0
    lo, hi = indptr[u], indptr[u + 1]
    end = hi
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo < end and indices[lo] == j


@numba.njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True)
def xoshiro256ss(state):
    """Next 64-bit output of xoshiro256** (Blackman and Vigna), advancing ``state`` (4 x uint64)."""
    result = _rotl(state[1] * np.uint64(5), 7) * np.uint64(9)
    t = state[1] << np.uint64(17)
    state[2] ^= state[0]
    state[3] ^= state[1]
    state[1] ^= state[2]
    state[0] ^= state[3]
    state[2] ^= t
    state[3] = _rotl(state[3], 45)
    return result


def _random(src):  # pragma: no cover - replaced by the overload inside numba
    raise NotImplementedError


@overload(_random)
def _random_overload(src):
    """A uniform double in [0, 1): ``src.random()`` for a numpy Generator, else the top 53
    bits of xoshiro256** for a (4,) uint64 state."""
    if isinstance(src, types.Array):
        def from_state(src):
            return np.float64(xoshiro256ss(src) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        return from_state

    def from_generator(src):
        return src.random()
    return from_generator


@numba.njit(cache=True)
def _uniform_index(rng, n):
    return min(int(_random(rng) * n), n - 1)


@numba.njit(cache=True)
def _draw(indptr, indices, prob, alias, bits, n_items, rng):
    """One (u, i, j) triple (see :class:`_TripleSampler`)."""
    while True:
        u = _uniform_index(rng, prob.shape[0])
        if _random(rng) >= prob[u]:
            u = alias[u]
        start = indptr[u]
        n_u = indptr[u + 1] - start
        if 0 < n_u < n_items:  # weight 0 otherwise; guards against rounding in the table
            break
    i = indices[start + _uniform_index(rng, n_u)]
    while True:
        j = _uniform_index(rng, n_items)
        if not _is_positive(indptr, indices, bits, u, j):
            return u, i, j


@numba.njit(cache=True)
def _sample_triples(indptr, indices, prob, alias, bits, n_items, rng, out):
    for t in range(out.shape[0]):
        u, i, j = _draw(indptr, indices, prob, alias, bits, n_items, rng)
        out[t, 0] = u
        out[t, 1] = i
        out[t, 2] = j


@numba.njit(cache=True, error_model="numpy")
def _bpr_epoch(indptr, indices, prob, alias, bits, n_items, W, H, lr, reg, n_steps, rng):
    for _ in range(n_steps):
        u, i, j = _draw(indptr, indices, prob, alias, bits, n_items, rng)
        _bpr_step(W, H, u, i, j, lr, reg)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _bpr_epoch_hogwild(indptr, indices, prob, alias, bits, n_items, W, H, lr, reg, n_steps,
                       states):
    """Hogwild epoch: thread t takes its share of ``n_steps`` with generator ``states[t]``."""
    threads = states.shape[0]
    for t in numba.prange(threads):
        state = states[t].copy()  # thread-local: the rows of ``states`` share a cache line
        for _ in range(n_steps // threads + (1 if t < n_steps % threads else 0)):
            u, i, j = _draw(indptr, indices, prob, alias, bits, n_items, state)
            _bpr_step(W, H, u, i, j, lr, reg)
        states[t, :] = state


@numba.njit(cache=True, error_model="numpy", inline="always")
def _bpr_step(W, H, u, i, j, lr, reg):
    f = W.shape[1]
    x = 0.0
    for a in range(f):
        x += W[u, a] * (H[i, a] - H[j, a])
    g = 1.0 / (1.0 + np.exp(x))
    for a in range(f):
        wu = W[u, a]
        hi = H[i, a]
        hj = H[j, a]
        W[u, a] += lr * (g * (hi - hj) - reg * wu)
        H[i, a] += lr * (g * wu - reg * hi)
        H[j, a] += lr * (-g * wu - reg * hj)


@numba.njit(cache=True, error_model="numpy")
def _bpr_loss(W, H, triples):
    """Mean of -ln sigma(x_uij) = ln(1 + exp(-x_uij)) over the given triples."""
    f = W.shape[1]
    total = 0.0
    for t in range(triples.shape[0]):
        u, i, j = triples[t, 0], triples[t, 1], triples[t, 2]
        x = 0.0
        for a in range(f):
            x += W[u, a] * (H[i, a] - H[j, a])
        if x > 0.0:
            total += np.log1p(np.exp(-x))
        else:
            total += -x + np.log1p(np.exp(x))
    return total / triples.shape[0]
