"""DPLCF and its item-CF baselines as one simulated protocol (SYSTEMS.md §1).

Clients obfuscate once (client.obfuscate), the server estimates similarities and publishes
neighbour lists (server.*), clients score with their true history (client.local_scores).
The variants differ only in the flip mechanism and the server's estimator:

| system     | flip        | estimator |
|------------|-------------|-----------|
| lcf-ub     | none        | naive (exact Jaccard on true data) |
| lcf-sp/ap  | sym / asym  | naive (Jaccard on obfuscated data) |
| dplcf-sp/ap| sym / asym  | unbiased (A^-1 m) |
| dplcf-oue  | OUE         | unbiased |
| dplcf-eb   | sym         | eb (empirical-Bayes shrinkage of n_hat11) |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError, check_positive
from dprec.mechanisms.bitflip import BitFlip
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.systems.base import Recommender
from dprec.systems.dplcf import client, server
from dprec.systems.dplcf.messages import NeighbourLists

Flip = Literal["none", "symmetric", "asymmetric", "oue"]

THREAT_MODEL = (
    "untrusted server sees each user's obfuscated N-bit vector once; neighbour lists are "
    "user-independent; scoring happens on the device with the true history"
)


@dataclass(frozen=True)
class LocalItemCFConfig:
    """Configuration of a (possibly private) local item-CF system."""

    flip: Flip = "symmetric"
    """Bit-flip mechanism on the client: none, symmetric (SP), asymmetric (AP), oue."""
    estimator: server.Estimator = "unbiased"
    """Server estimator of pair counts: naive, unbiased, eb."""
    epsilon: float = 1.0
    """Per-bit epsilon of the flip mechanism (ignored for flip = none)."""
    neighbours: int = 20
    """K, the neighbour-list length (paper: 20 for MovieLens, 10 for AppUsage)."""
    neighbourhood: Literal["item", "user"] = "item"
    """item = the item's global top-K (Eq. 12); user = top-K among the user's own items."""
    batch_size: int = 4096
    """Clients simulated per vectorised batch."""

    def __post_init__(self) -> None:
        if self.flip not in ("none", "symmetric", "asymmetric", "oue"):
            raise DprecError(f"flip must be none, symmetric, asymmetric or oue, got {self.flip!r}")
        if self.estimator not in ("naive", "unbiased", "eb"):
            raise DprecError(f"estimator must be naive, unbiased or eb, got {self.estimator!r}")
        if self.neighbourhood not in ("item", "user"):
            raise DprecError(f"neighbourhood must be item or user, got {self.neighbourhood!r}")
        if self.flip != "none":
            check_positive("epsilon", self.epsilon)
        if self.neighbours < 1:
            raise DprecError(f"neighbours must be >= 1, got {self.neighbours}")

    def mechanism(self) -> BitFlip | None:
        if self.flip == "none":
            return None
        return getattr(BitFlip, self.flip)(self.epsilon)


class LocalItemCF(Recommender):
    """Item-CF where the server only sees (obfuscated) bit vectors and clients score locally."""

    def __init__(self, name: str, config: LocalItemCFConfig) -> None:
        self.name = name
        self.config = config
        self.mechanism = config.mechanism()
        self._history: sp.csr_matrix | None = None
        self._broadcast: NeighbourLists | None = None
        self._diag: dict[str, object] = {}

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator) -> LocalItemCF:
        cfg = self.config
        n_items = train.shape[1]
        if cfg.neighbours >= n_items:
            raise DprecError(
                f"neighbours must be < number of items ({n_items}), got {cfg.neighbours}")
        counts = server.PairCounts(n_items)
        upload = 0
        for start in range(0, train.shape[0], cfg.batch_size):
            msg = client.obfuscate(train[start:start + cfg.batch_size], self.mechanism, rng)
            upload += msg.packed.nbytes
            counts.add(msg)
        est = server.estimate_similarity(counts, self.mechanism, cfg.estimator)
        self._broadcast = server.publish(est.sim, cfg.neighbours, cfg.neighbourhood == "user")
        self._history = train
        self._diag = {
            "clipped_pairs": est.clipped,
            "clipped_fraction": est.clipped / float(n_items * n_items),
            "upload_bytes_per_user": upload / max(1, train.shape[0]),
            "download_bytes": self._broadcast.nbytes,
        }
        if est.shrinkage_phi is not None:
            self._diag["shrinkage_phi"] = est.shrinkage_phi
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        if self._history is None or self._broadcast is None:
            raise DprecError(f"{self.name}: call fit before score")
        return client.local_scores(
            self._history[users], self._broadcast, self.config.neighbourhood,
            self.config.neighbours,
        )

    @property
    def broadcast(self) -> NeighbourLists | None:
        return self._broadcast

    def diagnostics(self) -> dict[str, object]:
        return dict(self._diag)

    def privacy_report(self) -> PrivacyReport | None:
        if self.mechanism is None:
            return None
        mech = self.mechanism
        true = mech.guarantee()
        claimed = Guarantee(self.config.epsilon, level="event", sides="two", model="local",
                            mechanism=mech.event()["name"] if hasattr(mech, "event") else "",
                            notes=("as published: eps-LDP per interaction bit",))
        n_items = self._history.shape[1] if self._history is not None else None
        extra: dict[str, object] = {}
        if n_items is not None:
            extra["user_level"] = mech.user_guarantee(n_items).to_json()
        return PrivacyReport(
            system=self.name,
            threat_model=THREAT_MODEL,
            true=true,
            claimed=claimed,
            mechanisms=(mech.event(),),
            extra=extra,
        )
