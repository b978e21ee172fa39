"""The generator's oracle as a ranker: the ceiling line of a synthetic data set (issue 33 §2).

:class:`OracleRanker` scores item i for user u with the generator's own log-weight
log w_i + x_u . y_i (:class:`dprec.data.truth.SyntheticTruth`, drawn by
:func:`dprec.data.registry.dataset_truth` from the data set's own stream), so it runs through
the one evaluator like any system and its metrics sit beside theirs. It sees no training
data and has no privacy report: it is a reference, not a recommender. Only ``synthetic-*``
data sets (constant popularity) are scored: the ``synth-*`` generator's popularity drifts in
time, and its oracle needs each held-out interaction's time, which a ranker is not handed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dprec.data.registry import dataset_truth, split_filters
from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.systems.base import Ranker, UnknownUserError, check_history, gather

__all__ = ["OracleConfig", "OracleRanker"]


@dataclass(frozen=True)
class OracleConfig:
    """Which generator scores the items."""

    dataset: str
    """The synthetic data set's name, as ``load_dataset`` takes it (``synthetic-*``)."""
    data_seed: int = 0
    """The seed the data set was drawn with (``load_dataset(name, seed=...)``)."""


class OracleRanker(Ranker):
    """The generator's scores of every item for the data set's users (no fold-in: a user
    the generator did not draw has no oracle score)."""

    name = "oracle"
    supports_unknown_users = False

    def __init__(self, config: OracleConfig, user_ids: np.ndarray | None = None,
                 item_ids: np.ndarray | None = None) -> None:
        """``user_ids`` / ``item_ids``: the data set's raw ids of its internal indices
        (``Dataset.user_ids`` / ``item_ids``; None: the indices are the raw ids)."""
        base = split_filters(config.dataset)[0].lower()
        if not base.startswith("synthetic-"):
            raise DprecError(f"the oracle scores synthetic-<users>x<items> data sets only, got "
                             f"{config.dataset!r} (synth-* drifts in time: its oracle needs the "
                             "held-out times, which a ranker is not given)")
        self.config = config
        self.truth = dataset_truth(config.dataset, seed=config.data_seed)
        self._users = (np.arange(self.truth.n_users) if user_ids is None
                       else np.asarray(user_ids, np.int64))
        self._items = (np.arange(self.truth.n_items) if item_ids is None
                       else np.asarray(item_ids, np.int64))
        for what, ids, n in (("user", self._users, self.truth.n_users),
                             ("item", self._items, self.truth.n_items)):
            if ids.ndim != 1 or (len(ids) and (ids.min() < 0 or ids.max() >= n)):
                raise DprecError(f"{what}_ids must be raw ids in [0, {n}) of "
                                 f"{config.dataset}'s generator")

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> OracleRanker:
        """Nothing to learn; refuses a training matrix of another shape than the data set's."""
        want = (len(self._users), len(self._items))
        if train.shape != want:
            raise DprecError(f"the oracle of {self.config.dataset} scores a {want} matrix, "
                             f"got training data of shape {train.shape}")
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        """log w_i + x_u . y_i of every item (or of ``items``) for ``users``."""
        history, items, users = check_history(history, len(self._items), items, users)
        if users is None or (len(users) and (users.min() < 0 or users.max() >= len(self._users))):
            raise UnknownUserError("the oracle scores the data set's own users only "
                                   f"(indices in [0, {len(self._users)}))")
        scores = self.truth.scores(self._users[users])[:, self._items]
        return gather(scores, items)
