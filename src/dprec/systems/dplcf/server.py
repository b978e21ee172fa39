"""DPLCF server (untrusted): pair counts from obfuscated vectors, estimated Jaccard, neighbours.

Never imports client code; shares only messages, mechanisms and the round engine.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.linalg.blas import ssyrk

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.models.itemknn import jaccard_from_counts, top_k_neighbours
from dprec.protocol.aggregation import Aggregator, MeanAggregator
from dprec.protocol.engine import Server
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits

Estimator = Literal["naive", "unbiased", "eb"]


@dataclass
class PairCounts:
    """Observed co-occurrence counts m11 = X^T X (upper triangle valid) and column sums."""

    n_items: int
    m11: np.ndarray = field(init=False)
    col: np.ndarray = field(init=False)
    n_users: int = 0

    def __post_init__(self) -> None:
        self.m11 = np.zeros((self.n_items, self.n_items), np.float32, order="F")
        self.col = np.zeros(self.n_items, np.float64)

    def add(self, message: ObfuscatedBits) -> None:
        """Accumulate one batch: m11 += X_b^T X_b (BLAS syrk, exact in float32 below 2^24)."""
        x = message.unpack(np.float32)
        # x.T is a Fortran-ordered view of the C-ordered batch: syrk(A A^T) needs no copy
        self.m11 = ssyrk(1.0, x.T, beta=1.0, c=self.m11, trans=0, lower=0, overwrite_c=1)
        self.col += x.sum(axis=0, dtype=np.float64)
        self.n_users += x.shape[0]

    def symmetric_block(self, start: int, stop: int) -> np.ndarray:
        """Rows start:stop of the full symmetric m11 (float64)."""
        upper = self.m11[start:stop].astype(np.float64)
        lower = self.m11[:, start:stop].T.astype(np.float64)
        rows = np.arange(start, stop)[:, None]
        cols = np.arange(self.n_items)[None, :]
        return np.where(cols >= rows, upper, lower)


def _pair_state_counts(counts: PairCounts, start: int, stop: int) -> np.ndarray:
    """Observed (m00, m01, m10, m11) for rows start:stop against every item: (4, b, N)."""
    m11 = counts.symmetric_block(start, stop)
    ci = counts.col[start:stop, None]
    cj = counts.col[None, :]
    m10 = ci - m11
    m01 = cj - m11
    m00 = counts.n_users - m11 - m10 - m01
    return np.stack([m00, m01, m10, m11])


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
    - "unbiased": n_hat = A^-1 m (SYSTEMS.md §1), sim = n_hat11 / (M - n_hat00) (DPLCF).
    - "eb": empirical-Bayes shrinkage of n_hat11 toward the independence prior
      mu_ij = n_hat_i n_hat_j / M with weight tau^2 / (tau^2 + Var[n_hat11]), where the
      sampling variance is known from the mechanism, Var = sum_t n_t (sum_o r_o^2 A[o, t]
      - [t = 11]) with r = row 11 of A^-1, and tau^2 = phi mu_ij is fit by moments.
    Estimates outside [0, 1] are clipped; ``clipped`` counts how many (off-diagonal included).
    """
    n = counts.n_items
    m_users = float(counts.n_users)
    sim = np.empty((n, n), np.float32)
    if mechanism is None or estimator == "naive":
        clipped = 0
        for s in range(0, n, block):
            e = min(n, s + block)
            m = _pair_state_counts(counts, s, e)
            sim[s:e], c = jaccard_from_counts(m[3], m_users - m[0])
            clipped += c
        return SimilarityEstimate(sim, clipped)

    inv = mechanism.inverse_transition()
    a = mechanism.transition_matrix()
    p, q = mechanism.p, mechanism.q
    n_item = np.maximum((counts.col - q * m_users) / (p - q), 0.0)

    def unbiased(s: int, e: int) -> np.ndarray:
        return np.einsum("ts,sbn->tbn", inv, _pair_state_counts(counts, s, e))

    if estimator == "unbiased":
        clipped = 0
        for s in range(0, n, block):
            e = min(n, s + block)
            nh = unbiased(s, e)
            sim[s:e], c = jaccard_from_counts(nh[3], m_users - nh[0])
            clipped += c
        return SimilarityEstimate(sim, clipped)

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
    for robust aggregation). Pair counts are exact integer sums: any order and any batching
    of the uploads give the same estimate.
    """

    def __init__(self, n_items: int, mechanism: BitFlip | None, estimator: Estimator,
                 neighbours: int, include_full: bool,
                 aggregator: Aggregator | None = None) -> None:
        self.aggregator = aggregator or MeanAggregator()
        self.n_items = n_items
        self.mechanism = mechanism
        self.estimator = estimator
        self.neighbours = neighbours
        self.include_full = include_full
        self.estimate: SimilarityEstimate | None = None
        self.users_received = 0
        self.seconds = {"accumulate": 0.0, "estimate": 0.0, "publish": 0.0}
        """Time in each server phase (accumulate counts as batches arrive)."""

    def start(self, rng: np.random.Generator) -> None:
        return None

    def aggregate(self, batches: Iterable[ObfuscatedBits], round: int) -> NeighbourLists | None:
        counts = PairCounts(self.n_items)
        for message in self.aggregator.uploads(batches):
            if message.n_items != self.n_items:
                raise DprecError(f"an upload has {message.n_items} items, expected {self.n_items}")
            t = time.perf_counter()
            counts.add(message)
            self.seconds["accumulate"] += time.perf_counter() - t
        self.users_received = counts.n_users
        if counts.n_users == 0:
            return None
        t = time.perf_counter()
        self.estimate = estimate_similarity(counts, self.mechanism, self.estimator)
        self.seconds["estimate"] += time.perf_counter() - t
        t = time.perf_counter()
        lists = publish(self.estimate.sim, self.neighbours, self.include_full)
        self.seconds["publish"] += time.perf_counter() - t
        return lists
