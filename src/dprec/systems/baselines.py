"""Non-private reference points: Random, Popularity, EASE (Steck, WWW 2019) and item-kNN
(cosine, Sarwar et al., WWW 2001)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.data.synthetic import require_memory
from dprec.iteration import IterationHook
from dprec.models.ease import EASEConfig, ease_weights
from dprec.models.item_cosine import ItemKNNConfig, cosine_neighbours
from dprec.models.itemknn import score_item_candidates, score_item_neighbourhood
from dprec.systems.base import NotFittedError, Ranker, check_history
from dprec.systems.spec import NoConfig, SystemSpec

__all__ = ["SPECS", "EASE", "ItemKNN", "Popularity", "RandomScorer"]


class RandomScorer(Ranker):
    """Scores uniform on [0, 1), independent across users and items, fixed by the fit's seed.

    Score(h, i) = splitmix64(key + h * n_items + i) / 2^64, where ``h`` hashes the user's history
    row (the wrapped sum of its items' hashes) and ``key`` is drawn from the fit's generator: a
    rerun with the same seed scores alike, known and unknown users alike, in any batching, and
    every ranking protocol (full or sampled, whatever its tie rule) ranks uniformly at random:
    expected HR@K is K / (candidates).
    """

    name = "random"

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> RandomScorer:
        self._n_items = train.shape[1]
        self._key = np.uint64(rng.integers(0, 2**63, dtype=np.int64))
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if not hasattr(self, "_n_items"):
            raise NotFittedError("random: call fit before score")
        history, items, users = check_history(history, self._n_items, items, users)
        users = _row_keys(history)
        if items is None:
            items = np.broadcast_to(np.arange(self._n_items, dtype=np.int64),
                                    (history.shape[0], self._n_items))
        cell = (users.astype(np.uint64)[:, None] * np.uint64(self._n_items)
                + items.astype(np.uint64) + self._key)
        return (_splitmix64(cell) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea, Flood, OOPSLA 2014), elementwise, wrapping mod 2^64."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _row_keys(history: sp.csr_matrix) -> np.ndarray:
    """One key per history row: the wrapped sum of its items' hashes (order-free, batch-free)."""
    hashed = _splitmix64(history.indices.astype(np.uint64))
    sums = np.zeros(history.shape[0], np.uint64)
    rows = np.repeat(np.arange(history.shape[0]), np.diff(history.indptr))
    np.add.at(sums, rows, hashed)
    return sums


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


class ItemKNN(Ranker):
    """Item-kNN (:mod:`dprec.models.item_cosine`): each item's top-k neighbours by shrunk
    cosine on the binarised training matrix; score(u, i) = sum of sim(i, j) over u's items j
    among i's neighbours (not private). A user unseen at training is scored from their
    history alone."""

    name = "item-knn"

    def __init__(self, config: ItemKNNConfig) -> None:
        self.config = config

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> ItemKNN:
        self._idx, self._sim = cosine_neighbours(train, self.config.neighbours,
                                                 self.config.shrinkage)
        self._n_items = train.shape[1]
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if not hasattr(self, "_idx"):
            raise NotFittedError("item-knn: call fit before score")
        history, items, users = check_history(history, self._n_items, items, users)
        x = history.astype(bool).astype(np.float64)
        if items is None:
            return score_item_neighbourhood(x, self._idx, self._sim)
        return score_item_candidates(x, self._idx, self._sim, items)


SPECS: list[SystemSpec] = [
    SystemSpec("random", NoConfig, lambda name, cfg: RandomScorer(), "ranking", False,
               "every item the same score (ties broken at random)"),
    SystemSpec("popularity", NoConfig, lambda name, cfg: Popularity(), "ranking", False,
               "number of training users per item (not private)"),
    SystemSpec("ease", EASEConfig, lambda name, cfg: EASE(cfg), "ranking", False,
               "EASE (Steck, WWW 2019): closed-form item-item model, one L2 penalty "
               "(not private)", {},
               {"regularization": (10.0, 30.0, 100.0, 200.0, 300.0, 500.0, 1000.0, 3000.0)}),
    SystemSpec("item-knn", ItemKNNConfig, lambda name, cfg: ItemKNN(cfg), "ranking", False,
               "item-kNN (Sarwar et al., WWW 2001): shrunk cosine on the binarised matrix, "
               "each item's top-k neighbours, score = sum of sims to the user's items "
               "(not private)", {},
               {"neighbours": (10, 20, 50, 100, 200, 400), "shrinkage": (0.0, 10.0, 50.0)}),
]
"""random, popularity, ease and item-knn (the registry reads this list)."""
