"""The client step of dp-pop: a user's bounded contribution, a k-hot vector over items.

Each user keeps at most ``k`` of their training items, chosen uniformly at random or the
``k`` most recent (largest timestamp, ties by the smaller item id). :func:`k_hot` does it
for all users at once from one generator; :class:`PopClients` draw each client's items (and,
with secure aggregation, its Skellam share) from the client's own generator
(:func:`client_generator`), so in process, in shards and over the services a client draws
the same numbers. With ``aggregation=trusted`` they send their exact k-hot vectors and the
server's curator adds the noise (:class:`~dprec.protocol.secure_sum.curator.Curator`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.engine import Clients, Sent
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.wire import ClientBlock
from dprec.random import secure_generator
from dprec.systems.dp_pop.config import Sampling
from dprec.systems.dp_pop.draws import device_vector
from dprec.systems.dp_pop.messages import PopularityModel

__all__ = ["BLOCK_CELLS", "PopClients", "Sampling", "client_generator", "device_vector", "k_hot",
           "no_proxy_key", "noisy_vectors"]



def k_hot(train: sp.csr_matrix, k: int, sampling: Sampling, rng: np.random.Generator,
          timestamps: sp.csr_matrix | None = None) -> sp.csr_matrix:
    """(users x items) 0/1 int64 CSR: row ``u`` holds at most ``k`` of user ``u``'s items.

    ``timestamps``: a CSR holding each (user, item) interaction's time (needed for
    ``sampling="recency"``; entries of ``train`` missing from it are an error).
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise DprecError(f"k must be an integer >= 1, got {k!r}")
    csr = sp.csr_matrix(train, copy=True)
    csr.eliminate_zeros()
    csr.sum_duplicates()
    n, d = csr.shape
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr.indptr))
    cols = csr.indices.astype(np.int64)
    if sampling == "uniform":
        order = np.lexsort((rng.random(cols.size), rows))
    elif sampling == "recency":
        if timestamps is None:
            raise DprecError("sampling=recency needs the interactions' timestamps (`dprec "
                             "run` hands them over from a data set that has them; library: "
                             "DpPop.set_timestamps before fit); use sampling=uniform")
        ts_csr = sp.csr_matrix(timestamps)
        if ts_csr.shape != csr.shape:
            raise DprecError(f"timestamps must have the training matrix's shape {csr.shape}, "
                             f"got {ts_csr.shape}")
        ts = np.asarray(ts_csr[rows, cols], dtype=np.float64).ravel()
        order = np.lexsort((cols, -ts, rows))  # latest first, ties by the smaller item id
    else:
        raise DprecError(f"sampling must be 'uniform' or 'recency', got {sampling!r}")
    rank = np.arange(order.size) - csr.indptr[rows[order]]
    keep = order[rank < int(k)]
    out = sp.csr_matrix((np.ones(keep.size, np.int64), (rows[keep], cols[keep])), shape=(n, d))
    out.sort_indices()
    return out


BLOCK_CELLS = 1 << 22
"""Client vectors built at once (rows x items), so memory stays O(block)."""


def client_generator(run_seed: int, client_id: int) -> np.random.Generator:
    """Client ``client_id``'s own generator in a simulation: PCG64 seeded by the
    SeedSequence of ``(run_seed, client_id)``, so a client draws the same whatever process,
    block or transport simulates it (a device draws from a CSPRNG instead)."""
    return np.random.default_rng([int(run_seed), int(client_id)])


def noisy_vectors(rows: sp.csr_matrix, ids: np.ndarray, k: int, sampling: Sampling,
                  share: SkellamMechanism | None, run_seed: int | None,
                  timestamps: sp.csr_matrix | None = None, check: Any = None) -> np.ndarray:
    """(len(ids) x items) int64: client ``ids[i]``'s k-hot vector (row ``i`` of ``rows``)
    plus its share ``Sk(mu_share)`` (``share`` None: none, aggregation=trusted), all drawn
    from :func:`client_generator` (the noise,
    then, for uniform sampling, the k items; :func:`~dprec.systems.dp_pop.draws.device_vector`,
    as a device draws, truncated to ``check``'s bounds when given); ``run_seed`` None: each
    client draws from its own fresh CSPRNG (:func:`dprec.random.secure_generator`), as a
    device does."""
    csr = sp.csr_matrix(rows)
    csr.eliminate_zeros()
    csr.sum_duplicates()
    n, d = csr.shape
    if sampling == "recency":
        chosen = k_hot(csr, k, "recency", np.random.default_rng(0), timestamps)
    elif sampling != "uniform":
        raise DprecError(f"sampling must be 'uniform' or 'recency', got {sampling!r}")
    else:
        chosen = csr
    out = np.zeros((n, d), dtype=np.int64)
    for i in range(n):
        gen = secure_generator() if run_seed is None else client_generator(run_seed,
                                                                           int(ids[i]))
        items = chosen.indices[chosen.indptr[i]:chosen.indptr[i + 1]]
        out[i] = device_vector(items, d, k, sampling, share, gen, check)
    return out


