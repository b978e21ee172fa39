"""The one face of the implicit-feedback factor models: ImplicitALS, BPR-MF and GMF.

Each holds a frozen config, the loss history of its last fit and learned factors, and ranks
by the inner product ``score(users) = user_factors[users] @ item_factors.T`` (Koren, Bell
and Volinsky 2009, Eq. 1), which :class:`dprec.systems.central.TrainedOnObfuscated` also
reads. A model implements only :meth:`FactorModel._fit`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self, TypeVar

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.models.configured import Configured

__all__ = ["FactorModel", "check_users"]

C = TypeVar("C")


def check_users(users: np.ndarray, n_users: int) -> np.ndarray:
    """``users`` as int64 row indices, each in ``[0, n_users)``; DprecError otherwise."""
    users = np.asarray(users)
    if users.ndim != 1 or (users.size and not np.issubdtype(users.dtype, np.integer)):
        raise DprecError(f"users must be a 1-d array of integer indices, got dtype "
                         f"{users.dtype} and shape {users.shape}")
    if users.size and (users.min() < 0 or users.max() >= n_users):
        raise DprecError(f"users must be in [0, {n_users}), got values in "
                         f"[{users.min()}, {users.max()}]")
    return users.astype(np.int64, copy=False)


class FactorModel(Configured[C]):
    """Fit and score shared by the implicit factor models (module docstring).

    A model declares its config class and label with the class, e.g.
    ``class BPRMF(FactorModel[BPRConfig], config=BPRConfig, label="BPR")``, and its learned
    arrays as class attributes that are None until :meth:`_fit` sets them.
    """

    label: ClassVar[str]
    """The model's short name, shown on its progress bar."""
    user_factors: Any
    item_factors: Any

    def __init_subclass__(cls, *, label: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.label = label

    def __init__(self, config: C | None = None) -> None:
        super().__init__(config)
        self.loss_history: list[float] = []
        """The objective after each pass of the last fit (what it holds: the model's
        docstring; ALS and BPR fill it when fitted with ``track_loss=True``)."""

    def fit(
        self,
        R: sp.spmatrix | sp.sparray,
        rng: np.random.Generator,
        show_progress: bool = False,
        *,
        track_loss: bool = False,
        on_iteration: IterationHook | None = None,
    ) -> Self:
        """Fit on a (users x items) sparse matrix; every draw comes from ``rng``.

        ``on_iteration(t, self)`` after pass t (0-based: an ALS sweep, an epoch); the model
        scores inside it. ``track_loss`` records :attr:`loss_history` without changing the
        factors; ``show_progress`` shows a progress bar.
        """
        self.loss_history = []
        self._fit(R, rng, self.label if show_progress else None, track_loss, on_iteration)
        return self

    def _fit(self, R: sp.spmatrix | sp.sparray, rng: np.random.Generator, progress: str | None,
             track_loss: bool, on_iteration: IterationHook | None) -> None:
        """Learn the factors (``progress``: the bar's label, None for no bar)."""
        raise NotImplementedError

    def score(self, users: np.ndarray) -> np.ndarray:
        """(len(users), N) scores ``user_factors[users] @ item_factors.T``."""
        U = self.user_factors
        return U[check_users(users, U.shape[0])] @ self.item_factors.T
