"""DPLCF server (untrusted): pair counts from obfuscated vectors, estimated Jaccard, neighbours.

Never imports client code; shares only messages, mechanisms and the round engine.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
from scipy.linalg.blas import ssyrk

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.models.bitcount import BitGram, symmetrize_upper
from dprec.models.itemknn import jaccard_from_counts, top_k_neighbours
from dprec.protocol.aggregation import Aggregator, MeanAggregator
from dprec.protocol.engine import Server
from dprec.systems.dplcf.bit_screens import BitLaw
from dprec.systems.dplcf.config import Estimator
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits

__all__ = [
    "CountMethod", "Estimator", "PairCounts", "SimilarityEstimate", "SimilarityServer",
    "estimate_similarity", "publish",
]



CountMethod = Literal["bits", "syrk"]


class PairCounts:
    """Observed co-occurrence counts m11 = X^T X of the uploaded bits, and column sums.

    ``method`` picks how m11 is accumulated; both give exactly the same counts:

    - ``"bits"`` (default): AND + popcount on bit-packed item columns
      (:class:`dprec.models.bitcount.BitGram`), straight from the packed uploads (no
      unpacking); int32 counts, exact for any number of users below 2^31. Memory: m11
      (4 N^2 bytes) plus a column buffer of about 16 MiB.
    - ``"syrk"``: each batch unpacked to float32 and m11 += X_b^T X_b by BLAS ``ssyrk``
      (exact below 2^24 users). Memory: m11 (4 N^2 bytes) plus the unpacked batch
      (5 bytes per user and item).

    Which wins where (2 Zen 3 cores, benchmarks/bench_scaling.py and bench_dplcf_server.py):
    the bit path, at every shape measured, 10K-500K users x 1K-20K items, in 0.14-0.2 of the
    syrk path's time (0.18 of a dense float32 syrk at 75K x 10K), with less memory (no
    unpacked batch). Both scale as users x items^2. Syrk is kept as the reference and for
    platforms whose BLAS has far more multiply-add than popcount throughput (a GPU GEMM,
    say). The bit path pads every upload to a multiple of 8 users: uploads of one user each
    cost it 8 times the words of batched ones (still far below syrk's rank-1 updates).
    """

    def __init__(self, n_items: int, method: CountMethod = "bits") -> None:
        if method not in ("bits", "syrk"):
            raise DprecError(f"method must be 'bits' or 'syrk', got {method!r}")
        self.n_items = n_items
        self.method: CountMethod = method
        self.n_users = 0
        self._bits = BitGram(n_items) if method == "bits" else None
        self._m11 = (np.zeros((n_items, n_items), np.float32, order="F")
                     if method == "syrk" else None)
        self._col = np.zeros(n_items, np.float64)
        self._symmetric: np.ndarray | None = None

    @classmethod
    def from_counts(cls, m11: np.ndarray, n_users: int) -> PairCounts:
        """Counts already summed elsewhere (a sharded run's reduced m11, int32 with the
        column sums on its diagonal): the estimators read them as if accumulated here."""
        m11 = np.asarray(m11)
        if (m11.ndim != 2 or m11.shape[0] != m11.shape[1]
                or not np.issubdtype(m11.dtype, np.integer)):
            raise DprecError(f"m11 must be a square integer matrix, got {m11.shape} "
                             f"{m11.dtype}")
        if isinstance(n_users, bool) or int(n_users) != n_users or n_users < 0:
            raise DprecError(f"n_users must be an integer >= 0, got {n_users}")
        out = cls.__new__(cls)  # not __init__: no BitGram, whose own m11 would be thrown away
        out.n_items = m11.shape[0]
        out.method = "bits"
        out.n_users = int(n_users)
        out._bits = None
        out._m11 = None
        out._symmetric = m11
        out._col = np.diagonal(m11).astype(np.float64)
        return out

    def add(self, message: ObfuscatedBits) -> None:
        """Accumulate one batch of obfuscated vectors."""
        if message.n_items != self.n_items:
            raise DprecError(f"an upload has {message.n_items} items, expected {self.n_items}")
        self._symmetric = None
        if self._bits is not None:
            self._bits.add(message.packed)
            self.n_users = self._bits.n_rows
            return
        x = message.unpack(np.float32)
        # x.T is a Fortran-ordered view of the C-ordered batch: syrk(A A^T) needs no copy
        self._m11 = ssyrk(1.0, x.T, beta=1.0, c=self._m11, trans=0, lower=0, overwrite_c=1)
        self._col += x.sum(axis=0, dtype=np.float64)
        self.n_users += x.shape[0]

    @property
    def m11(self) -> np.ndarray:
        """The full symmetric (N, N) m11 (int32 for "bits", float32 for "syrk"): the counts
        of users with both bits set; the diagonal is the column sums."""
        if self._symmetric is None:
            if self._bits is not None:
                self._symmetric = self._bits.gram()
                self._col = np.diagonal(self._symmetric).astype(np.float64)
            else:
                assert self._m11 is not None
                symmetrize_upper(self._m11)
                self._symmetric = self._m11.T  # symmetric: the C-ordered view, rows contiguous
        return self._symmetric

    @property
    def col(self) -> np.ndarray:
        """Column sums c_i (float64): the users whose bit i is set."""
        _ = self.m11
        return self._col

    def symmetric_block(self, start: int, stop: int) -> np.ndarray:
        """Rows start:stop of the full symmetric m11 (float64)."""
        return self.m11[start:stop].astype(np.float64)


def _pair_state_counts(counts: PairCounts, start: int, stop: int) -> np.ndarray:
    """Observed (m00, m01, m10, m11) for rows start:stop against every item: (4, b, N)."""
    m11 = counts.symmetric_block(start, stop)
    ci = counts.col[start:stop, None]
    cj = counts.col[None, :]
    m10 = ci - m11
    m01 = cj - m11
    m00 = counts.n_users - m11 - m10 - m01
    return np.stack([m00, m01, m10, m11])


def _jaccard(counts: PairCounts, m_users: float, inv: np.ndarray | None,
             sim: np.ndarray) -> int:
    """Fused naive (``inv=None``) or unbiased Jaccard of every pair into ``sim``; returns
    the number of estimates clipped to [0, 1].

    The same float64 operations, in the same order, as :func:`_pair_state_counts`, the
    ``einsum`` with A^-1 and :func:`jaccard_from_counts`, so ``sim`` is bit-identical to
    that numpy path (tests/systems/test_dplcf.py checks it), without its (4, b, N)
    temporaries. Rows in parallel from 512 items on.
    """
    unbiased = inv is not None
    a = np.ascontiguousarray(inv if unbiased else np.eye(4), np.float64)
    kernel = _jaccard_parallel if counts.n_items >= 512 else _jaccard_serial
    return int(kernel(counts.m11, counts.col, m_users, a, unbiased, sim))


@numba.njit(cache=True)
def _jaccard_row(m11, col, m_users, inv, unbiased, sim, i):  # pragma: no cover - compiled
    ci = col[i]
    clipped = 0
    for j in range(m11.shape[0]):
        x11 = np.float64(m11[i, j])
        x10 = ci - x11
        x01 = col[j] - x11
        x00 = m_users - x11 - x10 - x01
        if unbiased:
            n00 = inv[0, 0] * x00 + inv[0, 1] * x01 + inv[0, 2] * x10 + inv[0, 3] * x11
            n11 = inv[3, 0] * x00 + inv[3, 1] * x01 + inv[3, 2] * x10 + inv[3, 3] * x11
        else:
            n00 = x00
            n11 = x11
        union = m_users - n00
        raw = n11 / union if union > 0 else 0.0
        if raw < 0.0 or raw > 1.0 or (union <= 0 and n11 != 0):
            clipped += 1
        sim[i, j] = np.float32(min(max(raw, 0.0), 1.0))
    return clipped


@numba.njit(cache=True, parallel=True)
def _jaccard_parallel(m11, col, m_users, inv, unbiased, sim):  # pragma: no cover - compiled
    n = m11.shape[0]
    clipped = np.zeros(n, np.int64)
    for i in numba.prange(n):
        clipped[i] = _jaccard_row(m11, col, m_users, inv, unbiased, sim, i)
    return clipped.sum()


@numba.njit(cache=True)
def _jaccard_serial(m11, col, m_users, inv, unbiased, sim):  # pragma: no cover - compiled
    clipped = 0
    for i in range(m11.shape[0]):
        clipped += _jaccard_row(m11, col, m_users, inv, unbiased, sim, i)
    return clipped


@dataclass(frozen=True)
class SimilarityEstimate:
    sim: np.ndarray
    clipped: int
    shrinkage_phi: float | None = None


def estimate_similarity(
    counts: PairCounts,
    mechanism: BitFlip | None,
    estimator: Estimator,
    block: int = 1024,
) -> SimilarityEstimate:
    """Jaccard similarity of every item pair from observed pair counts.

    - "naive": Jaccard straight on the observed (obfuscated) data, m11 / (M - m00) (LCF-SP/AP).
    - "unbiased": n_hat = A^-1 m (docs/architecture.md §1), sim = n_hat11 / (M - n_hat00) (DPLCF).
    - "eb": empirical-Bayes shrinkage of n_hat11 toward the independence prior
      mu_ij = n_hat_i n_hat_j / M with weight tau^2 / (tau^2 + Var[n_hat11]), where the
      sampling variance is known from the mechanism, Var = sum_t n_t (sum_o r_o^2 A[o, t]
      - [t = 11]) with r = row 11 of A^-1, and tau^2 = phi mu_ij is fit by moments.
    Estimates outside [0, 1] are clipped; ``clipped`` counts how many (off-diagonal included).
    "naive" and "unbiased" run as one fused numba pass over m11 (:func:`_jaccard`);
    "eb" works on blocks of ``block`` rows in numpy.
    """
    n = counts.n_items
    m_users = float(counts.n_users)
    sim = np.empty((n, n), np.float32)
    if mechanism is None or estimator == "naive":
        return SimilarityEstimate(sim, _jaccard(counts, m_users, None, sim))

    inv = mechanism.inverse_transition()
    if estimator == "unbiased":
        return SimilarityEstimate(sim, _jaccard(counts, m_users, inv, sim))

    a = mechanism.transition_matrix()
    p, q = mechanism.p, mechanism.q
    n_item = np.maximum((counts.col - q * m_users) / (p - q), 0.0)

    def unbiased(s: int, e: int) -> np.ndarray:
        return np.einsum("ts,sbn->tbn", inv, _pair_state_counts(counts, s, e))

    if estimator != "eb":
        raise ValueError(f"estimator must be naive, unbiased or eb, got {estimator!r}")
    r = inv[3]
    w = (r**2) @ a - np.array([0.0, 0.0, 0.0, 1.0])

    def moments(s: int, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nh = unbiased(s, e)
        var = np.einsum("t,tbn->bn", w, np.maximum(nh, 0.0))
        mu = n_item[s:e, None] * n_item[None, :] / m_users
        return nh, var, mu

    excess = 0.0
    mass = 0.0
    for s in range(0, n, block):
        e = min(n, s + block)
        nh, var, mu = moments(s, e)
        off = np.ones(mu.shape, bool)
        off[np.arange(e - s), np.arange(s, e)] = False
        excess += float(np.sum(((nh[3] - mu) ** 2 - var)[off]))
        mass += float(np.sum(mu[off]))
    phi = max(excess / mass, 0.0) if mass > 0 else 0.0
    clipped = 0
    for s in range(0, n, block):
        e = min(n, s + block)
        nh, var, mu = moments(s, e)
        tau2 = phi * mu
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = np.where(tau2 + var > 0, tau2 / (tau2 + var), 0.0)
        n11 = mu + weight * (nh[3] - mu)
        union = n_item[s:e, None] + n_item[None, :] - n11
        sim[s:e], c = jaccard_from_counts(n11, union)
        clipped += c
    return SimilarityEstimate(sim, clipped, phi)


def publish(sim: np.ndarray, k: int, include_full: bool) -> NeighbourLists:
    """The user-independent broadcast: top-K neighbour lists (and the matrix if asked)."""
    idx, val = top_k_neighbours(sim, k)
    return NeighbourLists(idx, val, sim if include_full else None)


class SimilarityServer(Server):
    """One round: accumulate every uploaded batch, estimate similarities, publish top-K lists.

    Holds only public parameters (mechanism, estimator, K) and what it received. The
    uploads that count are ``aggregator``'s choice (all of them for the plain mean; the hook
    for robust aggregation), given the uploads' public law (:meth:`upload_law`: N, the flips
    p and q, and the history cap). Pair counts are exact integer sums: any order and any
    batching of the uploads give the same estimate.
    """

    public = ("n_items", "estimator", "neighbours", "include_full", "count_method")

    def __init__(self, n_items: int, mechanism: BitFlip | None, estimator: Estimator,
                 neighbours: int, include_full: bool,
                 aggregator: Aggregator | None = None,
                 count_method: CountMethod = "bits", history_cap: int | None = None) -> None:
        if count_method not in ("bits", "syrk"):
            raise DprecError(f"count_method must be 'bits' or 'syrk', got {count_method!r}")
        self.history_cap = history_cap
        """L, the public bound on an honest client's history (None: N)."""
        self.n_items = n_items
        self.mechanism = mechanism
        self.aggregator = (aggregator or MeanAggregator()).for_uploads(self.upload_law())
        self.count_method: CountMethod = count_method
        """How the pair counts are accumulated (see :class:`PairCounts`; same counts)."""
        self.estimator = estimator
        self.neighbours = neighbours
        self.include_full = include_full
        self.estimate: SimilarityEstimate | None = None
        self.users_received = 0
        self.seconds = {"accumulate": 0.0, "estimate": 0.0, "publish": 0.0}
        """Time in each server phase (accumulate counts as batches arrive)."""

    def upload_law(self) -> BitLaw:
        """The public law of an honest upload: N bits flipped with (p, q) (p = 1, q = 0 for
        the true bits), at most L = ``history_cap`` (or N) true ones."""
        mech = self.mechanism
        p, q = (1.0, 0.0) if mech is None else (mech.p, mech.q)
        cap = self.n_items if self.history_cap is None else min(self.history_cap, self.n_items)
        return BitLaw(self.n_items, p, q, cap)

    def start(self, rng: np.random.Generator) -> None:
        return None

    def aggregate(self, batches: Iterable[ObfuscatedBits], round: int) -> NeighbourLists | None:
        counts = PairCounts(self.n_items, self.count_method)
        for message in self.aggregator.uploads(batches):
            if message.n_items != self.n_items:
                raise DprecError(f"an upload has {message.n_items} items, expected {self.n_items}")
            t = time.perf_counter()
            counts.add(message)
            self.seconds["accumulate"] += time.perf_counter() - t
        if counts.n_users:
            t = time.perf_counter()
            _ = counts.m11  # the last buffered users' counts (the bit path flushes here)
            self.seconds["accumulate"] += time.perf_counter() - t
        return self.apply_counts(counts)

    def apply_counts(self, counts: PairCounts) -> NeighbourLists | None:
        """The round's step from its pair counts (accumulated here, or a sharded run's
        reduced counts): records the users received, then :meth:`publish_from`; None
        (nothing published) when no user's upload came."""
        self.users_received = counts.n_users
        if counts.n_users == 0:
            return None
        return self.publish_from(counts)

    def publish_from(self, counts: PairCounts) -> NeighbourLists:
        """Estimate the similarities from the round's pair counts and publish the neighbour
        lists (the server's step after accumulation; the sharded backends call it on
        their reduced counts)."""
        t = time.perf_counter()
        self.estimate = estimate_similarity(counts, self.mechanism, self.estimator)
        self.seconds["estimate"] += time.perf_counter() - t
        t = time.perf_counter()
        lists = publish(self.estimate.sim, self.neighbours, self.include_full)
        self.seconds["publish"] += time.perf_counter() - t
        return lists
