"""dpals' simulated clients as the engine's client role: per round each client turns the
server's broadcast into ONE integer vector for the secure sum (:mod:`.plan`), vectorised
over all clients at once: one block per round, whose total is the exact sum plus the summed
noise shares (:class:`~dprec.protocol.secure_sum.noise_shares.ShareNoise`, O(length) at
the root) and whose clients' own vectors are built on demand, a few at a time (what the
services seal).

- Count round: its k-hot sample of its items (:func:`~.client.count_sample`).
- Init round (``init = "power"``): its quantised ``a (a^T Q)`` (:mod:`.power_init`).
- ALS round: it checks the broadcast item factors (shape, finite), solves and clips its own
  vector (never sent), and sends its quantised per-item statistics (dense over all items)
  and global Gramian term (:func:`~.client.item_statistics`, :func:`~.client.gram_statistics`),
  with the items it selected once from the DP counts (:func:`~.frequency.contributions`).

Each release gets the client's noise share (:class:`ShareNoise`); with
``aggregation=trusted`` none (the server's curator adds the noise,
:class:`~dprec.protocol.secure_sum.curator.Curator`). Every draw comes
from generators keyed by the run's seed and the client's global id, so a block, a shard or
one device produces the same integers, and ``total`` of a block is the sum of its clients'
own vectors bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.engine import Clients, Sent
from dprec.protocol.secure_sum.device import device_share
from dprec.protocol.secure_sum.noise_shares import ShareNoise, consecutive_runs
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ClientBlock
from dprec.random import secure_generator
from dprec.systems.dpals.client import (
    clip_users,
    contributions,
    count_sample,
    gram_statistics,
    item_statistics,
    solve_users,
)
from dprec.systems.dpals.config import DpalsConfig
from dprec.systems.dpals.frequency import uses_counts
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.plan import RoundPlan, RunPlan, items_bound, round_check
from dprec.systems.dpals.power_init import power_statistics

__all__ = ["BLOCK_CELLS", "DpalsClients", "RowVectors", "check_model"]

BLOCK_CELLS = 1 << 22
"""Numbers of the clients' own vectors built at once (rows x round length), when a transport
seals them one by one."""


def check_model(model: Any, n_items: int, factors: int, counts: bool) -> DpalsModel:
    """``model`` if it is a broadcast a client can use: item factors of shape
    ``(n_items, factors)``, finite, and the DP counts of ``n_items`` items when ``counts``
    (what a client receives is hostile)."""
    if not isinstance(model, DpalsModel):
        raise DprecError(f"dpals' clients need the server's DpalsModel, got "
                         f"{type(model).__name__}")
    V = model.factors_matrix
    if V.shape != (n_items, factors) or not np.isfinite(V).all():
        raise DprecError(f"the broadcast item factors must be finite, of shape "
                         f"({n_items}, {factors}); got {V.shape}: refused")
    if counts and model.counts.shape != (n_items,):
        raise DprecError(f"the broadcast must carry the DP counts of {n_items} items after "
                         f"the count round, got {model.counts.shape}: refused")
    return model


class RowVectors:
    """A block's ``vectors``: called, every client's own noisy vector in order
    (:meth:`DpalsClients.row_vectors`); :meth:`rows` builds only rows ``a..b-1`` (what a
    simulated malicious client replaces)."""

    def __init__(self, clients: DpalsClients, n: int) -> None:
        self.clients, self.n = clients, int(n)

    def __call__(self) -> Iterator[np.ndarray]:
        return self.clients.row_vectors(0, self.n)

    def rows(self, a: int, b: int) -> np.ndarray:
        """Rows ``a..b-1``'s own noisy vectors (int64, (b - a) x length)."""
        return self.clients.block_vectors(a, b)


