"""PrivRec's clients (seed 002, Algorithm 1 lines 10-19, Algorithm 2 lines 14-25).

Each selected client starts from the broadcast theta_0, trains on its own ratings (positives
rating > threshold, its other ratings and sampled never-interacted items as negatives) and
returns Delta = theta - theta_0; under DP-PrivRec it clips Delta to the broadcast bound S
and returns b = 1[|Delta| <= S] measured before clipping (Algorithm 2 computes b after the
clip, which makes it always 1; Andrew et al.'s b is the pre-clip indicator). NN-SELF clients
return the negative MAML meta-gradient instead, so that the same Reptile server step is a
meta-SGD step. The round's clients are trained together (:class:`LocalTrainer`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
import torch

from dprec.errors import DprecError
from dprec.models.local_training import (
    LocalTrainer,
    client_examples,
    epoch_orders,
    split_examples,
)
from dprec.models.side_net import UserRows, from_vector, to_matrix
from dprec.protocol.engine import Clients, Sent
from dprec.systems.privrec.clipping import clip_rows
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast, UpdateBatch

__all__ = ["SideNetClients"]


class SideNetClients(Clients):
    """The population: each user's ratings and side features stay here.

    ``event``/``event_users``: what :meth:`sent` reports for a round (the server's mechanism
    over everyone it samples from, or a non-private event for the selected clients).
    """

    def __init__(self, trainer: LocalTrainer, like: dict[str, torch.Tensor],
                 ratings: sp.csr_matrix, users: UserRows, cfg: PrivRecConfig,
                 event: object, event_users: np.ndarray | None) -> None:
        self.trainer = trainer
        self.like = like
        self.n_params = int(sum(p.numel() for p in like.values()))
        self.ratings = ratings
        self.users = users
        self.cfg = cfg
        self.event = event
        self.event_users = event_users
        self._sent: list[Sent] = []

    def step(self, broadcast: ModelBroadcast, round: int,
             rng: np.random.Generator) -> Iterator[UpdateBatch]:
        b = broadcast.check_for(self.n_params, self.ratings.shape[0])
        cfg = self.cfg
        clients = b.clients.astype(np.int64)
        theta0 = from_vector(torch.from_numpy(b.params), self.like)
        data = client_examples(self.ratings, clients, self.users.take(clients), rng,
                               threshold=cfg.threshold, negative_ratio=cfg.negative_ratio)
        base = torch.from_numpy(b.params)
        if cfg.algorithm == "maml":
            support, query = split_examples(data, rng)
            grads = self.trainer.maml_gradients(theta0, support, query, cfg.local_epochs,
                                                cfg.local_lr)
            deltas = -to_matrix(grads)
        else:
            orders = epoch_orders(data.counts, data.items.shape[1], cfg.local_epochs, rng)
            theta = self.trainer.local_sgd(theta0, data, orders, cfg.batch_size, cfg.local_lr,
                                           cfg.mu, batched=cfg.batched)
            deltas = to_matrix(theta) - base[None, :]
        d = deltas.detach().numpy().astype(np.float32)
        if not np.all(np.isfinite(d)):
            scale = float(np.abs(b.params).max()) if b.params.size else 0.0
            raise DprecError(
                f"local training diverged in round {round} (non-finite update; the broadcast "
                f"model's largest |parameter| is {scale:.3g}): lower local_lr, or for "
                "DP-PrivRec the noise (initial_clip, noise_multiplier) or raise "
                "clients_per_round")
        unclipped = np.ones(len(clients), bool)
        if b.clip > 0:
            d, unclipped = clip_rows(d, b.clip)
        users = clients if self.event_users is None else self.event_users
        self._sent = [Sent(self.event, users, 1, "user")]
        yield UpdateBatch.of_rows(clients, d, unclipped)

    def sent(self) -> list[Sent]:
        return self._sent
