"""dp-fedavg clients (on device): FCF's private user vector and item gradient, clipped in
L2, quantised, Poisson-sampled and noised (McMahan et al. ICLR 2018, Alg. 1 ``UserUpdate``
with one exact gradient as the local step).

Each client draws its coin and its rounding from its own generator, derived from the
round's seed and its user id (:func:`dprec.random.derive_generator`; a device uses its
CSPRNG), so the result does not depend on how the population is cut into blocks. Per
client and round:

- ``x_u`` solved from the broadcast ``V`` (FCF, :func:`dprec.systems.fmf.client.user_vectors`,
  never sent);
- ``g_u[i] = w_ui x_u`` with ``w_ui = c_ui (p_ui - x_u . v_i)`` (FCF Eq. 5), so
  ``||g_u||_2 = ||w_u||_2 ||x_u||_2``, scaled to ``||g_u||_2 <= C``;
- sampled with probability ``q`` (a coin from its own generator, kept on the device);
- ``v_u = R(gamma g_u)`` if sampled, else 0 (:func:`dprec.protocol.secure_sum.client.quantise`);
- plus its share ``Sk(mu / t)`` (secure aggregation; every client, sampled or not).

The shares of a round are drawn as dpals draws its own
(:class:`dprec.protocol.secure_sum.noise_shares.ShareNoise`): one summed Skellam draw split
exactly into the N clients' shares by a binomial tree, so a block's sum costs ``O(log N)``
splits instead of one draw per client, and each client's own share (what it seals over the
services) is its leaf; the block, the shard and the single device add up to the same
integers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.engine import Clients, Sent, client_ids
from dprec.protocol.secure_sum.client import quantise
from dprec.protocol.secure_sum.noise_shares import ShareNoise, consecutive_runs
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ClientBlock
from dprec.random import derive_generator, secure_generator
from dprec.systems.dp_fedavg.device import client_update, clipped_weights
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.fmf.client import check_item_matrix, user_vectors

__all__ = ["FedAvgClients", "check_model", "clipped_weights"]


def check_model(model: object, n_items: int, factors: int, secure: bool) -> FedAvgModel:
    """``model`` if it is a broadcast a client can use: item factors of shape
    ``(n_items, factors)``, finite, and with secure aggregation the server's 32-byte key
    (what a client receives is hostile; the sealing checks the key itself)."""
    if not isinstance(model, FedAvgModel):
        raise DprecError(f"dp-fedavg's clients need the server's FedAvgModel, got "
                         f"{type(model).__name__}")
    check_item_matrix(model.factors_matrix, n_items, factors)
    if secure and not model.server_key:
        raise DprecError("the broadcast carries no server key: a client has nothing to seal "
                         "its share to; refused")
    return model


class FedAvgClients(Clients):
    """The population of dp-fedavg clients (module docstring); simulated in blocks of
    ``batch_size``, each block's uploads summed (what the secure sum gives).

    ``share_mu``: each client's Skellam share (None: no shares, a trusted curator adds the
    noise; then unsampled clients send nothing, and every block still yields its sum, zero or
    not, so that the round updates whoever was sampled). ``event``: the DpEvent every client
    undergoes per round (the sampled release), recorded for the whole population.
    ``population``: the clients enrolled (global ids ``0..population-1``; default: these
    rows), over whom a round's shares are split. ``params``: the round's secure-sum
    parameters and ``proxy_key()`` the proxy's published key, what a client seals to over
    the services."""

    def __init__(self, history: sp.csr_matrix, *, factors: int, alpha: float, reg: float,
                 clip: float, gamma: float, rate: float, share_mu: float | None, event: object,
                 batch_size: int, ids: np.ndarray | None = None,
                 population: int | None = None, params: SecureSumParams | None = None,
                 proxy_key: Callable[[], bytes | None] | None = None,
                 devices: bool = False, check: ContributionCheck | None = None) -> None:
        self._history = history.tocsr()
        self.check = check
        """``validity=prio3``: the check each client proves its upload against over the
        services (:class:`~dprec.protocol.secure_sum.wire.ClientBlock`); None: no proof."""
        self.devices = bool(devices)
        """True: every client draws as a device, from its own fresh CSPRNG (no round seed
        another process could recompute); False: the simulation's seeded draws."""
        self._factors, self._alpha, self._reg = factors, alpha, reg
        self._clip, self._gamma, self._rate = clip, gamma, rate
        self._share_mu = share_mu
        self._event = event
        self._batch_size = batch_size
        self.ids = client_ids(ids, history.shape[0])
        self.population = int(history.shape[0] if population is None else population)
        if self.ids.size and (self.ids[0] < 0 or self.ids[-1] >= self.population
                              or (np.diff(self.ids) <= 0).any()):
            raise DprecError(f"ids must be increasing global ids in 0..{self.population - 1}")
        self._params = params
        self._proxy_key = proxy_key
        self._sent: list[Sent] = []
        self._model: FedAvgModel | None = None
        self._gram: np.ndarray | None = None
        self._round = 0
        self._noise: ShareNoise | None = None
        self.sampled_per_round: list[int] = []
        """How many clients included their data, per round (a simulation diagnostic: the
        server never learns it)."""

    def subset(self, users: np.ndarray) -> FedAvgClients:
        """The clients ``users`` (global ids, increasing) of this population (a shard's)."""
        pos = np.searchsorted(self.ids, users)
        return FedAvgClients(
            self._history[pos], factors=self._factors, alpha=self._alpha, reg=self._reg,
            clip=self._clip, gamma=self._gamma, rate=self._rate, share_mu=self._share_mu,
            event=self._event, batch_size=self._batch_size, ids=self.ids[pos],
            population=self.population, params=self._params)

    def prepare_round(self, broadcast: object, round: int) -> None:
        """Read round ``round``'s broadcast: check it (what a client receives is hostile)
        and keep the item factors and their Gramian for the round's blocks."""
        self._model = check_model(broadcast, self._history.shape[1], self._factors,
                                  self._share_mu is not None)
        V = self._model.factors_matrix
        self._gram = V.T @ V
        self._round = int(round)
        self._noise = None
        self.sampled_per_round.append(0)

    def step_rows(self, start: int, stop: int, key: int) -> tuple[np.ndarray, Sent]:
        """A sharded round's rows ``start..stop-1`` (after :meth:`prepare_round`), keyed by
        the round's ``key`` (the seed :meth:`step` draws first): their summed vectors and
        what they sent."""
        return self._total(start, stop, int(key)), Sent(self._event,
                                                        self.ids[start:stop].copy(), 1, "user")

    def step(self, broadcast: object, round: int, rng: np.random.Generator
             ) -> Iterator[ClientBlock]:
        seed = int(rng.integers(2 ** 63))
        self.prepare_round(broadcast, round)
        assert self._model is not None
        n = self._history.shape[0]
        self._sent = [Sent(self._event, self.ids, 1, "user")]
        proxy_key = None if self._proxy_key is None else self._proxy_key()
        for a in range(0, n, self._batch_size):
            b = min(n, a + self._batch_size)
            if self.devices:
                rows = self._device_rows(a, b)
                yield ClientBlock(self.ids[a:b], rows.sum(axis=0), lambda rows=rows: rows,
                                  round, self._model.server_key, proxy_key, self._params,
                                  self.check)
                continue
            yield ClientBlock(self.ids[a:b], self._total(a, b, seed),
                              lambda a=a, b=b: self._vectors(a, b, seed), round,
                              self._model.server_key, proxy_key, self._params, self.check)

    def _device_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start..stop-1``'s own noisy vectors drawn as devices draw them: each
        client's coin, rounding and share ``Sk(share_mu)`` (truncated to :attr:`check`)
        from its own fresh CSPRNG (:func:`~dprec.systems.dp_fedavg.device.client_update`),
        nothing keyed by a seed."""
        assert self._model is not None and self._gram is not None
        V = self._model.factors_matrix
        out = np.empty((stop - start, V.size), np.int64)
        for j in range(stop - start):
            out[j], sampled = client_update(
                V, self._history[start + j], alpha=self._alpha, reg=self._reg,
                clip=self._clip, gamma=self._gamma, rate=self._rate,
                share_mu=self._share_mu, rng=secure_generator(), gram=self._gram,
                check=self.check)
            self.sampled_per_round[-1] += int(sampled)
        return out

    def _shares(self, seed: int) -> ShareNoise | None:
        """The round's shares (keyed by its seed), None without secure aggregation."""
        if self._share_mu is None:
            return None
        assert self._model is not None
        if self._noise is None or self._noise.seed != seed:
            self._noise = ShareNoise(self._share_mu, self._model.factors_matrix.size,
                                     self.population, seed, "dp-fedavg", self._round)
        return self._noise

    def _quantised(self, start: int, stop: int, seed: int, each: bool
                   ) -> tuple[np.ndarray, int]:
        """Rows ``start..stop-1``'s quantised clipped gradients (zeros where the client's
        coin did not sample it): their sum, or with ``each`` one row per client; and how
        many were sampled."""
        assert self._model is not None and self._gram is not None
        V = self._model.factors_matrix
        gens = [derive_generator(seed, int(u)) for u in self.ids[start:stop]]
        sampled = np.array([g.random() < self._rate for g in gens], dtype=bool)
        out = np.zeros((stop - start, V.size) if each else V.size, np.int64)
        rows = np.flatnonzero(sampled)
        if rows.size:
            hist = self._history[start + rows]
            X = user_vectors(V, hist, self._alpha, self._reg, self._gram)
            W = clipped_weights(X, V, hist, self._alpha, self._clip)
            limit = self._gamma * self._clip
            for j, r in enumerate(rows):
                v = quantise(np.outer(W[j], X[j]).ravel(), self._gamma, limit, gens[r])
                if each:
                    out[r] = v
                else:
                    out += v
        return out, int(rows.size)

    def _total(self, start: int, stop: int, seed: int) -> np.ndarray:
        """Rows ``start..stop-1``'s noisy vectors, summed (int64, ``N F``)."""
        total, sampled = self._quantised(start, stop, seed, False)
        self.sampled_per_round[-1] += sampled
        noise = self._shares(seed)
        if noise is not None:
            for lo, hi in consecutive_runs(self.ids[start:stop]):
                total += noise.range_sum(lo, hi)
        return total

    def _vectors(self, start: int, stop: int, seed: int) -> np.ndarray:
        """Rows ``start..stop-1``'s own noisy vectors (what each device seals); they add up
        to :meth:`_total` bit for bit."""
        rows, _ = self._quantised(start, stop, seed, True)
        noise = self._shares(seed)
        if noise is not None:
            rows += np.concatenate([noise.leaves(lo, hi)
                                    for lo, hi in consecutive_runs(self.ids[start:stop])])
        return rows

    def sent(self) -> list[Sent]:
        return list(self._sent)
