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
from typing import Any

import dp_accounting
import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.gaussian import Gaussian, joint_event
from dprec.protocol.deployment import generator_from_json, generator_to_json
from dprec.protocol.engine import Server
from dprec.random import is_secure, secure_generator
from dprec.systems.privrec.accounting import privrec_noise_multipliers
from dprec.systems.privrec.clipping import AdaptiveClip, clip_rows
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast, ModelUpdates, UpdateBatch

__all__ = ["SECURE_STATE", "ReptileServer"]

SECURE_STATE: dict[str, Any] = {"bit_generator": "secure"}
"""What the store keeps for a deployed role's CSPRNG: only that it was one."""


class ReptileServer(Server):
    """Holds theta_0; each round picks ``clients_per_round`` of ``train_users`` without
    replacement from its own generator.

    A trusted aggregator (:attr:`trusted_aggregator`): it selects the round's clients and
    receives each one's update in the clear (clipped under DP-PrivRec), then adds the noise
    itself. DP-PrivRec's guarantee protects a user against those who see the released
    models, not against this server.

    A role built without ``theta0`` (a server process, from the public description) takes
    theta_0 and the enrolled clients from :meth:`initialise` before its start.
    """

    public = ("n_items", "trusted_aggregator")

    trusted_aggregator = True
    """This role sees individual contributions (every selected client's update)."""

    def __init__(self, theta0: np.ndarray | None, train_users: np.ndarray | None,
                 n_users: int | None, cfg: PrivRecConfig, n_items: int | None = None) -> None:
        self.cfg = cfg
        self.population = None if n_users is None else int(n_users)
        """Users in the data set (None: not known to this role)."""
        self.n_items = None if n_items is None else int(n_items)
        """N, the items of the protocol (None: not stated)."""
        self.theta: np.ndarray | None = None
        self.train_users: np.ndarray | None = None
        self.adaptive_clip = (AdaptiveClip(cfg.initial_clip, cfg.target_quantile, cfg.clip_lr,
                                           cfg.clip_update) if cfg.dp else None)
        self.clip_history: list[float] = []
        self.unclipped_history: list[float] = []
        self._rng: np.random.Generator | None = None
        self._selected = np.zeros(0, np.int64)
        if theta0 is not None:
            if train_users is None:
                raise DprecError("give the training users with theta0")
            self.initialise(theta0, train_users)

    def initialise(self, theta0: np.ndarray, train_users: np.ndarray) -> None:
        """Set theta_0 and the clients the rounds sample from (before :meth:`start`)."""
        theta = np.asarray(theta0, dtype=np.float32).copy()
        if self.cfg.n_params is not None and theta.size != self.cfg.n_params:
            raise DprecError(f"the initial model has {theta.size} parameters, the protocol "
                             f"states n_params = {self.cfg.n_params}")
        users = np.asarray(train_users, dtype=np.int64)
        if len(users) < self.cfg.clients_per_round:
            raise DprecError(f"clients_per_round={self.cfg.clients_per_round} is more than the "
                             f"{len(users)} training users")
        self.theta, self.train_users = theta, users

    def mechanisms(self, clip: float) -> tuple[Gaussian, Gaussian]:
        """DP-PrivRec's two Gaussian queries of a round at clip bound ``clip``, replace-one
        sensitivities (:func:`~.accounting.privrec_noise_multipliers`): the update
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
        assert self._rng is not None and self.theta is not None
        chosen = self._rng.choice(self.train_users, self.cfg.clients_per_round, replace=False)
        self._selected = np.asarray(chosen, dtype=np.int64)
        clip = self.adaptive_clip
        return ModelBroadcast(self.theta, chosen, round, clip.value if clip is not None else 0.0)

    def start(self, rng: np.random.Generator) -> ModelBroadcast:
        """The first broadcast. The rounds draw from the role's own generator: a fresh
        CSPRNG when ``rng`` is one (a deployed server), else one seeded from ``rng`` (a
        simulation, reproducible from its seed)."""
        if self.theta is None:
            raise DprecError("PrivRec's server starts from an initial model and its enrolled "
                             "clients: a server process gets them with the simulation's start "
                             "(POST /v1/start with the initial state), not from --autostart")
        self._rng = secure_generator() if is_secure(rng) else np.random.default_rng(
            rng.integers(2**63))
        return self._broadcast(0)

    # -- the state a restarted role resumes from ---------------------------------------------

    def generator_state(self) -> dict[str, Any]:
        """The state of the role's own generator, as JSON (kept by the server, never
        published: the selection and the noise of the next rounds are drawn from it).

        A CSPRNG's state is not kept (:data:`SECURE_STATE` stands for it): its key would let
        whoever reads the store recompute every noise draw, past ones included, and
        subtract DP-PrivRec's noise from the released models. A role resumed from it draws
        from a fresh CSPRNG: what the lost one drew and was released is in the stored
        broadcast, so a restart changes only draws not yet released."""
        if self._rng is None:
            raise DprecError("the server has not started")
        return dict(SECURE_STATE) if is_secure(self._rng) else generator_to_json(self._rng)

    def resume(self, broadcast: ModelBroadcast, generator: dict[str, Any]) -> None:
        """Take the state the role had after publishing ``broadcast`` with its generator in
        ``generator`` (:meth:`generator_state`)."""
        if self.theta is None or broadcast.params.size != self.theta.size:
            raise DprecError("resume needs an initialised role of the broadcast's model size")
        self.theta = broadcast.params.copy()
        self._selected = broadcast.clients.astype(np.int64)
        if self.adaptive_clip is not None:
            self.adaptive_clip.value = float(broadcast.clip)
        self._rng = (secure_generator() if generator == SECURE_STATE
                     else generator_from_json(generator))

    # -- a round ------------------------------------------------------------------------------

    def _in_selection_order(self, senders: np.ndarray, d: np.ndarray, bits: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``senders`` in the order the round's clients were selected (the
        order a simulation's clients send them in); :class:`DprecError` for an update of a
        client not selected, or of one client twice."""
        sel = self._selected
        order = np.argsort(sel, kind="stable")
        at = np.minimum(np.searchsorted(sel[order], senders), max(sel.size - 1, 0))
        if not sel.size or not np.array_equal(sel[order][at], senders):
            raise DprecError("an update came from a client the server did not select this "
                             "round")
        pos = order[at]
        if np.unique(pos).size != pos.size:
            raise DprecError("a client sent two updates in one round")
        rows = np.argsort(pos, kind="stable")
        return d[rows], bits[rows]

    def aggregate(self, batches: Iterable[UpdateBatch | ModelUpdates], round: int
                  ) -> ModelBroadcast | None:
        """The round's step. :class:`UpdateBatch` rows (with their senders) are taken in the
        selection order and only from selected clients, then :class:`ModelUpdates` rows
        (anonymous: a simulation's own clients) as sent."""
        assert self._rng is not None and self.theta is not None
        m = self.cfg.clients_per_round
        named: list[UpdateBatch] = []
        anonymous: list[ModelUpdates] = []
        for b in batches:
            if isinstance(b, UpdateBatch):
                if b.n_params != self.theta.size:
                    raise DprecError(f"updates must have {self.theta.size} parameters, got "
                                     f"{b.n_params}")
                named.append(b)
            elif isinstance(b, ModelUpdates):
                b.check_for(self.theta.size, m)
                anonymous.append(b)
            else:
                raise DprecError(f"the server expects UpdateBatch or ModelUpdates, got "
                                 f"{type(b).__name__}")
        if not named and not anonymous:
            return None
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        if named:
            parts.append(self._in_selection_order(
                np.concatenate([b.clients for b in named]),
                np.concatenate([b.deltas for b in named]),
                np.concatenate([b.unclipped for b in named])))
        parts += [(b.deltas, b.unclipped) for b in anonymous]
        d = np.concatenate([p[0] for p in parts])
        u = np.concatenate([p[1] for p in parts])
        if d.shape[0] > m:
            raise DprecError(f"{d.shape[0]} updates in a round of {m} clients")
        cfg = self.cfg
        if self.adaptive_clip is None:
            self.theta = self.theta + np.float32(cfg.server_lr) * d.mean(axis=0)
            return self._broadcast(round + 1)
        s = self.adaptive_clip.value
        d, _ = clip_rows(d, s)
        update, count = self.mechanisms(s)
        noise = update.noise(self._rng, self.theta.size)
        self.theta = (self.theta + cfg.server_lr * d.sum(axis=0) / m + noise).astype(np.float32)
        if not np.all(np.isfinite(self.theta)):
            raise DprecError(f"the global model is no longer finite after round {round} "
                             f"(noise sigma_D = {update.sigma:.3g} per parameter); lower "
                             "initial_clip or noise, or raise clients_per_round")
        beta = float(u.sum()) / m + float(count.noise(self._rng))
        self.unclipped_history.append(beta)
        self.clip_history.append(self.adaptive_clip.update(beta))
        return self._broadcast(round + 1)