class DpalsClients(Clients):
    """The clients ``ids`` (global, increasing) of a dpals run with public plan ``plan``,
    config fields ``cfg`` and the run's client seed ``seed``; ``proxy_key()`` gives the key
    a client seals its mask seed to (over the services)."""

    def __init__(self, train: sp.csr_matrix, ids: np.ndarray, cfg: DpalsConfig,
                 plan: RunPlan, seed: int, events: Mapping[str, Any],
                 proxy_key: Callable[[], bytes | None] | None = None,
                 devices: bool = False) -> None:
        self.train = sp.csr_matrix(train)
        self.devices = bool(devices)
        """True: every client draws as a device (:meth:`device_vectors`): its selection,
        sample and rounding keyed by its own secret seed, its noise shares from its own
        fresh CSPRNG; nothing keyed by the run's seed. False: the simulation's draws."""
        self.ids = np.asarray(ids, dtype=np.int64)
        if self.ids.shape != (self.train.shape[0],) or (np.diff(self.ids) <= 0).any():
            raise DprecError("ids must be the training rows' increasing global user ids")
        self.cfg, self.plan, self.seed, self.events = cfg, plan, int(seed), events
        self.shares = self.cfg.aggregation == "secure"
        """Whether the clients add noise shares (secure aggregation) or send their exact
        vectors to a trusted curator."""
        self._proxy_key = proxy_key
        self.weights: sp.csr_matrix | None = None
        self.lengths: dict[int, np.ndarray] = {}
        """The unclipped norms of the users' vectors in each ALS round (by round id)."""
        self._round: RoundPlan | None = None
        self._U: np.ndarray | None = None
        self._V: np.ndarray | None = None
        """An init round's broadcast item factors (:mod:`.power_init`)."""
        self._noise: list[ShareNoise] = []
        self._check: ContributionCheck | None = None
        """``validity=prio3``: the round's check (each device's share is truncated to it and
        its upload proved over the services); None: no proofs."""
        self._sent: list[Sent] = []
        self._device_seeds = (secure_generator().integers(0, 2 ** 63, size=self.ids.size)
                              if self.devices else None)
        """Each device's own secret seed for the run (it never leaves this process)."""

    def _seed(self, a: int, b: int) -> int:
        """The seed rows ``a..b-1`` draw under: the run's, or row ``a``'s own device seed
        (then one row at a time)."""
        if self._device_seeds is None:
            return self.seed
        if b != a + 1:
            raise DprecError("device clients draw one at a time, each under its own seed")
        return int(self._device_seeds[a])

    def subset(self, users: np.ndarray) -> DpalsClients:
        """The clients ``users`` (global ids, increasing) of this population."""
        pos = np.searchsorted(self.ids, users)
        return DpalsClients(self.train[pos], self.ids[pos], self.cfg, self.plan, self.seed,
                            self.events)

    # -- a round ----------------------------------------------------------------------------

    def prepare_round(self, broadcast: Any, round: int) -> None:
        """Read round ``round``'s broadcast: check it, solve and clip the users' vectors."""
        plan, c = self.plan, self.cfg
        rp = plan.round(round)
        needs_counts = rp.kind != "counts" and uses_counts(c)
        model = check_model(broadcast, plan.n_items, int(c.factors), needs_counts)
        self._round, self._U = rp, None
        self._noise = self.round_noise(rp) if self.shares else []
        self._check = (round_check(plan, rp)
                       if self.shares and c.validity == "prio3" else None)
        if rp.kind == "counts":
            return
        if self.weights is None:
            counts = model.counts.astype(np.float64) if needs_counts else None
            if self._device_seeds is None or not self.ids.size:
                self.weights = contributions(self.train, c, self.seed, counts,
                                             items_bound(c), self.ids)
            else:  # each device selects under its own seed
                self.weights = sp.vstack([
                    contributions(self.train[i:i + 1], c, self._seed(i, i + 1), counts,
                                  items_bound(c), self.ids[i:i + 1])
                    for i in range(self.ids.size)], format="csr")
        if rp.kind == "init":
            self._V = model.factors_matrix
            return
        U = solve_users(model.factors_matrix, self.train, float(c.reg),
                        float(c.unobserved_weight))
        self.lengths[rp.round_id] = np.linalg.norm(U, axis=1)
        self._U = clip_users(U, float(c.clip))

    def round_noise(self, rp: RoundPlan) -> list[ShareNoise]:
        """The noise shares the clients draw in round ``rp``, one :class:`ShareNoise` per
        release (nothing is drawn until asked): what :meth:`prepare_round` uses, and what a
        report reads to show the share parameter actually drawn."""
        return [ShareNoise(s.mu_share, s.dimension, self.plan.n_clients, self.seed, s.name,
                           rp.round_id, str(self.cfg.shares)) for s in rp.segments]

    def drawn_share_mu(self) -> dict[str, float]:
        """Each release's per-client share parameter ``Sk(mu_share)`` as the clients draw it
        (the smallest over the rounds that release it)."""
        out: dict[str, float] = {}
        for rp in self.plan.rounds:
            for noise in self.round_noise(rp):
                out[noise.release] = min(out.get(noise.release, noise.mu_share),
                                         noise.mu_share)
        return out

    def _exact(self, a: int, b: int) -> np.ndarray:
        """The exact integer sum of rows ``a..b-1``'s quantised contributions."""
        rp, c, ids, seed = self._round, self.cfg, self.ids[a:b], self._seed(a, b)
        assert rp is not None
        if rp.kind == "counts":
            kc = int(c.k if c.count_k is None else c.count_k)
            sample = count_sample(self.train[a:b], kc, seed, ids=ids)
            return np.asarray(sample.sum(axis=0), dtype=np.int64).ravel()
        assert self.weights is not None
        if rp.kind == "init":
            return power_statistics(self._V, self.weights[a:b], self.plan.init_gamma, seed,
                                    rp.round_id, ids).ravel()
        assert self._U is not None
        g = self.plan.gamma
        stats = item_statistics(self._U[a:b], self.weights[a:b], g, seed, rp.round_id,
                                float(c.rhs_weight), ids)
        gram = gram_statistics(self._U[a:b], g, seed, rp.round_id, ids)
        return np.concatenate([stats.ravel(), gram])

    def _noise_sum(self, a: int, b: int) -> np.ndarray:
        runs = consecutive_runs(self.ids[a:b])
        return np.concatenate([sum((n.range_sum(lo, hi) for lo, hi in runs),
                                   np.zeros(n.dimension, np.int64))
                               for n in self._noise])

    def block_total(self, a: int, b: int) -> np.ndarray:
        """Rows ``a..b-1``'s noisy vectors, summed (int64, the round's length)."""
        exact = self._exact(a, b)
        return exact + self._noise_sum(a, b) if self._noise else exact

    def block_vectors(self, a: int, b: int) -> np.ndarray:
        """Rows ``a..b-1``'s own noisy vectors (what each device seals); as devices, each
        client's shares ``Sk(mu_share)`` of its releases from its own fresh CSPRNG, drawn as
        a device draws them (:func:`~dprec.protocol.secure_sum.deploy.device_share`:
        truncated to the round's check with ``validity=prio3``, so an honest upload proves)."""
        exact = np.stack([self._exact(i, i + 1) for i in range(a, b)])
        if not self._noise:
            return exact
        if self.devices:
            segments = [(n.dimension, n.mu_share) for n in self._noise]
            return np.stack([row + device_share(row, secure_generator(), segments, self._check)
                             for row in exact])
        runs = consecutive_runs(self.ids[a:b])
        noise = [np.concatenate([n.leaves(lo, hi) for lo, hi in runs]) for n in self._noise]
        return exact + np.hstack(noise)

    def row_vectors(self, a: int, b: int) -> Iterator[np.ndarray]:
        """Rows ``a..b-1``'s own noisy vectors one by one, built about ``BLOCK_CELLS``
        numbers at a time."""
        assert self._round is not None
        rows = max(1, BLOCK_CELLS // max(self._round.dimension, 1))
        for lo in range(a, b, rows):
            yield from self.block_vectors(lo, min(b, lo + rows))

    def round_sent(self, a: int, b: int) -> list[Sent]:
        """The events rows ``a..b-1`` sent this round (one per release)."""
        assert self._round is not None
        return [Sent(self.events[s.name], self.ids[a:b].copy(), unit="user")
                for s in self._round.segments]

    def step_rows(self, start: int, stop: int, key: int) -> tuple[np.ndarray, list[Sent]]:
        """A sharded round's rows (after :meth:`prepare_round`): their summed vectors,
        padded with zeros to the plan's longest round, and what they sent."""
        total = self.block_total(start, stop)
        out = np.zeros(self.plan.length, dtype=np.int64)
        out[:total.size] = total
        return out, self.round_sent(start, stop)

    def step(self, broadcast: Any, round: int, rng: np.random.Generator
             ) -> Iterator[ClientBlock]:
        self._sent = []
        self.prepare_round(broadcast, round)
        rp = self._round
        assert rp is not None
        n = self.ids.size
        if n:
            # devices: each vector exists once, drawn as it is sealed; no total is formed
            yield ClientBlock(self.ids, None if self.devices else self.block_total(0, n),
                              RowVectors(self, n), round, broadcast.server_key,
                              None if self._proxy_key is None else self._proxy_key(),
                              rp.params if self.shares else None, self._check)
        self._sent = self.round_sent(0, n)

    def sent(self) -> list[Sent]:
        return self._sent
