"""The client half of DP-PrivRec's one-run canary audit (:mod:`.canaries`): the training
population plus ``m`` canary slots, each sending S * u_k (the canary) or 0 (blank). A client
role: it imports no server code (the driver that trains with it is :mod:`.canaries`)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from dprec.protocol.engine import Clients, Sent
from dprec.systems.privrec.messages import ModelBroadcast, ModelUpdates

__all__ = ["CanaryClients"]


class CanaryClients(Clients):
    """The training population plus ``m`` canary slots with ids ``n_train .. n_train+m-1``.

    Real clients are answered by ``inner`` (the system's own clients) on a broadcast that
    lists only them; a selected slot sends S * u_k if it holds the canary, else 0.
    """

    def __init__(self, inner: Clients, n_train: int, directions: sp.csc_matrix,
                 present: np.ndarray, event: object, population: np.ndarray) -> None:
        self.inner = inner
        self.n_train = int(n_train)
        self.directions = directions
        self.present = np.asarray(present, bool)
        self.event = event
        self.population = population
        self.participated = np.zeros(len(self.present), np.int64)

    def step(self, broadcast: ModelBroadcast, round: int,
             rng: np.random.Generator) -> Iterator[ModelUpdates]:
        chosen = broadcast.clients.astype(np.int64)
        real = chosen[chosen < self.n_train]
        slots = chosen[chosen >= self.n_train] - self.n_train
        if real.size:
            yield from self.inner.step(
                ModelBroadcast(broadcast.params, real, broadcast.round, broadcast.clip),
                round, rng)
        if slots.size:
            live = slots[self.present[slots]]
            self.participated[live] += 1
            d = np.zeros((slots.size, self.directions.shape[0]), np.float32)
            mask = self.present[slots]
            if mask.any():
                d[mask] = (self.directions[:, live].T.toarray() * broadcast.clip)
            yield ModelUpdates(d, np.ones(slots.size, np.uint8))

    def sent(self) -> list[Sent]:
        return [Sent(self.event, self.population, 1, "user")]
