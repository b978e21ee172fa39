"""The experiment loop, written once: seeds x (split, shared negatives) x system -> result."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import dprec
from dprec.data.dataset import Dataset
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.protocol import DEFAULT_KS, evaluate_ranking
from dprec.evaluation.split import LeaveOneOut, SplitRule, leave_one_out
from dprec.random import derive_generator
from dprec.systems.base import Recommender

log = logging.getLogger(__name__)

RESULT_SCHEMA = 1


@dataclass(frozen=True)
class Fold:
    """One seed's split and its negatives, shared by every system evaluated on it."""

    seed: int
    split: LeaveOneOut
    negatives: np.ndarray


def mean_std(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0}


@dataclass
class RunResult:
    """Everything one system's run produced; ``to_json`` is the versioned result contract."""

    system: str
    dataset: dict[str, object]
    protocol: dict[str, object]
    parameters: dict[str, object]
    seeds: list[int]
    per_seed: list[dict[str, dict[str, float]]]
    privacy: dict[str, object] | None
    diagnostics: list[dict[str, object]]
    wall_time_s: float
    metrics: dict[str, dict[str, dict[str, float]]] = field(init=False)

    def __post_init__(self) -> None:
        self.metrics = {
            proto: {m: mean_std([s[proto][m] for s in self.per_seed])
                    for m in self.per_seed[0][proto]}
            for proto in self.per_seed[0]
        }

    def to_json(self) -> dict[str, object]:
        return {
            "schema": RESULT_SCHEMA,
            "system": self.system,
            "dataset": self.dataset,
            "protocol": self.protocol,
            "parameters": self.parameters,
            "seeds": self.seeds,
            "metrics": self.metrics,
            "per_seed": self.per_seed,
            "privacy": self.privacy,
            "diagnostics": self.diagnostics,
            "dprec_version": dprec.__version__,
            "wall_time_s": self.wall_time_s,
        }


class Experiment:
    """A dataset, a split rule and seeds; folds are drawn once and shared by all systems.

    The negatives of seed s come from the stream (s, "negatives", dataset, rule), so they do
    not depend on which systems run or in what order.
    """

    def __init__(self, dataset: Dataset, seeds: Sequence[int], split_rule: SplitRule = "latest",
                 n_negatives: int = 99, ks: tuple[int, ...] = DEFAULT_KS) -> None:
        self.dataset = dataset
        self.seeds = [int(s) for s in seeds]
        self.split_rule = split_rule
        self.n_negatives = n_negatives
        self.ks = tuple(ks)
        self._folds: dict[int, Fold] = {}

    def fold(self, seed: int) -> Fold:
        if seed not in self._folds:
            name = self.dataset.name
            split = leave_one_out(self.dataset, self.split_rule,
                                  derive_generator(seed, "split", name))
            neg = sample_negatives(split, self.n_negatives,
                                   derive_generator(seed, "negatives", name, self.split_rule))
            self._folds[seed] = Fold(seed, split, neg)
        return self._folds[seed]

    def protocol(self) -> dict[str, object]:
        split = self.fold(self.seeds[0]).split
        return {
            "split": split.describe(),
            "sampled": {"negatives": self.n_negatives, "drawn": "once per (dataset, split, seed)"},
            "full": "all items the user never interacted with",
            "ties": "broken uniformly at random with the run's seed",
            "ks": list(self.ks),
        }

    def run(self, make: Callable[[], Recommender],
            on_seed: Callable[[int], None] | None = None) -> RunResult:
        """Fit and evaluate a fresh system per seed."""
        start = time.perf_counter()
        per_seed: list[dict[str, dict[str, float]]] = []
        diags: list[dict[str, object]] = []
        model: Recommender | None = None
        for seed in self.seeds:
            fold = self.fold(seed)
            model = make()
            model.fit(fold.split.train, derive_generator(seed, "system", model.name))
            per_seed.append(evaluate_ranking(model, fold.split, fold.negatives,
                                             derive_generator(seed, "ties", model.name),
                                             self.ks))
            diags.append(model.diagnostics())
            log.info("%s seed %d: HR@10 %.4f", model.name, seed, per_seed[-1]["sampled"]["HR@10"]
                     if "HR@10" in per_seed[-1]["sampled"] else float("nan"))
            if on_seed is not None:
                on_seed(seed)
        assert model is not None
        report = model.privacy_report()
        return RunResult(
            system=model.name,
            dataset={**self.dataset.summary(), "filters": list(self.dataset.history)},
            protocol=self.protocol(),
            parameters=model.parameters(),
            seeds=self.seeds,
            per_seed=per_seed,
            privacy=None if report is None else report.to_json(),
            diagnostics=diags,
            wall_time_s=time.perf_counter() - start,
        )
