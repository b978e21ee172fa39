"""FCF and FMF-LDP as one simulated federated protocol (SYSTEMS.md §2).

Each epoch: the server broadcasts V; every client solves its private x_u (client.user_vectors)
and either sends its exact item gradient (FCF, non-private) or k LDP reports of sampled
gradient entries (FMF-LDP, Algorithm 1) through the shuffling proxy; the server estimates the
mean gradient (server.estimate_mean_gradient) and descends ``server_steps`` times.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError, check_positive
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.privacy.accounting import local_guarantee, shuffled_guarantee
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.privacy.ledger import PrivacyLedger
from dprec.protocol.messages import GradientReports, ItemMatrix, ShuffledReports, ValueReports
from dprec.protocol.shuffler import Shuffler
from dprec.systems.base import Recommender
from dprec.systems.fmf import client, server

log = logging.getLogger(__name__)

Mechanism = Literal["binary", "piecewise", "none"]

THREAT_MODEL = (
    "untrusted server receives, each epoch, k single (item, factor, value) reports per user "
    "through a shuffling proxy that strips identities; x_u never leaves the device"
)


@dataclass(frozen=True)
class FMFConfig:
    """Configuration of FCF / FMF-LDP (paper defaults)."""

    factors: int = 5
    """F, latent factors."""
    regularization: float = 1e-6
    """lambda."""
    lr: float = 1e-3
    """gamma, the server's learning rate."""
    alpha: float = 1.0
    """Confidence slope: c_ui = 1 + alpha r_ui (not given in the paper)."""
    epochs: int = 20
    """T, federated epochs."""
    server_steps: int = 20
    """Gradient-descent steps the server takes per epoch with the epoch's estimate."""
    epsilon: float = 2.5
    """Per-report epsilon."""
    k: int = 100
    """Reports per client per epoch."""
    clip: float = 1.0
    """Gradient entries are clipped to [-clip, clip] and scaled to [-1, 1] before the mechanism."""
    mechanism: Mechanism = "binary"
    """binary (the paper), piecewise (Wang et al. 2019), none (same sampling, no noise)."""
    exact: bool = False
    """True = FCF: each client sends its exact full gradient (non-private)."""
    init_scale: float = 0.1
    """V ~ N(0, init_scale^2) at the start."""
    shuffle_threshold: int = 1
    """The proxy refuses to forward fewer reports than this."""
    user_budget: float | None = None
    """Per-user epsilon budget; a client stops reporting when the next epoch would exceed it."""
    delta: float = 1e-6
    """delta of the central guarantee after shuffling."""
    batch_size: int = 8192
    """Clients simulated per vectorised batch."""

    def __post_init__(self) -> None:
        for name in ("factors", "epochs", "server_steps", "k", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise DprecError(f"{name} must be >= 1, got {getattr(self, name)}")
        check_positive("epsilon", self.epsilon)
        check_positive("lr", self.lr)
        check_positive("clip", self.clip)
        if self.mechanism not in ("binary", "piecewise", "none"):
            raise DprecError(f"mechanism must be binary, piecewise or none, got {self.mechanism!r}")
        if self.factors > 255:
            raise DprecError(f"factors must be <= 255, got {self.factors}")


class FederatedMF(Recommender):
    """FCF (``exact=True``) or FMF-LDP; scores are x_u . v_i computed on the device."""

    def __init__(self, name: str, config: FMFConfig,
                 on_epoch: Callable[[int, FederatedMF], None] | None = None) -> None:
        self.name = name
        self.config = config
        self.on_epoch = on_epoch
        self.V: np.ndarray | None = None
        self._history: sp.csr_matrix | None = None
        self._diag: dict[str, object] = {}
        self._n_users = 0
        self._reporting_epochs: np.ndarray | None = None

    def _mechanism(self) -> BinaryMechanism | PiecewiseMechanism | None:
        c = self.config
        if c.mechanism == "binary":
            return BinaryMechanism(c.epsilon)
        if c.mechanism == "piecewise":
            return PiecewiseMechanism(c.epsilon)
        return None

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator) -> FederatedMF:
        c = self.config
        n_users, n_items = train.shape
        self._n_users = n_users
        mech = self._mechanism()
        V = c.init_scale * rng.standard_normal((n_items, c.factors))
        ledger = PrivacyLedger(c.user_budget, n_users) if c.user_budget is not None else None
        reported = np.zeros(n_users, np.int64)
        proxy_rng = np.random.default_rng(rng.integers(2**63))
        up_bytes = 0.0
        skipped = 0
        for epoch in range(c.epochs):
            gram = V.T @ V
            proxy = Shuffler(c.shuffle_threshold, proxy_rng)
            total = np.zeros_like(V)
            senders = 0
            for start in range(0, n_users, c.batch_size):
                users = np.arange(start, min(n_users, start + c.batch_size))
                hist = train[users]
                X = client.user_vectors(V, hist, c.alpha, c.regularization, gram)
                if c.exact:
                    total += client.gradient_sum(X, V, hist, c.alpha)
                    senders += len(users)
                    continue
                if ledger is not None:
                    ok = ledger.can_spend(users, c.k * c.epsilon)
                    ledger.spend(users[ok], c.k * c.epsilon)
                    users, X, hist = users[ok], X[ok], hist[ok]
                if not len(users):
                    continue
                items, factors = client.sample_slots(len(users), c.k, n_items, c.factors, rng)
                x = np.clip(client.gradient_entries(X, V, hist, items, factors, c.alpha),
                            -c.clip, c.clip) / c.clip
                if isinstance(mech, BinaryMechanism):
                    bits = mech.sample_bits(x.ravel(), rng).reshape(x.shape)
                    proxy.submit_batch(items, factors, bits.astype(np.uint8), users)
                else:
                    y = x if mech is None else mech.sample(x.ravel(), rng).reshape(x.shape)
                    proxy.submit_batch(items, factors, None, users, values=y)
                reported[users] += 1
                senders += len(users)
            if c.exact:
                G = total / max(1, senders)
            elif proxy.held < c.shuffle_threshold:
                skipped += 1
                log.info("epoch %d: %d reports below the proxy threshold; no update",
                         epoch, proxy.held)
                continue
            else:
                if epoch == 0:
                    up_bytes = self._client_message_bytes(n_items, mech)
                batch = proxy.flush()
                if isinstance(batch, ShuffledReports):
                    assert isinstance(mech, BinaryMechanism)
                    y = mech.estimate(batch.bits)
                else:
                    y = batch.values.astype(np.float64)
                G = c.clip * server.estimate_mean_gradient(
                    batch.items, batch.factors, y, n_items, c.factors)
            V = server.descend(V, G, c.lr, c.regularization, c.server_steps)
            self.V = V
            self._history = train
            if self.on_epoch is not None:
                self.on_epoch(epoch, self)
        self.V = V
        self._history = train
        self._reporting_epochs = reported
        self._diag = {
            "upload_bytes_per_client_epoch": up_bytes,
            "paper_upload_bytes_per_client_epoch": 4 * c.k,
            "download_bytes_per_client_epoch": ItemMatrix.serialized_size(n_items, c.factors),
            "paper_download_floats_per_client_epoch": n_items * c.factors,
            "epochs_without_update": skipped,
            "clients_dropped_by_ledger": int(np.sum(reported < c.epochs)) if not c.exact else 0,
        }
        return self

    def _client_message_bytes(self, n_items: int, mech: object) -> float:
        c = self.config
        zeros = (np.zeros(c.k, np.int32), np.zeros(c.k, np.uint8))
        if isinstance(mech, BinaryMechanism):
            return float(len(GradientReports(0, *zeros, np.zeros(c.k, np.uint8)).to_bytes()))
        return float(len(ValueReports(0, *zeros, np.zeros(c.k, np.float32)).to_bytes()))

    def score(self, users: np.ndarray) -> np.ndarray:
        if self.V is None or self._history is None:
            raise DprecError(f"{self.name}: call fit before score")
        X = client.user_vectors(self.V, self._history[users], self.config.alpha,
                                self.config.regularization)
        return X @ self.V.T

    def diagnostics(self) -> dict[str, object]:
        return dict(self._diag)

    def privacy_report(self) -> PrivacyReport | None:
        c = self.config
        if c.exact or c.mechanism == "none":
            return None
        mech = self._mechanism()
        assert mech is not None
        local = local_guarantee(c.epsilon, c.k, c.epochs)
        true = shuffled_guarantee(c.epsilon, max(2, self._n_users), c.k, c.epochs, c.delta)
        claimed = Guarantee(c.k * c.epsilon, level="user", sides="two", model="local",
                            mechanism=f"k={c.k} reports of eps={c.epsilon}",
                            notes=("as published: k x eps; the epochs are left out",))
        return PrivacyReport(
            system=self.name,
            threat_model=THREAT_MODEL,
            true=true,
            claimed=claimed,
            mechanisms=(mech.event(),),
            extra={"local": {
                "epsilon_per_report": c.epsilon,
                "epsilon_per_round": c.k * c.epsilon,
                "epsilon_user": local.epsilon,
            }},
        )

