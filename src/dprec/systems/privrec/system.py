"""PrivRec, DP-PrivRec (seed 002) and their baselines as :class:`Ranker` systems.

One class, :class:`SideNetRecommender`, configured by :class:`PrivRecConfig`:

- ``privrec``: Algorithm 1 on the round engine (server selects M clients, clients run local
  SGD with the proximal term, Reptile step), on side features only;
- ``dp-privrec``: Algorithm 2 (clip, Gaussian noise on the mean update and the clip count,
  adaptive clipping), privacy from the event log by the RDP accountant at user level;
- ``fofl-self``: Reptile FL on item ids and one shared user vector (no side information);
- ``nn-self``: MAML-based FL (second-order meta-gradients through ``torch.func``);
- ``privrec-cen``: the same network trained centrally on the pooled examples.

Every system personalises on the device: :meth:`score` fine-tunes the global model on the
history it is given (the test user's fine-tune half) before scoring every item. Test users
need their own side features, so ``users`` must hold their indices in the feature table.
"""

from __future__ import annotations

import dp_accounting
import numpy as np
import scipy.sparse as sp
import torch

from dprec.data.features import SideFeatures
from dprec.errors import DprecError
from dprec.iteration import IterationHook, iterations
from dprec.models.local_training import (
    LocalTrainer,
    client_examples,
    torch_threads,
)
from dprec.models.side_net import (
    SideFeatureNet,
    UserRows,
    from_vector,
    parameters_of,
    to_vector,
)
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog
from dprec.privacy.gaussian import pld_poisson_epsilon
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.protocol.engine import PassThrough, Transport, run_protocol
from dprec.systems.base import NotFittedError, Ranker, UnknownUserError, check_history
from dprec.systems.privrec.accounting import privrec_noise_multipliers
from dprec.systems.privrec.claim import paper_epsilon
from dprec.systems.privrec.client import SideNetClients, fine_tune, finite_or
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast
from dprec.systems.privrec.server import ReptileServer
from dprec.systems.reporting import privacy_report_from_log

__all__ = ["NON_PRIVATE_THREAT_MODEL", "Relay", "SERVER_ROLE", "SideNetRecommender", "THREAT_MODEL",
           "privrec_noise"]

THREAT_MODEL = (
    "central DP with a trusted aggregator: the server that adds the noise receives each "
    "sampled client's clipped update in the clear, so the guarantee protects a user against "
    "everyone who sees the released model (other users, analysts, later rounds), not against "
    "that server (seed 002's own model; secure aggregation with distributed noise would be "
    "needed against it)"
)


class Relay(PassThrough):
    """PrivRec's proxy: it relays every update (with its sender) as sent. The server
    selected the round's clients and sees each update (a trusted aggregator), so there is
    no anonymity threshold: over the services the proxy forwards a round of any size."""

    threshold = 1
    """The fewest senders the proxy forwards (one: it relays)."""


NON_PRIVATE_THREAT_MODEL = (
    "no differential privacy: the server is a trusted aggregator that receives each selected "
    "client's model update in the clear and releases the model without noise; only the raw "
    "ratings and side features stay on the device"
)

SERVER_ROLE = {
    "role": "trusted aggregator",
    "sees": "each selected client's model update in the clear, with the client's id (it "
            "selected the round's clients)",
}
"""What the server of the federated variants is trusted with (stated in every report)."""


def privrec_noise(cfg: PrivRecConfig) -> tuple[float, float, float]:
    """(z_D, z_b, z_eff) of this configuration's rounds
    (:func:`~dprec.systems.privrec.accounting.privrec_noise_multipliers`, b's sensitivity 1/M)."""
    return privrec_noise_multipliers(cfg.noise_multiplier, cfg.budget_balance, cfg.server_lr)


