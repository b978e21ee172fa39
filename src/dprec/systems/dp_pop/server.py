"""The aggregation and server steps of dp-pop: the noisy sum of the k-hot vectors, ranked.

- ``trusted``: a central curator sums the exact contributions and adds one ``Sk(mu)`` draw
  (the central model of AKL21).
- ``secure``: every client adds its share ``Sk(mu / min_honest)`` to its own vector; the
  secure sum releases exactly the integer sum of the noisy vectors. :class:`PopularityServer`
  takes it as the in-process proxy's exact sum or opens it from the proxy's cryptographic
  release (the same integers). Any ``min_honest`` honest shares alone carry ``Sk(mu)``.

The server ranks items by the noisy counts with :func:`dprec.selection.top_k` (larger count
first, ties by the smaller item id); the ranking is the same for every user.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.engine import Server
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import Release, run_id
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proved import (
    KeptOutputs,
    ProvedBatch,
    ProvedRelease,
    server_sum,
    server_verify,
)
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server import SecureSumServer, check_shares
from dprec.protocol.secure_sum.validity import ProvedVerdicts
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.selection import top_k
from dprec.systems.dp_pop.messages import ExactSum, PopularityModel, SumRelease

__all__ = ["PopularityServer", "rank_items", "trusted_noisy_sum"]

def trusted_noisy_sum(contrib: sp.csr_matrix, mech: SkellamMechanism,
                      rng: np.random.Generator) -> np.ndarray:
    """``sum_u x_u + Sk(mu)`` (int64, one entry per item)."""
    exact = np.asarray(contrib.sum(axis=0), dtype=np.int64).ravel()
    return mech(exact, rng)


def rank_items(noisy_counts: np.ndarray) -> np.ndarray:
    """All items, most popular first (ties: the smaller item id), by :func:`top_k`."""
    counts = np.asarray(noisy_counts)
    return top_k(counts[None, :], counts.size)[0]


class PopularityServer(Server):
    """dp-pop's untrusted server: publishes its X25519 public key (from the OS CSPRNG),
    takes the round's ONE batch, opens and sums it (:class:`SecureSumServer`) or reads the
    simulation's exact sum, and publishes the noisy counts. It refuses a second batch and
    a sum of fewer than ``min_honest`` clients (less noise than the guarantee needs)."""

    public = ("n_items",)

    def __init__(self, n_items: int, n_clients: int, min_honest: int, params: SecureSumParams,
                 mechanism: SkellamMechanism, check: ContributionCheck | None = None) -> None:
        self.n_items = int(n_items)
        self.n_clients = int(n_clients)
        self.min_honest = int(min_honest)
        self.params = params
        self.mechanism = mechanism
        """Each client's share ``Sk(mu / min_honest)`` (public)."""
        self.check = check
        """``validity=prio3``: every upload's Prio3 proof is verified jointly with the proxy
        (:mod:`dprec.protocol.secure_sum.proved`, the server is the Leader)."""
        self.keys: KeyPair | None = None
        self.kept_outputs: KeptOutputs | None = None
        """With proofs: this server's output share of each report it accepted at the share
        check, by message id (the service reads them from its store)."""
        self.contributors = 0
        self.batches = 0

    def start(self, rng: np.random.Generator) -> PopularityModel:
        self.keys = KeyPair()
        return PopularityModel(self.keys.public, np.zeros(0, np.int64))

    def private_key(self) -> bytes:
        """The raw private key (what the server's store keeps to reopen after a restart)."""
        if self.keys is None:
            raise DprecError("start the server first")
        return self.keys.private_raw()

    def restore_key(self, private: bytes) -> None:
        self.keys = KeyPair.from_raw(private)

    def check_shares(self, data: bytes, round: int) -> dict[bytes, str | None]:
        """The verdict on each share of the proxy's share batch (nothing is summed); with
        proofs, also this server's verifier share of each report."""
        if self.check is None:
            return check_shares(self.params, self.keys, data, round)
        if self.keys is None:
            raise DprecError("start the server first")
        try:
            batch = ProvedBatch.from_bytes(data, self.check)
            run = run_id(batch.proxy_key, self.keys.public)
            outputs: dict[bytes, bytes] = {}
            verdicts, shares = server_verify(self.check, self.keys, run, batch, round, outputs)
            return ProvedVerdicts(verdicts, shares, outputs)
        except SecureSumError as e:
            raise DprecError(str(e)) from None

    def aggregate(self, batches: Iterable[Any], round: int) -> PopularityModel | None:
        if self.keys is None:
            raise DprecError("start the server first")
        got = list(batches)
        self.batches = len(got)
        if not got:
            return None
        if len(got) > 1:
            raise DprecError(f"round {round} brought {len(got)} batches: a secure sum takes "
                             "one (each batch would reveal its own sum)")
        batch = got[0]
        if isinstance(batch, ExactSum):
            counts, contributors = np.asarray(batch.counts, np.int64), int(batch.contributors)
        elif isinstance(batch, SumRelease) and self.check is not None:
            counts, contributors = self._proved_sum(batch.data, round)
        elif isinstance(batch, SumRelease):
            try:
                result = SecureSumServer(self.params, self.keys).aggregate(
                    Release.from_bytes(batch.data, self.params), round, self.min_honest,
                    self.params.expected_clients)
            except SecureSumError as e:
                raise MessageError(f"the release is refused: {e}") from None
            counts, contributors = result.integer_sum, result.contributors
        else:
            raise DprecError(f"dp-pop's server takes one SumRelease, got {type(batch).__name__}")
        if contributors < self.min_honest:
            raise DprecError(f"the round sums {contributors} clients, fewer than min_honest = "
                             f"{self.min_honest}: its noise is below the guarantee; refused")
        self.contributors = contributors
        return PopularityModel(self.keys.public, counts, contributors)

    def _proved_sum(self, data: bytes, round: int) -> tuple[np.ndarray, int]:
        """The integer sum of a proved release: the proxy's aggregate share plus this
        server's own kept output shares of exactly the reports it names."""
        assert self.check is not None and self.keys is not None
        if self.kept_outputs is None:
            raise DprecError("this server kept no output shares of the round's reports")
        try:
            release = ProvedRelease.from_bytes(data, self.check)
            if release.proxy_key == self.keys.public:
                raise SecureSumError("the release names this server's own key as the proxy's")
            return server_sum(self.check, release, round, self.min_honest,
                              self.params.expected_clients, self.kept_outputs)
        except SecureSumError as e:
            raise MessageError(f"the release is refused: {e}") from None
