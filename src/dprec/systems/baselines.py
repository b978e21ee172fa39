"""Non-learning reference points: Random and Popularity."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.iteration import IterationHook
from dprec.systems.base import NotFittedError, Ranker, check_history
from dprec.systems.spec import NoConfig, SystemSpec

__all__ = ["SPECS", "Popularity", "RandomScorer"]


class RandomScorer(Ranker):
    """Every item gets the same score; the evaluation's random tie-breaking ranks uniformly.

    Expected HR@K on the sampled protocol with 99 negatives: K / 100.
    """

    name = "random"

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> RandomScorer:
        self._n_items = train.shape[1]
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if not hasattr(self, "_n_items"):
            raise NotFittedError("random: call fit before score")
        history, items, users = check_history(history, self._n_items, items, users)
        shape = (history.shape[0], self._n_items) if items is None else items.shape
        return np.zeros(shape)


class Popularity(Ranker):
    """Score = number of training users who interacted with the item (not private)."""

    name = "popularity"

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> Popularity:
        self._pop = np.asarray(train.sum(axis=0), dtype=np.float64).ravel()
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if not hasattr(self, "_pop"):
            raise NotFittedError("popularity: call fit before score")
        history, items, users = check_history(history, len(self._pop), items, users)
        if items is not None:
            return self._pop[items]
        return np.broadcast_to(self._pop, (history.shape[0], len(self._pop))).copy()


SPECS: list[SystemSpec] = [
    SystemSpec("random", NoConfig, lambda name, cfg: RandomScorer(), "ranking", False,
               "every item the same score (ties broken at random)"),
    SystemSpec("popularity", NoConfig, lambda name, cfg: Popularity(), "ranking", False,
               "number of training users per item (not private)"),
]
"""random and popularity (the registry reads this list)."""
