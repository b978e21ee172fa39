"""Rating evaluation: RMSE and MAE of predictions clipped to the rating range."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.evaluator import Evaluator, Metrics
from dprec.evaluation.outputs import checked_output
from dprec.evaluation.split import RatingFold
from dprec.systems.base import RatingPredictor, Recommender, Task

__all__ = ["RatingEvaluator", "mae", "rmse"]


def _pair(predicted: np.ndarray, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(predicted, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    if p.shape != a.shape or p.ndim != 1:
        raise DprecError(f"predicted and actual must be 1-d arrays of equal length, "
                         f"got shapes {p.shape} and {a.shape}")
    if not len(p):
        raise DprecError("predicted and actual must hold at least one rating, got 0")
    return p, a


def rmse(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Root mean squared error: sqrt(mean_j (p_j - r_j)^2)."""
    p, a = _pair(predicted, actual)
    return float(np.sqrt(np.mean((p - a) ** 2)))


def mae(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Mean absolute error: mean_j |p_j - r_j|."""
    p, a = _pair(predicted, actual)
    return float(np.mean(np.abs(p - a)))


@dataclass(frozen=True)
class RatingEvaluator(Evaluator):
    """RMSE and MAE on a :class:`RatingFold`'s test ratings (k-fold or user split).

    Predictions are clipped to ``rating_range`` = (low, high) before scoring; None means the
    dataset's observed (min, max) rating (1..5 on MovieLens).
    """

    rating_range: tuple[float, float] | None = None
    task: ClassVar[Task] = "rating"

    def __post_init__(self) -> None:
        r = self.rating_range
        if r is None:
            return
        try:
            if isinstance(r, str | bytes):
                raise TypeError
            lo, hi = (float(v) for v in r)
        except (TypeError, ValueError):
            raise DprecError(f"rating_range must be a (low, high) pair of numbers, "
                             f"got {r!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise DprecError(f"rating_range must be finite with low < high, got {r!r}")
        object.__setattr__(self, "rating_range", (lo, hi))

    def prepare(self, dataset: Dataset, fold: RatingFold, seed: int,
                split_kind: str) -> tuple[float, float]:
        """The clip range: ``rating_range``, or the dataset's observed (min, max) rating."""
        _check_fold(fold, split_kind)
        if self.rating_range is not None:
            return self.rating_range
        data = dataset.matrix.data
        if not len(data):
            raise DprecError(f"dataset {dataset.name!r} has no ratings to evaluate")
        lo, hi = float(data.min()), float(data.max())
        if lo == hi:
            raise DprecError(f"dataset {dataset.name!r} has a single rating value {lo} "
                             "(implicit feedback?); rating evaluation needs explicit ratings "
                             "or an explicit rating_range")
        return lo, hi

    def evaluate(self, model: Recommender, fold: RatingFold, prepared: tuple[float, float],
                 rng: np.random.Generator) -> Metrics:
        """{"rating": {"RMSE": ..., "MAE": ...}} of the clipped predictions on the test set."""
        if getattr(model, "task", None) != "rating" or not isinstance(model, RatingPredictor):
            raise DprecError(f"{model.name} is a {getattr(model, 'task', '?')} system; "
                             "rating evaluation needs a rating predictor")
        _check_fold(fold, type(fold).__name__)
        n = len(fold.test_ratings)
        pred = checked_output(model.predict(fold.test_users, fold.test_items), (n,),
                              f"{model.name}.predict", "predictions")
        lo, hi = prepared
        pred = np.clip(pred, lo, hi)
        return {"rating": {"RMSE": rmse(pred, fold.test_ratings),
                           "MAE": mae(pred, fold.test_ratings)}}

    def describe(self) -> dict[str, object]:
        return {
            "task": "rating",
            "metrics": ["RMSE", "MAE"],
            "clipped_to": list(self.rating_range) if self.rating_range is not None
            else "observed (min, max) rating of the dataset",
        }


def _check_fold(fold: object, label: str) -> None:
    if not isinstance(fold, RatingFold):
        raise DprecError(f"rating evaluation needs a k-fold or user split (a RatingFold), "
                         f"got {label}")
