"""PrivRec's server (seed 002): selects M clients per round and takes the Reptile step.

PrivRec (Algorithm 1): theta_0 <- theta_0 + alpha3 mean(Delta).
DP-PrivRec (Algorithm 2): every update is clipped to S (the server re-clips what it receives,
so a client that ignores S cannot raise the sensitivity), then
theta_0 <- theta_0 + alpha3 sum(Delta)/M + N(0, sigma_D^2 I), sigma_D = (2 S z / M)
sqrt(1/(1-h)); beta~ = sum(b)/M + N(0, sigma_b^2), sigma_b = (2 z / M) sqrt(1/h), and S
moves by :class:`AdaptiveClip`. Both noises are :class:`~dprec.mechanisms.gaussian.Gaussian`
mechanisms (:meth:`ReptileServer.mechanisms`), whose joint event
(:meth:`ReptileServer.round_event`) is what a round's sampled batch undergoes. Sums are
divided by the fixed batch size M, not by the number of updates that arrived.
"""

from __future__ import annotations

from collections.abc import Iterable

import dp_accounting
import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.gaussian import Gaussian, joint_event
from dprec.privacy.gaussian import privrec_noise_multipliers
from dprec.protocol.engine import Server
from dprec.protocol.messages import ModelBroadcast, ModelUpdates
from dprec.systems.privrec.clipping import AdaptiveClip, clip_rows
from dprec.systems.privrec.config import PrivRecConfig

__all__ = ["ReptileServer"]


class ReptileServer(Server):
    """Holds theta_0; each round picks ``clients_per_round`` of ``train_users`` without
    replacement from its own generator."""

    def __init__(self, theta0: np.ndarray, train_users: np.ndarray, n_users: int,
                 cfg: PrivRecConfig) -> None:
        self.theta = np.asarray(theta0, dtype=np.float32).copy()
        self.train_users = np.asarray(train_users, dtype=np.int64)
        self.n_users = int(n_users)
        self.cfg = cfg
        if len(self.train_users) < cfg.clients_per_round:
            raise DprecError(f"clients_per_round={cfg.clients_per_round} is more than the "
                             f"{len(self.train_users)} training users")
        self.clip = (AdaptiveClip(cfg.initial_clip, cfg.target_quantile, cfg.clip_lr,
                                  cfg.clip_update) if cfg.dp else None)
        self.clip_history: list[float] = []
        self.unclipped_history: list[float] = []
        self._rng: np.random.Generator | None = None

    def mechanisms(self, clip: float) -> tuple[Gaussian, Gaussian]:
        """DP-PrivRec's two Gaussian queries of a round at clip bound ``clip``, replace-one
        sensitivities (:func:`~dprec.privacy.gaussian.privrec_noise_multipliers`): the update
        ``alpha3 sum(Delta)/M`` (``2 alpha3 S / M``, noise ``z_D``) and the clip count's mean
        ``sum(b)/M`` (``1/M``, noise ``z_b``)."""
        cfg, m = self.cfg, self.cfg.clients_per_round
        z_d, z_b, _ = privrec_noise_multipliers(cfg.noise_multiplier, cfg.budget_balance,
                                                cfg.server_lr)
        return (Gaussian(z_d, 2.0 * cfg.server_lr * clip / m), Gaussian(z_b, 1.0 / m))

    def round_event(self) -> dp_accounting.GaussianDpEvent:
        """One round's release over the sampled batch: both queries as one Gaussian event
        (:func:`~dprec.mechanisms.gaussian.joint_event`; independent of the clip bound)."""
        return joint_event(self.mechanisms(1.0))

    def _broadcast(self, round: int) -> ModelBroadcast:
        assert self._rng is not None
        chosen = self._rng.choice(self.train_users, self.cfg.clients_per_round, replace=False)
        return ModelBroadcast(self.theta, chosen, round,
                              self.clip.value if self.clip is not None else 0.0)

    def start(self, rng: np.random.Generator) -> ModelBroadcast:
        self._rng = np.random.default_rng(rng.integers(2**63))
        return self._broadcast(0)

    def aggregate(self, batches: Iterable[ModelUpdates], round: int) -> ModelBroadcast | None:
        assert self._rng is not None
        m = self.cfg.clients_per_round
        deltas, bits = [], []
        for b in batches:
            if not isinstance(b, ModelUpdates):
                raise DprecError(f"the server expects ModelUpdates, got {type(b).__name__}")
            b.check_for(self.theta.size, m)
            deltas.append(b.deltas)
            bits.append(b.unclipped)
        if not deltas:
            return None
        d = np.concatenate(deltas)
        if d.shape[0] > m:
            raise DprecError(f"{d.shape[0]} updates in a round of {m} clients")
        cfg = self.cfg
        if self.clip is None:
            self.theta = self.theta + np.float32(cfg.server_lr) * d.mean(axis=0)
            return self._broadcast(round + 1)
        s = self.clip.value
        d, _ = clip_rows(d, s)
        update, count = self.mechanisms(s)
        noise = update.noise(self._rng, self.theta.size)
        self.theta = (self.theta + cfg.server_lr * d.sum(axis=0) / m + noise).astype(np.float32)
        if not np.all(np.isfinite(self.theta)):
            raise DprecError(f"the global model is no longer finite after round {round} "
                             f"(noise sigma_D = {update.sigma:.3g} per parameter); lower "
                             "initial_clip or noise, or raise clients_per_round")
        beta = float(np.concatenate(bits).sum()) / m + float(count.noise(self._rng))
        self.unclipped_history.append(beta)
        self.clip_history.append(self.clip.update(beta))
        return self._broadcast(round + 1)
