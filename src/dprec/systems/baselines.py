"""Non-private reference points: Random, Popularity and EASE (Steck, WWW 2019)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.data.synthetic import require_memory
from dprec.iteration import IterationHook
from dprec.models.ease import EASEConfig, ease_weights
from dprec.systems.base import NotFittedError, Ranker, check_history
from dprec.systems.spec import NoConfig, SystemSpec

__all__ = ["SPECS", "EASE", "Popularity", "RandomScorer"]


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


class EASE(Ranker):
    """EASE (:mod:`dprec.models.ease`): scores = history @ B, B in closed form from the
    binarised training matrix (not private). A user unseen at training is scored from their
    history alone."""

    name = "ease"

    def __init__(self, config: EASEConfig) -> None:
        self.config = config

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> EASE:
        n = train.shape[1]
        require_memory(3 * 8 * n * n, f"ease on {n:,} items (three {n:,}^2 float64 arrays)",
                       "use item-kNN or mf-np for a catalogue this large")
        self._b = ease_weights(train, self.config.regularization)
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if not hasattr(self, "_b"):
            raise NotFittedError("ease: call fit before score")
        history, items, users = check_history(history, self._b.shape[0], items, users)
        x = history.astype(bool).astype(np.float64)
        scores = np.asarray(x @ self._b)
        return scores if items is None else np.take_along_axis(scores, items, axis=1)


SPECS: list[SystemSpec] = [
    SystemSpec("random", NoConfig, lambda name, cfg: RandomScorer(), "ranking", False,
               "every item the same score (ties broken at random)"),
    SystemSpec("popularity", NoConfig, lambda name, cfg: Popularity(), "ranking", False,
               "number of training users per item (not private)"),
    SystemSpec("ease", EASEConfig, lambda name, cfg: EASE(cfg), "ranking", False,
               "EASE (Steck, WWW 2019): closed-form item-item model, one L2 penalty "
               "(not private)", {},
               {"regularization": (10.0, 30.0, 100.0, 200.0, 300.0, 500.0, 1000.0, 3000.0)}),
]
"""random, popularity and ease (the registry reads this list)."""