def no_proxy_key() -> bytes | None:
    """The proxy key of clients that only sum (a shard of a sharded run): none."""
    return None


class PopClients(Clients):
    """dp-pop's simulated clients: in round 0 each adds its Skellam share to its k-hot
    vector (:func:`noisy_vectors`; ``share`` None: no share, a trusted curator adds the
    noise) and hands it on in blocks (:class:`ClientBlock`); the keys a client seals to are
    the server's broadcast key and the proxy's (``proxy_key()``; ``params`` None: nothing is
    sealed)."""

    def __init__(self, train: sp.csr_matrix, ids: np.ndarray, k: int, sampling: Sampling,
                 share: SkellamMechanism | None, event: Any,
                 proxy_key: Callable[[], bytes | None], params: SecureSumParams | None,
                 timestamps: sp.csr_matrix | None = None,
                 devices: bool = False, check: Any = None, truncate: Any = None) -> None:
        self._train = sp.csr_matrix(train)
        self.devices = bool(devices)
        """True: every client draws as a device, from its own fresh CSPRNG (no run seed,
        nothing another process could recompute); False: the simulation's seeded draws."""
        self._ids = np.asarray(ids, dtype=np.int64)
        self._k, self._sampling, self._share = int(k), sampling, share
        self._event = event
        self._proxy_key = proxy_key
        self._params = params
        self._timestamps = None if timestamps is None else sp.csr_matrix(timestamps)
        self._sent: list[Sent] = []
        self._check = check
        """The round's validity check the uploads prove (``validity=prio3`` over the
        services) or None."""
        self._truncate = truncate
        """The round's validity check (``validity=prio3``, in process and over the
        services) whose truncation every client's share meets, or None."""

    def step(self, broadcast: Any, round: int, rng: np.random.Generator
             ) -> Iterator[ClientBlock]:
        if not isinstance(broadcast, PopularityModel):
            raise DprecError("dp-pop's clients need the server's key (its broadcast)")
        self._sent = []
        drawn = int(rng.integers(2**63))
        run_seed = None if self.devices else drawn
        n, d = self._train.shape
        step = max(1, BLOCK_CELLS // max(d, 1))
        for start in range(0, n, step):
            stop = min(n, start + step)
            ts = None if self._timestamps is None else self._timestamps[start:stop]
            rows = noisy_vectors(self._train[start:stop], self._ids[start:stop], self._k,
                                 self._sampling, self._share, run_seed, ts, self._truncate)
            yield ClientBlock(self._ids[start:stop], rows.sum(axis=0, dtype=np.int64),
                              lambda rows=rows: rows, round, broadcast.server_key,
                              self._proxy_key(), self._params, self._check)
        self._sent = [Sent(self._event, self._ids.copy(), unit="user")]

    @property
    def ids(self) -> np.ndarray:
        """The clients' global ids (row ``i`` is client ``ids[i]``)."""
        return self._ids

    def subset(self, rows: np.ndarray) -> PopClients:
        """The clients of rows ``rows`` (in that order), with their global ids; they only
        sum (:meth:`step_rows`), so they seal to no proxy key."""
        rows = np.asarray(rows, np.int64)
        ts = None if self._timestamps is None else self._timestamps[rows]
        return PopClients(self._train[rows], self._ids[rows], self._k, self._sampling,
                          self._share, self._event, no_proxy_key, self._params, ts,
                          truncate=self._truncate)

    def step_rows(self, start: int, stop: int, run_seed: int) -> tuple[np.ndarray, Sent]:
        """The exact int64 sum of rows start:stop's noisy vectors (:func:`noisy_vectors`,
        each client from its own :func:`client_generator` of ``run_seed``; what the secure
        sum of those clients yields) and who sent it: a shard's part of :meth:`step`."""
        d = self._train.shape[1]
        total = np.zeros(d, np.int64)
        step = max(1, BLOCK_CELLS // max(d, 1))
        for lo in range(start, stop, step):
            hi = min(stop, lo + step)
            ts = None if self._timestamps is None else self._timestamps[lo:hi]
            total += noisy_vectors(self._train[lo:hi], self._ids[lo:hi], self._k,
                                   self._sampling, self._share, run_seed, ts,
                                   self._truncate).sum(axis=0)
        return total, Sent(self._event, self._ids[start:stop].copy(), unit="user")

    def sent(self) -> list[Sent]:
        return self._sent
