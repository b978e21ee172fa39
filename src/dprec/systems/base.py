"""The interface every recommender in dprec implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, is_dataclass

import numpy as np
import scipy.sparse as sp

from dprec.privacy.guarantee import PrivacyReport


class Recommender(ABC):
    """Fit on a binary user x item training matrix, then score items for users.

    ``score`` returns an (len(users), n_items) array; larger is better. Subclasses keep a
    frozen ``config`` dataclass, recorded with every result.
    """

    name: str = "recommender"
    config: object = None

    @abstractmethod
    def fit(self, train: sp.csr_matrix, rng: np.random.Generator) -> Recommender:
        """Learn from ``train`` (binary CSR); all randomness from ``rng``."""

    @abstractmethod
    def score(self, users: np.ndarray) -> np.ndarray:
        """Scores of every item for ``users``."""

    def privacy_report(self) -> PrivacyReport | None:
        """What the untrusted party can learn; None for non-private systems."""
        return None

    def parameters(self) -> dict[str, object]:
        """The configuration, for the results file."""
        if self.config is not None and is_dataclass(self.config):
            return asdict(self.config)
        return {}

    def diagnostics(self) -> dict[str, object]:
        """Counters measured during fit (e.g. how often estimates were clipped)."""
        return {}
