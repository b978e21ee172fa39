"""Non-learning reference points: Random and Popularity."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.systems.base import Recommender


class RandomScorer(Recommender):
    """Every item gets the same score; the evaluation's random tie-breaking ranks uniformly.

    Expected HR@K on the sampled protocol with 99 negatives: K / 100.
    """

    name = "random"

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator) -> RandomScorer:
        self._n_items = train.shape[1]
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        return np.zeros((len(users), self._n_items))


class Popularity(Recommender):
    """Score = number of training users who interacted with the item (not private)."""

    name = "popularity"

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator) -> Popularity:
        self._pop = np.asarray(train.sum(axis=0), dtype=np.float64).ravel()
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        if not hasattr(self, "_pop"):
            raise DprecError("popularity: call fit before score")
        return np.broadcast_to(self._pop, (len(users), len(self._pop))).copy()
