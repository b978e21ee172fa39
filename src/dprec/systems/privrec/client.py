"""PrivRec's clients (seed 002, Algorithm 1 lines 10-19, Algorithm 2 lines 14-25).

Each selected client starts from the broadcast theta_0, trains on its own ratings (positives
rating > threshold, its other ratings and sampled never-interacted items as negatives) and
returns Delta = theta - theta_0; under DP-PrivRec it clips Delta to the broadcast bound S
and returns b = 1[|Delta| <= S] measured before clipping (Algorithm 2 computes b after the
clip, which makes it always 1; Andrew et al.'s b is the pre-clip indicator). NN-SELF clients
return the negative MAML meta-gradient instead, so that the same Reptile server step is a
meta-SGD step. The round's clients are trained together (:class:`LocalTrainer`); drawn as
devices (over the services), each is trained alone from its own CSPRNG by
:func:`local_updates`, the step a device runs (:mod:`dprec.systems.privrec.device`).

On the device, :func:`fine_tune` personalises the global model on the user's history before
scoring (what ``SideNetRecommender.score`` does for test users).
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
from dprec.random import secure_generator
from dprec.systems.privrec.clipping import clip_rows
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast, UpdateBatch

__all__ = ["SideNetClients", "fine_tune", "finite_or", "local_updates"]


def local_updates(trainer: LocalTrainer, like: dict[str, torch.Tensor],
                  ratings: sp.csr_matrix, rows: np.ndarray, users: UserRows,
                  broadcast: ModelBroadcast, cfg: PrivRecConfig, rng: np.random.Generator,
                  round: int) -> tuple[np.ndarray, np.ndarray]:
    """(Delta, b) of the clients whose ratings are ``ratings``' ``rows`` (features ``users``,
    aligned with ``rows``), trained together from the broadcast theta_0: float32 (m, P)
    updates (clipped to the broadcast's S when S > 0) and b = 1[|Delta| <= S] before the
    clip. The same generator gives the same updates for one client whichever population it
    is a row of."""
    theta0 = from_vector(torch.from_numpy(broadcast.params), like)
    data = client_examples(ratings, rows, users, rng, threshold=cfg.threshold,
                           negative_ratio=cfg.negative_ratio)
    base = torch.from_numpy(broadcast.params)
    if cfg.algorithm == "maml":
        support, query = split_examples(data, rng)
        grads = trainer.maml_gradients(theta0, support, query, cfg.local_epochs, cfg.local_lr)
        deltas = -to_matrix(grads)
    else:
        orders = epoch_orders(data.counts, data.items.shape[1], cfg.local_epochs, rng)
        theta = trainer.local_sgd(theta0, data, orders, cfg.batch_size, cfg.local_lr, cfg.mu,
                                  batched=cfg.batched)
        deltas = to_matrix(theta) - base[None, :]
    d = deltas.detach().numpy().astype(np.float32)
    if not np.all(np.isfinite(d)):
        p = broadcast.params
        scale = float(np.abs(p).max()) if p.size else 0.0
        raise DprecError(
            f"local training diverged in round {round} (non-finite update; the broadcast "
            f"model's largest |parameter| is {scale:.3g}): lower local_lr, or for "
            "DP-PrivRec the noise (initial_clip, noise_multiplier) or raise "
            "clients_per_round")
    unclipped = np.ones(len(rows), bool)
    if broadcast.clip > 0:
        d, unclipped = clip_rows(d, broadcast.clip)
    return d, unclipped


def fine_tune(trainer: LocalTrainer, theta: dict[str, torch.Tensor], history: sp.csr_matrix,
              rows: UserRows, cfg: PrivRecConfig, rng: np.random.Generator
              ) -> dict[str, torch.Tensor]:
    """A copy of the global model ``theta`` per row of ``history``, fine-tuned on that row's
    ratings (``finetune_epochs`` of the local objective; NN-SELF: full-batch inner steps
    without the proximal term), stacked (b, ...)."""
    b = history.shape[0]
    if cfg.finetune_epochs == 0 or history.nnz == 0:
        return {k: v.unsqueeze(0).repeat(b, *([1] * v.dim())) for k, v in theta.items()}
    data = client_examples(history, np.arange(b), rows, rng, threshold=cfg.threshold,
                           negative_ratio=cfg.negative_ratio)
    width = data.items.shape[1]
    orders = epoch_orders(data.counts, width, cfg.finetune_epochs, rng)
    if cfg.algorithm == "maml":  # the inner loop: full-batch steps on the support set
        return trainer.local_sgd(theta, data, orders, width, cfg.local_lr, 0.0)
    return trainer.local_sgd(theta, data, orders, cfg.batch_size, cfg.local_lr, cfg.mu,
                             batched=cfg.batched)


def finite_or(personal: dict[str, torch.Tensor], theta: dict[str, torch.Tensor]
              ) -> tuple[dict[str, torch.Tensor], int]:
    """Each stacked row of ``personal`` whose parameters are not all finite (its fine-tuning
    diverged) replaced by the global model ``theta``; and how many were."""
    bad = ~torch.isfinite(to_matrix(personal)).all(dim=1)
    if not bool(bad.any()):
        return personal, 0
    out = {}
    for k, v in personal.items():
        keep = bad.view(-1, *([1] * (v.dim() - 1)))
        out[k] = torch.where(keep, theta[k].unsqueeze(0).expand_as(v), v)
    return out, int(bad.sum())


class SideNetClients(Clients):
    """The population: each user's ratings and side features stay here.

    ``event``/``event_users``: what :meth:`sent` reports for a round (the server's mechanism
    over everyone it samples from, or a non-private event for the selected clients).
    ``devices``: each selected client draws as a device, alone and from its own CSPRNG
    (:func:`local_updates` on a population of one; over the services), instead of the
    round's clients together from the simulation's generator.
    """

    def __init__(self, trainer: LocalTrainer, like: dict[str, torch.Tensor],
                 ratings: sp.csr_matrix, users: UserRows, cfg: PrivRecConfig,
                 event: object, event_users: np.ndarray | None, devices: bool = False) -> None:
        self.trainer = trainer
        self.like = like
        self.n_params = int(sum(p.numel() for p in like.values()))
        self.ratings = ratings
        self.users = users
        self.cfg = cfg
        self.event = event
        self.event_users = event_users
        self.devices = bool(devices)
        self._sent: list[Sent] = []

    def step(self, broadcast: ModelBroadcast, round: int,
             rng: np.random.Generator) -> Iterator[UpdateBatch]:
        b = broadcast.check_for(self.n_params, self.ratings.shape[0])
        clients = b.clients.astype(np.int64)
        if self.devices:
            parts = [local_updates(self.trainer, self.like, self.ratings, clients[j:j + 1],
                                   self.users.take(clients[j:j + 1]), b, self.cfg,
                                   secure_generator(), round) for j in range(len(clients))]
            d = np.concatenate([p[0] for p in parts]).reshape(len(clients), self.n_params)
            unclipped = np.concatenate([p[1] for p in parts]).astype(bool)
        else:
            d, unclipped = local_updates(self.trainer, self.like, self.ratings, clients,
                                         self.users.take(clients), b, self.cfg, rng, round)
        users = clients if self.event_users is None else self.event_users
        self._sent = [Sent(self.event, users, 1, "user")]
        yield UpdateBatch.of_rows(clients, d, unclipped)

    def sent(self) -> list[Sent]:
        return self._sent
