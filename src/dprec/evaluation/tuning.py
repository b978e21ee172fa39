"""Hyper-parameter search on validation data carved out of each training fold, never the test.

For every seed and every outer fold of the experiment's split, the fold's training part
becomes a dataset of its own and is split again by the same rule (leave-one-out: each
user's latest remaining interaction; k-fold: k folds of the training ratings). Every grid
point is fitted and scored there; the chosen point has the best mean validation score. The
outer test interactions are never seen: they are not in the training part.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import dprec
from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.ranking import FULL_LIST
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import LeaveOneOut, RatingFold
from dprec.systems.registry import make_config, make_system, spec

LOWER_IS_BETTER = ("RMSE", "MAE")


def training_part(dataset: Dataset, fold: Any) -> Dataset:
    """The fold's training interactions as a dataset (timestamps, ids, side features and the
    declared rating scale kept; a user split's training part holds the train users and the
    test users' fine-tune halves, never a test half)."""
    if isinstance(fold, LeaveOneOut):
        if fold.kept is None or fold.train_ratings is None:
            raise DprecError("this leave-one-out fold does not record its training entries")
        ts = None if dataset.timestamps is None else dataset.timestamps[fold.kept]
        matrix = fold.train_ratings
    elif isinstance(fold, RatingFold):
        ts, matrix = None, fold.train
    else:
        raise DprecError(f"cannot carve validation data out of a {type(fold).__name__}")
    return Dataset(name=f"{dataset.name}/validation", matrix=matrix.tocsr(), timestamps=ts,
                   user_ids=dataset.user_ids, item_ids=dataset.item_ids,
                   user_features=dataset.user_features, item_features=dataset.item_features,
                   history=(*dataset.history, "validation: training part of an outer fold"),
                   rating_scale=dataset.rating_scale)


def grid_points(grid: Mapping[str, Sequence[object]]) -> list[dict[str, object]]:
    """The Cartesian product of ``grid`` as a list of {key: value} dicts."""
    if not grid:
        raise DprecError("the grid is empty: give at least one KEY = [values]")
    for k, v in grid.items():
        if isinstance(v, str | bytes) or not isinstance(v, Sequence) or not v:
            raise DprecError(f"grid entry {k} must be a non-empty list of values, got {v!r}")
    keys = list(grid)
    return [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*grid.values())]


@dataclass
class TuneResult:
    """The chosen settings, every point's validation score, and how they were measured."""

    system: str
    metric: str
    best: dict[str, object]
    best_score: float
    scores: list[dict[str, object]]
    provenance: dict[str, object]
    config: Any


def tune(name: str, experiment: Experiment, grid: Mapping[str, Sequence[object]],
         metric: str, protocol: str | None = None, base: Any | None = None,
         command: str = "", tick: Callable[[], None] | None = None) -> TuneResult:
    """Grid search of system ``name`` on validation folds carved from ``experiment``'s folds.

    ``metric`` is a name in the evaluator's results (e.g. "HR@10", "RMSE"); ``protocol``
    picks the result section (ranking by default the full top-K lists,
    :data:`~dprec.evaluation.ranking.FULL_LIST`, the headline of every table; "rating" for
    rating). The provenance records where the best point lies in the grid
    (:func:`best_point_position`).
    """
    s = spec(name)
    points = grid_points(grid)
    configs = [make_config(name, p, base) for p in points]
    protocol = protocol or (FULL_LIST if s.task == "ranking" else "rating")
    lower = metric in LOWER_IS_BETTER
    start = time.perf_counter()
    per_point: list[list[float]] = [[] for _ in points]
    failures: dict[int, str] = {}
    for seed in experiment.seeds:
        for fold, _ in experiment.folds(seed):
            inner = Experiment(training_part(experiment.dataset, fold), [seed],
                               experiment.split, experiment.evaluator)
            for i, cfg in enumerate(configs):
                try:
                    res = inner.run(lambda c=cfg: make_system(name, config=c))
                except DprecError as e:
                    failures[i] = str(e)
                    per_point[i].append(math.nan)
                    if tick is not None:
                        tick()
                    continue
                section = res.metrics.get(protocol)
                if section is None or metric not in section:
                    known = {p: list(m) for p, m in res.metrics.items()}
                    raise DprecError(f"metric {metric} ({protocol}) is not in the results; "
                                     f"known: {known}")
                per_point[i].append(section[metric]["mean"])
                if tick is not None:
                    tick()
    means = [float(np.mean(v)) for v in per_point]
    key = [(-m if not lower else m) if math.isfinite(m) else math.inf for m in means]
    if all(k == math.inf for k in key):
        raise DprecError(f"every grid point failed for {name}; first error: "
                         f"{next(iter(failures.values()), 'no finite score')}")
    best = int(np.argmin(key))
    scores = [{**p, "score": m, "per_fold": v, **({"failed": failures[i]} if i in failures
                                                   else {})}
              for i, (p, m, v) in enumerate(zip(points, means, per_point, strict=True))]
    provenance: dict[str, object] = {
        "command": command,
        "tuned_on": "validation: the same split applied to each outer training fold "
                    f"({experiment.split.kind}); the test split is never used",
        "dataset": experiment.dataset.name,
        "seeds": experiment.seeds,
        "metric": f"{metric} ({protocol}), {'lower' if lower else 'higher'} is better",
        "best_score": means[best],
        "best_position": best_point_position(grid, points[best]),
        "grid": {k: list(v) for k, v in grid.items()},
        "scores": [[*p.values(), m if math.isfinite(m) else "failed"]
                   for p, m in zip(points, means, strict=True)],
        "score_columns": [*grid, metric],
        "dprec_version": dprec.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "wall_time_s": round(time.perf_counter() - start, 1),
    }
    if failures:
        provenance["failed_points"] = len(failures)
    if s.private:
        provenance["privacy_note"] = (
            "tuned on the private data itself; the privacy cost of tuning is NOT accounted "
            "for in any privacy report")
    return TuneResult(name, metric, points[best], means[best], scores, provenance,
                      configs[best])


def best_point_position(grid: Mapping[str, Sequence[object]],
                        best: Mapping[str, object]) -> dict[str, str]:
    """Per grid key: where ``best``'s value lies among the grid's numeric values sorted:
    "interior", "lower edge" or "upper edge"; "only value" for a key with one value;
    "categorical (every value tried)" for a key with values that are not numbers. A best
    point on an edge says the grid may be too small there."""
    out: dict[str, str] = {}
    for k, values in grid.items():
        vals = list(values)
        if len(vals) == 1:
            out[k] = "only value"
            continue
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
            out[k] = "categorical (every value tried)"
            continue
        vals = sorted(vals)  # type: ignore[type-var]
        i = vals.index(best[k])
        out[k] = ("lower edge" if i == 0 else "upper edge" if i == len(vals) - 1
                  else "interior")
    return out


def default_grid(name: str) -> dict[str, tuple[object, ...]]:
    """The system's default grid (registry), or an error naming what to do."""
    grid = dict(spec(name).default_grid)
    if not grid:
        raise DprecError(f"{name} has no default grid; give one with --grid FILE.toml "
                         "([grid] KEY = [values, ...])")
    return grid


__all__ = ["TuneResult", "best_point_position", "default_grid", "grid_points",
           "training_part", "tune"]
