"""A centrally trained model on data the clients obfuscated (DPLCF's BPR-MF baseline).

DP is added by wrapping: the clients flip their bits exactly as in DPLCF, the server trains
any non-private model on the obfuscated matrix, and scores come from the server's model.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from dprec.mechanisms.bitflip import BitFlip
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.systems.base import Recommender


class _Model(Protocol):
    config: object

    def fit(self, r: sp.csr_matrix, rng: np.random.Generator, show_progress: bool = ...) -> object:
        ...

    def score(self, users: np.ndarray) -> np.ndarray:
        ...


class TrainedOnObfuscated(Recommender):
    """Train ``model`` on the bit-flipped matrix (``mechanism=None``: on true data)."""

    def __init__(self, name: str, model: _Model, mechanism: BitFlip | None,
                 epsilon: float | None = None, batch_size: int = 4096) -> None:
        self.name = name
        self.model = model
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.batch_size = batch_size

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator) -> TrainedOnObfuscated:
        self._n_items = train.shape[1]
        if self.mechanism is None:
            data = train
        else:
            data = sp.vstack([
                sp.csr_matrix(self.mechanism.obfuscate_dense(
                    train[s:s + self.batch_size], rng, dtype=np.float32))
                for s in range(0, train.shape[0], self.batch_size)
            ]).tocsr()
        self.model.fit(data, rng)
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.score(users), dtype=np.float64)

    def parameters(self) -> dict[str, object]:
        out: dict[str, object] = asdict(self.model.config)
        if self.mechanism is not None:
            out["mechanism"] = self.mechanism.event()
            out["epsilon"] = self.epsilon
        return out

    def privacy_report(self) -> PrivacyReport | None:
        if self.mechanism is None:
            return None
        mech = self.mechanism
        return PrivacyReport(
            system=self.name,
            threat_model="untrusted server trains on each user's obfuscated bit vector",
            true=mech.guarantee(),
            claimed=Guarantee(float(self.epsilon or mech.epsilon), mechanism="bit flip"),
            mechanisms=(mech.event(),),
            extra={"user_level": mech.user_guarantee(self._n_items).to_json()},
        )
