"""The clients' Skellam noise shares of one secure-sum release, for any range of clients
(dpals' releases and dp-fedavg's rounds draw theirs here).

A client's share is ``Sk(lam) = P - P'`` with ``P, P'`` independent ``Poisson(lam)``
(Agarwal, Kairouz, Liu, NeurIPS 2021). Two ways to draw the ``n`` shares of a release:

- ``per-client``: client ``u`` draws its share from its own generator
  (:func:`noise_share`); a range sums its clients' shares.
- ``summed``: a binary tree over the clients ``[0, n)``. The root holds the Poisson parts of
  the total, ``(P, P') ~ Poisson(n lam)^2`` per coordinate; a node ``[lo, hi)`` splits at
  ``mid = (lo + hi) // 2`` by ``P_left ~ Binomial(P, (mid - lo) / (hi - lo))``,
  ``P_right = P - P_left`` (the same for ``P'``), from the node's own generator. Given their
  sum, independent Poissons are multinomial, so the leaves are exactly ``n`` independent
  ``Sk(lam)`` shares, and the shares of any range add up, bit for bit, to what the nodes
  covering it hold: a range costs ``O(log n)`` node splits of ``d`` coordinates, a
  client's own share is its leaf.

Either way the total over all clients, a block, a shard or one device is the same integer
vector, however the clients are grouped: the in-process sum, the sharded partials and the
services' per-client uploads agree bit for bit. A block of clients is a set of ids, summed
over its maximal runs of consecutive ids (:func:`consecutive_runs`).

Every generator is derived under the label :data:`LABEL` (``"dpals"``), whichever system
draws: the labels are part of each draw's seed, so renaming them would change every share
and every published number of dpals and dp-fedavg; they keep the bytes they had.
"""

from __future__ import annotations

import numpy as np

from dprec.mechanisms.skellam import SkellamMechanism
from dprec.random import derive_generator

__all__ = ["LABEL", "ShareNoise", "consecutive_runs", "noise_share"]

LABEL = "dpals"
"""The first label of every generator drawn here (module docstring: kept for the numbers)."""


def noise_share(mu_share: float, shape: int | tuple[int, ...], seed: int, release: str,
                round_id: int, user: int) -> np.ndarray:
    """User ``user``'s Skellam share ``Sk(mu_share)`` of one release, from its generator."""
    rng = derive_generator(seed, LABEL, "share", release, round_id, user)
    return SkellamMechanism(mu_share).noise(shape, rng)


def consecutive_runs(ids: np.ndarray) -> list[tuple[int, int]]:
    """``ids`` (increasing) as maximal runs ``[start, stop)`` of consecutive ids."""
    if ids.size == 0:
        return []
    cut = np.flatnonzero(np.diff(ids) != 1) + 1
    starts = np.concatenate([[0], cut])
    stops = np.concatenate([cut, [ids.size]])
    return [(int(ids[a]), int(ids[b - 1]) + 1) for a, b in zip(starts, stops, strict=True)]


class ShareNoise:
    """The ``n_clients`` shares ``Sk(mu_share)`` of release ``release`` in round
    ``round_id`` of run ``seed``, each of ``dimension`` coordinates (module docstring)."""

    def __init__(self, mu_share: float, dimension: int, n_clients: int, seed: int,
                 release: str, round_id: int, shares: str = "summed") -> None:
        self.mu_share = float(mu_share)
        self.dimension = int(dimension)
        self.n = int(n_clients)
        self.seed, self.release, self.round_id = int(seed), release, int(round_id)
        self.shares = shares
        self._root: tuple[np.ndarray, np.ndarray] | None = None

    def _node_rng(self, lo: int, hi: int) -> np.random.Generator:
        return derive_generator(self.seed, LABEL, "split", self.release, self.round_id,
                                lo, hi)

    def root(self) -> tuple[np.ndarray, np.ndarray]:
        """The Poisson parts of the total (drawn once)."""
        if self._root is None:
            rng = derive_generator(self.seed, LABEL, "shares", self.release, self.round_id)
            lam = self.mu_share * self.n
            self._root = (rng.poisson(lam, self.dimension), rng.poisson(lam, self.dimension))
        return self._root

    def _split(self, lo: int, hi: int, parts: tuple[np.ndarray, np.ndarray]
               ) -> tuple[int, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        mid = (lo + hi) // 2
        rng = self._node_rng(lo, hi)
        frac = (mid - lo) / (hi - lo)
        left = (rng.binomial(parts[0], frac), rng.binomial(parts[1], frac))
        return mid, left, (parts[0] - left[0], parts[1] - left[1])

    def range_sum(self, start: int, stop: int) -> np.ndarray:
        """The sum of clients ``start..stop-1``'s shares (int64, ``dimension``)."""
        if self.shares == "per-client":
            total = np.zeros(self.dimension, dtype=np.int64)
            for u in range(start, stop):
                total += self.leaf(u)
            return total
        out = np.zeros(self.dimension, dtype=np.int64)
        todo = [(0, self.n, self.root())]
        while todo:
            lo, hi, parts = todo.pop()
            if stop <= lo or hi <= start:
                continue
            if start <= lo and hi <= stop:
                out += parts[0] - parts[1]
                continue
            mid, left, right = self._split(lo, hi, parts)
            todo += [(lo, mid, left), (mid, hi, right)]
        return out

    def leaves(self, start: int, stop: int) -> np.ndarray:
        """``(stop - start, dimension)`` int64: each client's own share."""
        if self.shares == "per-client":
            return np.stack([self.leaf(u) for u in range(start, stop)]) if stop > start \
                else np.zeros((0, self.dimension), dtype=np.int64)
        out = np.zeros((stop - start, self.dimension), dtype=np.int64)
        todo = [(0, self.n, self.root())]
        while todo:
            lo, hi, parts = todo.pop()
            if stop <= lo or hi <= start:
                continue
            if hi - lo == 1:
                out[lo - start] = parts[0] - parts[1]
                continue
            mid, left, right = self._split(lo, hi, parts)
            todo += [(lo, mid, left), (mid, hi, right)]
        return out

    def leaf(self, user: int) -> np.ndarray:
        """Client ``user``'s share."""
        if self.shares == "per-client":
            return noise_share(self.mu_share, self.dimension, self.seed, self.release,
                               self.round_id, user)
        return self.leaves(user, user + 1)[0]
