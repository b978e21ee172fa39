"""Non-private rating baselines: the global mean and damped user/item biases."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.models import pairs
from dprec.systems.base import NotFittedError, RatingPredictor
from dprec.systems.spec import NoConfig, SystemSpec

__all__ = ["SPECS", "BiasBaseline", "BiasConfig", "GlobalMean", "ModelPredictor",
           "check_pairs"]


@dataclass(frozen=True)
class BiasConfig:
    """Hyper-parameters of :class:`BiasBaseline` (validated at construction)."""

    damping: float = 5.0
    """Pseudo-count beta in b = sum(residuals) / (n + beta): shrinks the biases of rarely
    rated items and users toward 0 (finite, >= 0; 0 gives plain mean residuals)."""

    def __post_init__(self) -> None:
        d = self.damping
        if isinstance(d, bool) or not isinstance(d, int | float) or not (
                math.isfinite(d) and d >= 0):
            raise DprecError(f"damping must be a finite number >= 0, got {d!r}")


def _check_train(name: str, train: sp.csr_matrix) -> sp.csr_matrix:
    if not sp.issparse(train):
        raise DprecError(f"{name}: train must be a scipy.sparse matrix, "
                         f"got {type(train).__name__}")
    train = sp.csr_matrix(train)
    if train.nnz == 0:
        raise DprecError(f"{name}: train must hold at least one rating, got 0")
    if not np.all(np.isfinite(train.data)):
        raise DprecError(f"{name}: train ratings contain NaN or infinite values")
    return train


def check_pairs(name: str, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """Validate the arguments of :meth:`RatingPredictor.predict`; int64 arrays out."""
    return pairs.check_pairs(users, items, f"{name}.predict: ")


def _lookup(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]``, 0 where ``index`` is outside ``[0, len(values))``."""
    known = (index >= 0) & (index < len(values))
    out = np.zeros(len(index), np.float64)
    out[known] = values[index[known]]
    return out


class GlobalMean(RatingPredictor):
    """Every pair is predicted as mu, the mean training rating."""

    name = "global-mean"

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> GlobalMean:
        train = _check_train(self.name, train)
        self.mu_ = float(np.mean(train.data, dtype=np.float64))
        return self

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        if not hasattr(self, "mu_"):
            raise NotFittedError(f"{self.name}: call fit before predict")
        users, items = check_pairs(self.name, users, items)
        return np.full(len(users), self.mu_)


class BiasBaseline(RatingPredictor):
    """r_hat(u, i) = mu + b_u + b_i with damped biases (Koren 2010, "Factor in the neighbors").

    mu = mean training rating; b_i = sum_{u in R(i)} (r_ui - mu) / (|R(i)| + beta); then
    b_u = sum_{i in R(u)} (r_ui - mu - b_i) / (|R(u)| + beta), with beta = ``damping``.
    A user or item with no training ratings (or an index outside the training matrix, e.g.
    -1) has bias 0, so a wholly unknown pair is predicted as mu.
    """

    name = "bias"

    def __init__(self, config: BiasConfig | None = None) -> None:
        self.config = config if config is not None else BiasConfig()

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> BiasBaseline:
        train = _check_train(self.name, train)
        n_users, n_items = train.shape
        beta = float(self.config.damping)
        r = train.data.astype(np.float64)
        u = np.repeat(np.arange(n_users), np.diff(train.indptr))
        i = train.indices
        mu = float(r.mean())
        n_i = np.bincount(i, minlength=n_items)
        s_i = np.bincount(i, weights=r - mu, minlength=n_items)
        b_i = np.divide(s_i, n_i + beta, out=np.zeros(n_items), where=n_i > 0)
        n_u = np.bincount(u, minlength=n_users)
        s_u = np.bincount(u, weights=r - mu - b_i[i], minlength=n_users)
        b_u = np.divide(s_u, n_u + beta, out=np.zeros(n_users), where=n_u > 0)
        self.mu_, self.user_bias_, self.item_bias_ = mu, b_u, b_i
        return self

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        if not hasattr(self, "mu_"):
            raise NotFittedError(f"{self.name}: call fit before predict")
        users, items = check_pairs(self.name, users, items)
        return self.mu_ + _lookup(self.user_bias_, users) + _lookup(self.item_bias_, items)


class ModelPredictor(RatingPredictor):
    """A rating model behind :class:`RatingPredictor`.

    A subclass names ``model_type`` (built as ``model_type(config)``; None: the model's
    defaults) and its default ``name``. ``fit`` fits the model; a fit that raises leaves a
    fresh, unfitted model, never a half-fitted one that predicts. ``predict`` checks the
    model is fitted and the pairs are valid, then asks ``self.model``.
    """

    model_type: ClassVar[Callable[[Any], Any]]
    model: Any = None

    def __init__(self, name: str | None = None, config: Any = None) -> None:
        if name is not None:
            self.name = name
        self.model = self.model_type(config)
        self.config = self.model.config

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> Self:
        try:
            self.model.fit(train, rng, on_iteration=on_iteration)
        except BaseException:
            self.model = self.model_type(self.config)
            raise
        return self

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        if self.model is None or not self.model.is_fitted:
            raise NotFittedError(f"{self.name}: call fit before predict")
        users, items = check_pairs(self.name, users, items)
        return self.model.predict(users, items)


SPECS: list[SystemSpec] = [
    SystemSpec("global-mean", NoConfig, lambda name, cfg: GlobalMean(), "rating", False,
               "the mean training rating"),
    SystemSpec("bias", BiasConfig, lambda name, cfg: BiasBaseline(cfg), "rating", False,
               "mu + b_u + b_i with damped means (non-private)", {},
               {"damping": (0.0, 5.0, 25.0)}),
]
"""global-mean and bias (the registry reads this list)."""
