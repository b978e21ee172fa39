"""The interfaces every recommender in dprec implements: a task, fit, then score or predict.

- :class:`Ranker` (task "ranking"): the caller passes each user's history, which the client
  holds, and optionally the candidate items to score (``implicit``'s
  ``recommend(user_items=...)`` shape). Users unseen at training are scored from their
  history where the model allows it (a fold-in), else :class:`UnknownUserError`.
- :class:`RatingPredictor` (task "rating"): ``predict(users, items)`` for explicit ratings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError, NotFittedError
from dprec.iteration import IterationHook
from dprec.privacy.guarantee import PrivacyReport

if TYPE_CHECKING:
    from dprec.data.features import SideFeatures

__all__ = [
    "NotFittedError", "Ranker", "RatingPredictor", "Recommender", "Task",
    "UnknownUserError", "check_history", "gather",
]

Task = Literal["ranking", "rating"]


class UnknownUserError(DprecError):
    """A user the model was not trained on, for a model that cannot fold new users in."""


class Recommender(ABC):
    """Common part: a name, a frozen ``config`` dataclass recorded with every result, ``fit``."""

    name: str = "recommender"
    task: ClassVar[Task]
    config: object = None
    uses_ratings: ClassVar[bool] = False
    """fit/score receive explicit ratings, not positives only."""
    uses_side_features: ClassVar[bool] = False
    """The model needs the dataset's user and item side features: the experiment calls
    :meth:`set_side_features` before ``fit``."""
    uses_rating_scale: ClassVar[bool] = False
    """The model needs the dataset's declared (public) rating scale: the experiment calls
    :meth:`set_rating_scale` before ``fit``."""
    networked: ClassVar[bool] = False
    """Its protocol's messages can travel between parties: its ``transport`` attribute (None:
    in process) takes the HTTP services' transport or a sharded backend
    (:func:`dprec.evaluation.run_system.run_system`); False: it runs in process only."""

    @abstractmethod
    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> Recommender:
        """Learn from ``train`` (user x item CSR); all randomness from ``rng``.

        ``on_iteration(t, state)`` is called once after each epoch or round t of an
        iterative fit (:class:`~dprec.iteration.IterationHook`; learning curves).
        """

    def set_side_features(self, features: SideFeatures) -> None:
        """Hand the model the dataset's side features (called before ``fit``).

        Only models with ``uses_side_features = True`` accept them.
        """
        raise DprecError(f"{self.name} does not use side features "
                         "(uses_side_features is False)")

    def set_rating_scale(self, scale: tuple[float, float] | None) -> None:
        """Hand the model the dataset's declared rating scale, None if it declares none
        (called before ``fit``). Only models with ``uses_rating_scale = True`` accept it."""
        raise DprecError(f"{self.name} does not use a rating scale "
                         "(uses_rating_scale is False)")

    @property
    def uses_timestamps(self) -> bool:
        """The model, as configured, needs the training interactions' times: the experiment
        calls :meth:`set_timestamps` before ``fit``."""
        return False

    def set_timestamps(self, timestamps: sp.csr_matrix) -> None:
        """Hand the model each training interaction's time, a CSR of the training matrix's
        shape (called before ``fit``). Only models with ``uses_timestamps`` accept them."""
        raise DprecError(f"{self.name} does not use timestamps (uses_timestamps is False)")

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


class Ranker(Recommender):
    """Ranks items for a user given the user's (client-held) history.

    ``supports_unknown_users``: whether rows with ``users[r] < 0`` (or ``users=None``) are
    scored by a fold-in from the history alone.
    """

    task: ClassVar[Task] = "ranking"
    supports_unknown_users: ClassVar[bool] = True

    @abstractmethod
    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        """Scores, larger is better.

        ``history``: (b, n_items) CSR, row r = the history of the user being scored.
        ``items``: None for every item, (b, n_items) out; or (b, c) candidate item indices,
        (b, c) out, computed without a sweep over all items. ``users``: (b,) training-time
        user indices, -1 for a user unseen at training; None = all unseen.
        """


class RatingPredictor(Recommender):
    """Predicts explicit ratings of (user, item) pairs."""

    task: ClassVar[Task] = "rating"

    @abstractmethod
    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Predicted ratings of the pairs ``(users[j], items[j])``, shape (len(users),)."""


def check_history(history: sp.csr_matrix, n_items: int, items: np.ndarray | None,
                  users: np.ndarray | None) -> tuple[sp.csr_matrix, np.ndarray | None,
                                                     np.ndarray | None]:
    """Validate the arguments of :meth:`Ranker.score`; returns them canonicalised."""
    if not sp.issparse(history):
        raise DprecError(f"history must be a scipy.sparse matrix, got {type(history).__name__}")
    history = sp.csr_matrix(history)
    if history.shape[1] != n_items:
        raise DprecError(f"history must have {n_items} item columns (the model's), "
                         f"got {history.shape[1]}")
    b = history.shape[0]
    if items is not None:
        items = np.asarray(items)
        if items.ndim != 2 or items.shape[0] != b:
            raise DprecError(f"items must be a ({b}, c) array of candidate indices, "
                             f"got shape {items.shape}")
        if items.size and not np.issubdtype(items.dtype, np.integer):
            raise DprecError(f"items must hold integer indices, got dtype {items.dtype}")
        if items.size and (items.min() < 0 or items.max() >= n_items):
            raise DprecError(f"items must be in [0, {n_items}), got "
                             f"[{items.min()}, {items.max()}]")
        items = items.astype(np.int64, copy=False)
    if users is not None:
        users = np.asarray(users)
        if users.shape != (b,):
            raise DprecError(f"users must have shape ({b},), got {users.shape}")
        if users.size and not np.issubdtype(users.dtype, np.integer):
            raise DprecError(f"users must hold integer indices, got dtype {users.dtype}")
        users = users.astype(np.int64, copy=False)
    return history, items, users


def gather(scores: np.ndarray, items: np.ndarray | None) -> np.ndarray:
    """Row-wise ``scores[r, items[r]]`` (all of ``scores`` when ``items`` is None)."""
    if items is None:
        return scores
    return np.take_along_axis(scores, items, axis=1)
