"""The ground truth of a synthetic data set: the generator's own scores (the oracle).

Both generators draw a user's items with probability ∝ w_i(t) exp(a_ui) (Plackett-Luce,
without replacement), a_ui = x_u . y_i the low-rank affinity and w_i(t) the item's popularity
at time t: constant for ``synthetic-*`` (:mod:`dprec.data.synthetic`), and for ``synth-*``
(:mod:`dprec.data.synthetic_drift`) w_i(t) = q_i (1 + boost e^{-(t - r_i)/decay}) once the
item is released at r_i, 0 before. The oracle score of item i for user u at time t is
log w_i(t) + a_ui (``-inf`` before release): the log-weight with which the generator itself
chooses u's items (issue 33 §2: the ceiling line). For a leave-one-out split on ``synth-*``,
pass ``at`` = the held-out interactions' times. It scores *which* items a user takes, not
their order: on ``synth-*`` the popular-first order within a user's visit makes the latest
item lean to the less popular of the user's items, which these scores do not model, so it
is a strong reference rather than the best possible ranking of the latest item.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprec.errors import DataError

__all__ = ["SyntheticTruth"]


@dataclass(frozen=True)
class SyntheticTruth:
    """The generator's parameters; indices are the data set's internal user and item
    indices (its raw ids, for an unfiltered synthetic data set).

    ``release`` holds each item's release time in seconds (``-inf`` for the back catalogue,
    released before the data begin); ``boost`` and ``decay`` (seconds) shape the popularity
    after release (``boost`` 0: constant popularity)."""

    log_popularity: np.ndarray
    user_factors: np.ndarray
    item_factors: np.ndarray
    release: np.ndarray
    boost: float = 0.0
    decay: float = 1.0

    @property
    def n_users(self) -> int:
        return int(self.user_factors.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.item_factors.shape[0])

    def scores(self, users: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
        """(len(users), n_items) float64 oracle scores log w_i(t_u) + a_ui; ``at`` gives each
        user's time t_u in seconds (None: long after every release, where w_i = q_i for the
        released items). Batch ``users`` for large catalogues (8 bytes per score)."""
        users = np.asarray(users, np.int64)
        if users.ndim != 1 or (len(users) and (users.min() < 0 or users.max() >= self.n_users)):
            raise DataError(f"users must be a 1-d array of indices in [0, {self.n_users})")
        s = (self.user_factors[users].astype(np.float64)
             @ self.item_factors.T.astype(np.float64)) + self.log_popularity
        if at is None:
            return s
        t = np.asarray(at, np.float64)
        if t.shape != users.shape:
            raise DataError(f"at must give one time per user: {t.shape} != {users.shape}")
        age = t[:, None] - self.release[None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            lift = np.log1p(self.boost * np.exp(-np.maximum(age, 0.0) / self.decay))
        lift = np.where(np.isfinite(self.release)[None, :], lift, 0.0)
        return np.where(age >= 0, s + lift, -np.inf)
