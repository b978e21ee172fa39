"""dp-fedavg clients (on device): FCF's private user vector and item gradient, clipped in
L2, quantised, Poisson-sampled and noised (McMahan et al. ICLR 2018, Alg. 1 ``UserUpdate``
with one exact gradient as the local step).

Each client draws everything from its own generator, derived from the round's seed and its
user id (:func:`dprec.random.derive_generator`; a device uses its CSPRNG), so the result does
not depend on how the population is cut into blocks. Per client and round:

- ``x_u`` solved from the broadcast ``V`` (FCF, :func:`dprec.systems.fmf.client.user_vectors`,
  never sent);
- ``g_u[i] = w_ui x_u`` with ``w_ui = c_ui (p_ui - x_u . v_i)`` (FCF Eq. 5), so
  ``||g_u||_2 = ||w_u||_2 ||x_u||_2``, scaled to ``||g_u||_2 <= C``;
- sampled with probability ``q`` (a coin from its own generator, kept on the device);
- ``v_u = R(gamma g_u)`` if sampled, else 0 (:func:`dprec.protocol.secure_sum.client.quantise`);
- plus its share ``Sk(mu / t)`` (secure aggregation; every client, sampled or not).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.engine import Clients, Sent, client_ids
from dprec.protocol.secure_sum.client import quantise
from dprec.random import derive_generator
from dprec.systems.dp_fedavg.messages import NoisySum
from dprec.systems.fmf.client import check_item_matrix, user_vectors

__all__ = ["FedAvgClients", "clipped_weights"]


def clipped_weights(X: np.ndarray, V: np.ndarray, history: sp.csr_matrix, alpha: float,
                    clip: float) -> np.ndarray:
    """``w_u`` (b, N) of a block of clients, scaled so that ``||w_u||_2 ||x_u||_2 <= clip``:
    the clipped gradient of client ``u`` is ``outer(w_u, x_u)``."""
    R = np.asarray(history.todense(), dtype=np.float64)
    W = (1.0 + alpha * R) * ((R > 0) - X @ V.T)
    norm = np.linalg.norm(W, axis=1) * np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, clip / np.maximum(norm, 1e-300))
    return W * scale[:, None]


class FedAvgClients(Clients):
    """The population of dp-fedavg clients (module docstring); simulated in blocks of
    ``batch_size``, each block's uploads summed (what the secure sum gives).

    ``share_mu``: each client's Skellam share (None: no shares, a trusted curator adds the
    noise; then unsampled clients send nothing, and every block still yields its sum, zero or
    not, so that the round updates whoever was sampled). ``event``: the DpEvent every client
    undergoes per round (the sampled release), recorded for the whole population."""

    def __init__(self, history: sp.csr_matrix, *, factors: int, alpha: float, reg: float,
                 clip: float, gamma: float, rate: float, share_mu: float | None, event: object,
                 batch_size: int, ids: np.ndarray | None = None) -> None:
        self._history = history.tocsr()
        self._factors, self._alpha, self._reg = factors, alpha, reg
        self._clip, self._gamma, self._rate = clip, gamma, rate
        self._share = None if share_mu is None else SkellamMechanism(share_mu)
        self._event = event
        self._batch_size = batch_size
        self.ids = client_ids(ids, history.shape[0])
        self._sent: list[Sent] = []
        self._V: np.ndarray | None = None
        self._gram: np.ndarray | None = None
        self.sampled_per_round: list[int] = []
        """How many clients included their data, per round (a simulation diagnostic: the
        server never learns it)."""

    def subset(self, users: np.ndarray) -> FedAvgClients:
        """The clients ``users`` (global ids, increasing) of this population (a shard's)."""
        pos = np.searchsorted(self.ids, users)
        return FedAvgClients(
            self._history[pos], factors=self._factors, alpha=self._alpha, reg=self._reg,
            clip=self._clip, gamma=self._gamma, rate=self._rate,
            share_mu=None if self._share is None else self._share.mu, event=self._event,
            batch_size=self._batch_size, ids=self.ids[pos])

    def prepare_round(self, broadcast: np.ndarray, round: int) -> None:
        """Read round ``round``'s broadcast: check the item factors (what a client receives
        is hostile) and keep them and their Gramian for the round's blocks."""
        self._V = check_item_matrix(broadcast, self._history.shape[1], self._factors)
        self._gram = self._V.T @ self._V
        self.sampled_per_round.append(0)

    def step_rows(self, start: int, stop: int, key: int) -> tuple[np.ndarray, Sent]:
        """A sharded round's rows ``start..stop-1`` (after :meth:`prepare_round`), keyed by
        the round's ``key`` (the seed :meth:`step` draws first): their summed vectors and
        what they sent."""
        assert self._V is not None and self._gram is not None
        block = self._block(self._V, self._gram, start, stop, int(key))
        return block.total, Sent(self._event, self.ids[start:stop].copy(), 1, "user")

    def step(self, broadcast: np.ndarray, round: int, rng: np.random.Generator
             ) -> Iterator[NoisySum]:
        seed = int(rng.integers(2 ** 63))
        self.prepare_round(broadcast, round)
        assert self._V is not None and self._gram is not None
        n = self._history.shape[0]
        self._sent = [Sent(self._event, self.ids, 1, "user")]
        for start in range(0, n, self._batch_size):
            yield self._block(self._V, self._gram, start, min(n, start + self._batch_size),
                              seed)

    def _block(self, V: np.ndarray, gram: np.ndarray, start: int, stop: int,
               seed: int) -> NoisySum:
        d = V.size
        gens = [derive_generator(seed, int(u)) for u in self.ids[start:stop]]
        sampled = np.array([g.random() < self._rate for g in gens], dtype=bool)
        self.sampled_per_round[-1] += int(sampled.sum())
        total = np.zeros(d, np.int64)
        rows = np.flatnonzero(sampled)
        if rows.size:
            hist = self._history[start + rows]
            X = user_vectors(V, hist, self._alpha, self._reg, gram)
            W = clipped_weights(X, V, hist, self._alpha, self._clip)
            limit = self._gamma * self._clip
            for j, r in enumerate(rows):
                total += quantise(np.outer(W[j], X[j]).ravel(), self._gamma, limit, gens[r])
        if self._share is not None:
            for g in gens:
                total += self._share.noise(d, g)
        return NoisySum(total, len(gens))

    def sent(self) -> list[Sent]:
        return list(self._sent)
