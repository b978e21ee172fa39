"""The aggregation and server steps of dp-pop: the noisy sum of the k-hot vectors, ranked.

- ``trusted``: the clients send their exact k-hot vectors and the server's curator adds one
  ``Sk(mu)`` draw to their sum (the central model of AKL21;
  :class:`~dprec.protocol.secure_sum.curator.Curator`).
- ``secure``: every client adds its share ``Sk(mu / min_honest)`` to its own vector; the
  secure sum releases exactly the integer sum of the noisy vectors. :class:`PopularityServer`
  takes it as the in-process proxy's exact sum or opens it from the proxy's cryptographic
  release (the same integers; :class:`~dprec.protocol.secure_sum.server_role.SecureSumRole`).
  Any ``min_honest`` honest shares alone carry ``Sk(mu)``.

The server ranks items by the noisy counts with :func:`dprec.selection.top_k` (larger count
first, ties by the smaller item id); the ranking is the same for every user.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.engine import Server
from dprec.protocol.secure_sum.curator import Curator
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server_role import SecureSumRole
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.selection import top_k
from dprec.systems.dp_pop.messages import PopularityModel

__all__ = ["PopularityServer", "rank_items"]


def rank_items(noisy_counts: np.ndarray) -> np.ndarray:
    """All items, most popular first (ties: the smaller item id), by :func:`top_k`."""
    counts = np.asarray(noisy_counts)
    return top_k(counts[None, :], counts.size)[0]


class PopularityServer(SecureSumRole, Server):
    """dp-pop's untrusted server: publishes its X25519 public key (from the OS CSPRNG),
    takes the round's ONE batch, opens and sums it or reads the simulation's exact sum
    (:class:`SecureSumRole`), and publishes the noisy counts. It refuses a second batch and
    a sum of fewer than ``min_honest`` clients (less noise than the guarantee needs).
    ``curator`` (aggregation=trusted): adds the central ``Sk(mu)`` to the exact sum."""

    public = ("n_items",)
    label = "dp-pop's"

    def __init__(self, n_items: int, n_clients: int, min_honest: int, params: SecureSumParams,
                 mechanism: SkellamMechanism, check: ContributionCheck | None = None,
                 curator: Curator | None = None) -> None:
        self.n_items = int(n_items)
        self.n_clients = int(n_clients)
        self.min_honest = int(min_honest)
        self.params = params
        self.mechanism = mechanism
        """Each client's share ``Sk(mu / min_honest)`` (public)."""
        self.check = check
        """``validity=prio3``: every upload's Prio3 proof is verified jointly with the proxy
        (:mod:`dprec.protocol.secure_sum.proved`, the server is the Leader)."""
        self.curator = curator
        self.keys: KeyPair | None = None
        self.contributors = 0
        self.batches = 0

    def round_params(self, round: int) -> SecureSumParams:
        return self.params

    def round_check(self, round: int) -> ContributionCheck | None:
        return self.check

    def start(self, rng: np.random.Generator) -> PopularityModel:
        """The key pair (OS CSPRNG; the broadcast carries a key either way) and, with a
        curator, its generator from ``rng``."""
        key = self.new_keys()
        self.start_curator(rng)
        return PopularityModel(key, np.zeros(0, np.int64))

    def aggregate(self, batches: Iterable[Any], round: int) -> PopularityModel | None:
        if self.keys is None:
            raise DprecError("start the server first")
        counts = self.released_sum(batches, round, self.n_items)
        if counts is None:
            return None
        return PopularityModel(self.keys.public, counts, self.contributors)
