"""The evaluator interface: what is measured on a fold, for one task."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dprec.data.dataset import Dataset
from dprec.systems.base import Recommender, Task

__all__ = ["Evaluator", "Metrics"]

Metrics = dict[str, dict[str, float]]
"""{protocol: {metric: value}}, e.g. {"sampled": {"HR@10": ...}, "full": {...}}."""


class Evaluator(ABC):
    """Scores a fitted model on a fold; ``prepare`` draws what every system shares."""

    task: Task

    def prepare(self, dataset: Dataset, fold: Any, seed: int, split_kind: str) -> Any:
        """State shared by every system evaluated on ``fold`` (e.g. sampled negatives)."""
        return None

    @abstractmethod
    def evaluate(self, model: Recommender, fold: Any, prepared: Any,
                 rng: np.random.Generator) -> Metrics:
        """Metrics of ``model`` on ``fold``; ties or other randomness from ``rng``."""

    @abstractmethod
    def describe(self) -> dict[str, object]:
        """What the results file records about the protocol."""

    def describe_fold(self, fold: Any, prepared: Any) -> dict[str, object]:
        """What the results file records about the evaluated part of one fold (e.g. how many
        test users were scored); empty by default."""
        return {}

    def train_matrix(self, fold: Any, model: Recommender | None = None) -> Any:
        """The training matrix ``model`` is fitted on (by default ``fold.train``, whatever
        the model)."""
        return fold.train
