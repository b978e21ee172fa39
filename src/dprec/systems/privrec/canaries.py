"""DP-PrivRec's training as the one-run canary audit drives it (its audit hook;
:class:`~dprec.systems.audits.CanaryTraining`; Steinke, Nasr & Jagielski, NeurIPS 2023, and
Andrew et al. 2023's canary clients for federated learning).

``m`` canary slots join the training population (``N = n_train + m`` clients). A slot holds
either the canary, a client whose update is S * u_k (a fixed unit direction u_k, the largest
norm the server accepts, pointing where no one else points), or a blank client, whose update
is 0. The two choices of one slot are neighbouring datasets under DP-PrivRec's replace-one
adjacency, and N is the same either way. The model is trained once with the same server,
clients and round engine as ``dp-privrec``; :class:`CanaryClients` only answers for the slots.

In units of the canary's signal (server_lr * S_t / M along u_k), one round's observation has
noise sigma = 2 z / sqrt(1 - h) (Algorithm 2's sigma_D, seed 002).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import dp_accounting
import numpy as np
import scipy.sparse as sp

from dprec.data.features import SideFeatures
from dprec.errors import DprecError
from dprec.protocol.engine import Clients, run_protocol
from dprec.systems.audits import DEFAULT_GUESSES, AuditRequest, CanaryRun, CanaryTraining
from dprec.systems.privrec.canary_clients import CanaryClients
from dprec.systems.privrec.claim import paper_epsilon
from dprec.systems.privrec.config import PrivRecConfig

__all__ = ["CanaryClients", "PrivRecCanaries", "canary_run"]


class PrivRecCanaries(CanaryTraining):
    """DP-PrivRec (``cfg``: dp, reptile, features) on ``train`` with its side ``features``."""

    label = "dp-privrec-canaries"

    def __init__(self, cfg: PrivRecConfig, train: sp.csr_matrix,
                 features: SideFeatures) -> None:
        if not cfg.dp or cfg.algorithm != "reptile" or cfg.inputs != "features":
            raise DprecError("the one-run audit is for dp-privrec (dp=true, reptile, features)")
        self.cfg = cfg
        self.train = sp.csr_matrix(train)
        self.features = features
        n_train, n_items = self.train.shape
        if features.users.n != n_train or features.items.n != n_items:
            raise DprecError(f"side features are for {features.users.n} users x "
                             f"{features.items.n} items, the matrix is {n_train} x {n_items}")
        self.clients_per_round, self.rounds = cfg.clients_per_round, cfg.rounds
        self.delta = cfg.delta
        self._net: Any = None
        self._like: Any = None

    def train_users(self) -> tuple[int, np.ndarray]:
        return self.train.shape[0], np.flatnonzero(np.diff(self.train.indptr) > 0)

    def event(self, n_population: int) -> Any:
        from dprec.systems.privrec.system import privrec_noise

        _, _, z_eff = privrec_noise(self.cfg)
        return dp_accounting.SampledWithoutReplacementDpEvent(
            n_population, self.cfg.clients_per_round, dp_accounting.GaussianDpEvent(z_eff))

    def initial_model(self, rng: np.random.Generator) -> np.ndarray:
        from dprec.models.side_net import SideFeatureNet, parameters_of, to_vector

        cfg = self.cfg
        self._net = SideFeatureNet(self.features, self.train.shape[1], dim=cfg.embedding_dim,
                                   hidden=cfg.hidden, seed=int(rng.integers(2**31)))
        self._like = parameters_of(self._net)
        return to_vector(self._like).numpy()  # type: ignore[no-any-return]

    def roles(self, population: np.ndarray, n_total: int, directions: sp.csc_matrix,
              present: np.ndarray, theta0: np.ndarray) -> tuple[CanaryClients, Any]:
        from dprec.models.local_training import LocalTrainer
        from dprec.models.side_net import UserRows
        from dprec.systems.privrec.client import SideNetClients
        from dprec.systems.privrec.server import ReptileServer

        if self._net is None:
            raise DprecError("initial_model comes before roles")
        event = self.event(len(population))
        inner = SideNetClients(LocalTrainer(self._net), self._like, self.train,
                               UserRows.from_block(self.features.users), self.cfg, event,
                               population)
        clients = CanaryClients(inner, self.train.shape[0], directions, present, event,
                                population)
        return clients, ReptileServer(theta0, population, n_total, self.cfg)

    def run(self, server: Any, clients: Clients, rng: np.random.Generator, log: Any,
            observe: Callable[[int, Any], None]) -> Any:
        import torch

        from dprec.models.local_training import torch_threads

        with torch_threads(1):
            torch.manual_seed(int(rng.integers(2**31)))
            return run_protocol(server, clients, self.cfg.rounds, rng, log,
                                on_iteration=observe)

    def signal(self, broadcast: Any, clip: float) -> tuple[np.ndarray, float]:
        return broadcast.params.astype(np.float64), float(broadcast.clip)

    def step(self) -> float:
        return self.cfg.server_lr / self.cfg.clients_per_round

    def sigma(self) -> float:
        return 2.0 * self.cfg.noise_multiplier / math.sqrt(1.0 - self.cfg.budget_balance)

    def initial_clip(self) -> float:
        return float(self.cfg.initial_clip)

    def claimed(self, rounds_run: int, n_population: int) -> float:
        c = self.cfg
        return paper_epsilon(c.noise_multiplier, c.clients_per_round, n_population,
                             rounds_run, c.delta)

    def describe(self) -> tuple[str, dict[str, Any]]:
        c = self.cfg
        return (f"z={c.noise_multiplier:g}, h={c.budget_balance:g}, delta={c.delta:g}",
                {"rounds": c.rounds, "clients_per_round": c.clients_per_round,
                 "noise_multiplier": c.noise_multiplier, "budget_balance": c.budget_balance,
                 "initial_clip": c.initial_clip})


def canary_run(request: AuditRequest) -> CanaryRun:
    """``dprec audit dp-privrec``: one run on ``dataset`` (default ml-100k) of the config
    (100 rounds of 100 clients unless set) with ``canaries`` slots (default 1000),
    ``guesses`` (``a/b/c``) and ``support`` (default 64)."""
    from dprec.data.features import side_features
    from dprec.data.registry import load_dataset

    request.only_at("user", "is audited at user level (central DP over a whole user's "
                            "update)")
    if request.epsilon is not None:
        raise DprecError(f"{request.name} has no epsilon setting: its eps follows from "
                         "--param noise_multiplier, clients_per_round and rounds")
    cfg = request.config({"rounds": "100", "clients_per_round": "100"})
    dataset = request.settings.get("dataset", "ml-100k")
    raw = request.settings.get("guesses")
    try:
        guesses = DEFAULT_GUESSES if raw is None else tuple(int(g) for g in raw.split("/"))
    except ValueError:
        raise DprecError(f"--param guesses must be integers a/b/c, got {raw!r}") from None
    ds = load_dataset(dataset)
    return CanaryRun(PrivRecCanaries(cfg, ds.matrix, side_features(ds)),
                     request.integer("canaries", 1000), guesses,
                     request.integer("support", 64), dataset)