class SideNetRecommender(Ranker):
    """The side-feature network trained federated (Reptile / MAML) or centrally."""

    networked = True

    uses_ratings = True
    uses_side_features = True
    supports_unknown_users = True

    def __init__(self, name: str, config: PrivRecConfig, score_batch: int = 256) -> None:
        self.name = name
        self.config = config
        self.score_batch = int(score_batch)
        self._features: SideFeatures | None = None
        self._net: SideFeatureNet | None = None
        self._theta: dict[str, torch.Tensor] | None = None
        self._users: UserRows | None = None
        self._score_rng: np.random.Generator | None = None
        self.events: EventLog | None = None
        self.transport: Transport | None = None
        """Where the server (and the relaying proxy) run: None in process, else e.g. the HTTP
        services (:class:`~dprec.services.transport.HttpTransport`); the same roles."""
        self._server: ReptileServer | None = None
        self._n_train_users = 0
        self._rounds_run = 0
        self._seconds: dict[str, float] = {}
        self._finetune_diverged = 0

    def set_side_features(self, features: SideFeatures) -> None:
        self._features = features

    # -- training ---------------------------------------------------------------------------

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> SideNetRecommender:
        cfg = self.config
        train = sp.csr_matrix(train)
        n_users, n_items = train.shape
        f = self._features
        if cfg.inputs == "features":
            if f is None:
                raise DprecError(f"{self.name} trains on side features: the dataset's features "
                                 "must be set first (dprec's runner does it; or call "
                                 "set_side_features(side_features(dataset)))")
            if f.users.n != n_users or f.items.n != n_items:
                raise DprecError(f"side features are for {f.users.n} users x {f.items.n} "
                                 f"items, the training matrix is {n_users} x {n_items}")
            self._users = UserRows.from_block(f.users)
        else:
            self._users = UserRows.empty(n_users)
        train_users = np.flatnonzero(np.diff(train.indptr) > 0)
        if not len(train_users):
            raise DprecError(f"{self.name}: no training user has a rating")
        self._n_train_users = len(train_users)
        self._net = SideFeatureNet(
            f if cfg.inputs == "features" else None, n_items, dim=cfg.embedding_dim,
            hidden=cfg.hidden, user_inputs="features" if cfg.inputs == "features" else "none",
            item_inputs="features" if cfg.inputs == "features" else "id",
            seed=int(rng.integers(2**31)))
        self._score_rng = np.random.default_rng(rng.integers(2**63))
        self.events = EventLog(n_users)
        with torch_threads(1):
            if cfg.algorithm == "central":
                self._fit_central(train, train_users, rng, on_iteration)
            else:
                self._fit_federated(train, train_users, rng, on_iteration)
        return self

    def _fit_federated(self, train: sp.csr_matrix, train_users: np.ndarray,
                       rng: np.random.Generator, on_iteration: IterationHook | None) -> None:
        cfg = self.config
        assert self._net is not None and self._users is not None and self.events is not None
        like = parameters_of(self._net)
        theta0 = to_vector(like).numpy()
        if cfg.n_params is not None and theta0.size != cfg.n_params:
            raise DprecError(f"{self.name}: the network has {theta0.size} parameters, the "
                             f"config states n_params = {cfg.n_params}")
        server = ReptileServer(theta0, train_users, train.shape[0], cfg, n_items=train.shape[1])
        if cfg.dp:
            event: object = dp_accounting.SampledWithoutReplacementDpEvent(
                len(train_users), cfg.clients_per_round, server.round_event())
            event_users: np.ndarray | None = train_users
        else:
            event, event_users = dp_accounting.NonPrivateDpEvent(), None
        clients = SideNetClients(LocalTrainer(self._net), like, train, self._users, cfg,
                                 event, event_users,
                                 devices=bool(getattr(self.transport, "device_clients", False)))
        self._server = server

        def hook(r: int, broadcast: ModelBroadcast) -> None:
            self._theta = from_vector(torch.from_numpy(broadcast.params.copy()), like)
            self._rounds_run = r + 1
            if on_iteration is not None:
                on_iteration(r, broadcast)

        run = run_protocol(server, clients, cfg.rounds, rng, self.events, proxy=Relay(),
                           transport=self.transport, on_iteration=hook)
        self._theta = from_vector(torch.from_numpy(run.broadcast.params.copy()), like)
        self._seconds = dict(run.seconds)

    def _fit_central(self, train: sp.csr_matrix, train_users: np.ndarray,
                     rng: np.random.Generator, on_iteration: IterationHook | None) -> None:
        cfg = self.config
        net, users = self._net, self._users
        assert net is not None and users is not None
        opt = torch.optim.SGD(net.parameters(), lr=cfg.local_lr)
        for epoch in iterations(cfg.rounds, on_iteration, self):
            data = client_examples(train, train_users, users.take(train_users), rng,
                                   threshold=cfg.threshold, negative_ratio=cfg.negative_ratio)
            valid = np.arange(data.items.shape[1])[None, :] < data.counts[:, None]
            rows, cols = np.nonzero(valid)
            order = rng.permutation(len(rows))
            rows, cols = rows[order], cols[order]
            who = torch.from_numpy(train_users[rows])
            items = data.items[rows, cols]
            labels = data.labels[rows, cols]
            for start in range(0, len(rows), cfg.batch_size):
                sl = slice(start, start + cfg.batch_size)
                u = who[sl]
                logits = net(users.categorical[u], users.numeric[u], users.multi_hot[u],
                             items[sl])
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels[sl])
                opt.zero_grad()
                loss.backward()
                opt.step()
            self._theta = parameters_of(net)
            self._rounds_run = epoch + 1
        self._theta = parameters_of(net)

    # -- on-device personalisation and scoring -----------------------------------------------

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if self._theta is None or self._net is None or self._users is None:
            raise NotFittedError(f"{self.name}: call fit before score")
        history, items, users = check_history(history, self._net.n_items, items, users)
        cfg = self.config
        b = history.shape[0]
        if cfg.inputs == "features":
            if users is None or (b and (users.min() < 0 or users.max() >= self._users.n_rows)):
                raise UnknownUserError(
                    f"{self.name} reads each user's own side features (held on the device): "
                    f"users must be indices in [0, {self._users.n_rows}), got "
                    f"{'None' if users is None else users[:5].tolist()}")
            rows = self._users.take(users)
        else:
            rows = UserRows.empty(b)
        trainer = LocalTrainer(self._net)
        assert self._score_rng is not None
        out = np.empty((b, self._net.n_items), np.float64)
        with torch_threads(1):
            for start in range(0, b, self.score_batch):
                idx = np.arange(start, min(b, start + self.score_batch))
                personal = self._personalise(trainer, history[idx], rows.take(idx))
                personal = self._keep_finite(personal)
                out[idx] = trainer.scores(personal, rows.take(idx), self._net.n_items).numpy()
        return out if items is None else np.take_along_axis(out, items, axis=1)

    def _keep_finite(self, personal: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A device whose fine-tuning diverged (non-finite parameters) keeps the global model;
        counted in ``diagnostics()["finetune_diverged"]``."""
        assert self._theta is not None
        out, diverged = finite_or(personal, self._theta)
        self._finetune_diverged += diverged
        return out

    def _personalise(self, trainer: LocalTrainer, history: sp.csr_matrix,
                     rows: UserRows) -> dict[str, torch.Tensor]:
        """Fine-tune a copy of the global model per user on their history (on device)."""
        assert self._theta is not None and self._score_rng is not None
        return fine_tune(trainer, self._theta, history, rows, self.config, self._score_rng)

    # -- reports ------------------------------------------------------------------------------

    def diagnostics(self) -> dict[str, object]:
        out: dict[str, object] = {"rounds_run": self._rounds_run,
                                  "training_users": self._n_train_users,
                                  "finetune_diverged": self._finetune_diverged}
        if self._net is not None:
            out["parameters"] = int(sum(p.numel() for p in self._net.parameters()))
        if self._seconds:
            out["seconds_per_role"] = self._seconds
        s = self._server
        if s is not None and s.clip_history:
            out["clip_bound"] = {"first": s.clip_history[0], "last": s.clip_history[-1],
                                 "min": min(s.clip_history), "max": max(s.clip_history)}
            out["noisy_unclipped_fraction_mean"] = float(np.mean(s.unclipped_history))
        return out

    def privacy_report(self) -> PrivacyReport | None:
        """DP-PrivRec: central DP against everyone but the server (a trusted aggregator);
        the non-private federated variants: a report that says no guarantee holds (the
        server sees every selected update); ``privrec-cen``: None (no protocol)."""
        cfg = self.config
        if cfg.algorithm == "central" or self.events is None or not self._n_train_users:
            return None
        if not cfg.dp:
            return privacy_report_from_log(
                self.name, NON_PRIVATE_THREAT_MODEL, self.events, None,
                ({"mechanism": "none: model updates sent in the clear"},), model="central",
                extra={"server": {**SERVER_ROLE, "adds_noise": False},
                       "rounds": self._rounds_run})
        z_d, z_b, z_eff = privrec_noise(cfg)
        n, m, t = self._n_train_users, cfg.clients_per_round, self._rounds_run
        q = m / n
        paper = paper_epsilon(cfg.noise_multiplier, m, n, t, cfg.delta)
        claimed = Guarantee(
            paper, cfg.delta, "user", "two", "central",
            "DP-PrivRec's accountant (seed 002, Table 3 method)",
            (f"reproduces the paper's Table 3: the Gaussian step with z={cfg.noise_multiplier:g} "
             f"composed rounds x M = {t} x {m} times, classic RDP-to-DP conversion; the "
             "paper over-counts by M and ignores that the clip count b is a second query",))
        report = privacy_report_from_log(
            self.name, THREAT_MODEL, self.events, claimed,
            ({"mechanism": "Gaussian on the clipped mean update and the clip count",
              "z": cfg.noise_multiplier, "h": cfg.budget_balance, "z_D": z_d, "z_b": z_b,
              "z_effective": z_eff, "clients_per_round": m, "training_users": n,
              "sampling": "fixed-size batches without replacement, replace-one adjacency"},),
            delta=cfg.delta, model="central",
            extra={
                "accountant": "RDP (dp-accounting), sampled without replacement, improved "
                              "conversion",
                "rounds": t,
                "server": {**SERVER_ROLE, "adds_noise": True,
                           "guarantee_holds_against": "everyone who sees the released models, "
                                                      "not the server"},
                "pld_poisson_epsilon": pld_poisson_epsilon(z_eff, q, t, cfg.delta) if t else 0.0,
                "pld_poisson_note": "the PLD accountant under Poisson sampling at q = M/N: a "
                                    "different sampling scheme, shown for comparison",
                "notes": [
                    f"b's replace-one sensitivity is 1/M, not the 2/M the paper's sigma_b "
                    f"assumes: z_b = {z_b:.4g}; with the update query z_D = {z_d:.4g}, the "
                    f"round is one Gaussian query with z_eff = {z_eff:.4g} (the paper "
                    f"accounts z = {cfg.noise_multiplier:g})",
                    "b is measured before clipping (Algorithm 2 computes it after the clip, "
                    "where it is always 1)",
                    "the server re-clips every update it receives to S",
                ],
            },
            accountant=RdpAccountant(Adjacency.REPLACE_ONE),
        )
        return report

