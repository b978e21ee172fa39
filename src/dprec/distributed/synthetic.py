"""Synthetic client populations generated inside the shards (scale runs).

No process holds every client: a shard builds the histories of its own blocks, block ``b``
from ``derive_generator(seed, "synthetic-history", b)``, so the population is the same
whichever shard builds it. The model is the popularity part of
:func:`dprec.data.synthetic.synthetic` (Zipf item popularity over a seeded item ranking,
heavy-tailed log-normal activity) without its low-rank preference term, whose dense
(users x items) scoring would dominate a million-user run: it gives the scale runs their
cost (bits, reports, per-user solves), not a recommendation-quality benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dprec.distributed.backend import Population
from dprec.distributed.layout import BlockLayout
from dprec.distributed.shards import ClientsSource
from dprec.errors import DprecError
from dprec.protocol.engine import Clients
from dprec.random import derive_generator

__all__ = ["SyntheticPopulation", "block_history"]


def block_history(seed: int, block: int, n_users: int, n_items: int, mean_activity: float,
                  popularity_exponent: float = 1.0, activity_sigma: float = 1.0
                  ) -> sp.csr_matrix:
    """The (n_users, n_items) 0/1 history of one block: each user draws about k_u ~
    mean_activity x LogNormal(0, sigma) (normalised to mean 1, at least 1) items from the
    Zipf popularity, duplicates dropped. Depends only on (seed, block) and the sizes."""
    items_rng = derive_generator(seed, "synthetic-items")
    weights = np.empty(n_items)
    weights[items_rng.permutation(n_items)] = np.arange(1, n_items + 1) ** -popularity_exponent
    cdf = np.cumsum(weights / weights.sum())
    rng = derive_generator(seed, "synthetic-history", block)
    act = rng.lognormal(-activity_sigma**2 / 2, activity_sigma, n_users) * mean_activity
    k = np.clip(np.rint(act), 1, n_items // 2).astype(np.int64)
    users = np.repeat(np.arange(n_users, dtype=np.int64), k)
    items = np.minimum(np.searchsorted(cdf, rng.random(users.size)), n_items - 1)
    keys = np.unique(users * n_items + items)
    rows, cols = np.divmod(keys, n_items)
    return sp.csr_matrix((np.ones(keys.size, np.float32), (rows, cols.astype(np.int32))),
                         shape=(n_users, n_items))


@dataclass(frozen=True)
class _Build:
    population: SyntheticPopulation
    users: np.ndarray

    def __call__(self) -> Clients:
        p = self.population
        layout = BlockLayout(p.n_users, p.block_size)
        blocks = np.unique(self.users // p.block_size)
        parts = [block_history(p.seed, int(b), layout.rows(b)[1] - layout.rows(b)[0],
                               p.n_items, p.mean_activity) for b in blocks]
        history = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, p.n_items))
        if history.shape[0] != self.users.size:
            raise DprecError("a synthetic shard must own whole blocks")
        return p.make_clients(history, ids=self.users)


@dataclass(frozen=True)
class SyntheticPopulation(Population):
    """``n_users`` clients over ``n_items`` items, built block by block where they run.

    ``make_clients(history, ids=...)``: the system's clients class with its parameters
    bound, e.g. ``partial(ObfuscatingClients, mechanism=m, batch_size=4096)``.
    """

    n_users: int
    n_items: int
    mean_activity: float
    seed: int
    make_clients: Callable[..., Clients]
    block_size: int
    k: int | None = None

    def source(self, users: np.ndarray) -> ClientsSource:
        return _Build(self, np.asarray(users, np.int64))
