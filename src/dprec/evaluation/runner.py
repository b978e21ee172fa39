"""The experiment loop, written once: seeds x folds (split, shared evaluation state) x system."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

import dprec
from dprec.data.dataset import Dataset
from dprec.data.synthetic import require_memory
from dprec.errors import DprecError
from dprec.evaluation.evaluator import Evaluator, Metrics
from dprec.evaluation.fit_privacy import merge_fit_reports
from dprec.evaluation.intervals import summarise
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.split import LeaveOneOutSplit, Split
from dprec.iteration import IterationHook
from dprec.random import derive_generator
from dprec.systems.base import Recommender

if TYPE_CHECKING:
    from dprec.data.features import SideFeatures

__all__ = [
    "Experiment", "RESULT_BYTES_PER_FIT", "RESULT_SCHEMA", "RunResult", "array_bytes",
    "check_seed_count", "mean_std",
]

log = logging.getLogger(__name__)

RESULT_SCHEMA = 1
RESULT_BYTES_PER_FIT = 16 << 10
"""A floor on the bytes one (seed, fold) fit's results hold until the run ends (metrics,
diagnostics, privacy report; measured 60-130 KiB per seed with its folds on a 200 x 100
data set)."""


def check_seed_count(n_seeds: int) -> None:
    """DprecError, before anything is built, when ``n_seeds`` seeds' results alone
    (:data:`RESULT_BYTES_PER_FIT` each) cannot fit in memory."""
    require_memory(int(n_seeds) * RESULT_BYTES_PER_FIT, f"keeping the results of "
                   f"{int(n_seeds):,} seeds", "pass fewer seeds (--seeds)")


def array_bytes(obj: object, _seen: set[int] | None = None) -> int:
    """Bytes of the numpy arrays and scipy sparse matrices reachable from ``obj`` (through
    dataclass fields, attributes, dicts, lists and tuples), each counted once."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen or obj is None or isinstance(obj, str | bytes | int | float):
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) if obj.base is None or id(obj.base) not in seen else 0
    if sp.issparse(obj):
        return sum(array_bytes(getattr(obj, a, None), seen)
                   for a in ("data", "indices", "indptr", "row", "col"))
    if isinstance(obj, dict):
        return sum(array_bytes(v, seen) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(array_bytes(v, seen) for v in obj)
    if hasattr(obj, "__dict__"):
        return sum(array_bytes(v, seen) for v in vars(obj).values())
    return 0


def mean_std(values: Sequence[float]) -> dict[str, float]:
    """{"mean", "std"} of ``values`` (std with ddof 1; 0 for one value)."""
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
    curves: list[list[dict[str, object]]] | None = None
    config_file: dict[str, object] | None = None
    """{"path": .., "provenance": ..} when the config came from a TOML file (e.g. tuned)."""
    """Per (seed, fold): [{"round": r, "metrics": {...}}, ...] when learning curves were asked."""
    metrics: dict[str, dict[str, dict[str, float | int | None]]] = field(init=False)

    def __post_init__(self) -> None:
        self.metrics = {
            proto: {m: summarise([s[proto][m] for s in self.per_seed])
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
            **({"curves": self.curves} if self.curves is not None else {}),
            **({"config_file": self.config_file} if self.config_file is not None else {}),
        }


class Experiment:
    """A dataset, a split, an evaluator and seeds; folds are drawn once and shared by all systems.

    Defaults: leave-one-out by the latest interaction, ranking evaluation (sampled + full).
    The split of seed s comes from the stream (s, "split", dataset) and the evaluator's
    shared state (e.g. negatives) from its own stream, so they do not depend on which
    systems run or in what order. A system is fitted on ``evaluator.train_matrix(fold, model)``
    with the stream (s, "system", name); ties use (s, "ties", name). A system with
    ``uses_side_features`` gets the dataset's side features (computed once per experiment)
    through ``set_side_features`` before every ``fit``, one with ``uses_rating_scale``
    the dataset's declared rating scale through ``set_rating_scale``, and one with
    ``uses_timestamps`` its training interactions' times through ``set_timestamps``
    (:meth:`train_timestamps`).
    """

    def __init__(self, dataset: Dataset, seeds: Sequence[int], split: Split | None = None,
                 evaluator: Evaluator | None = None) -> None:
        self.dataset = dataset
        if not len(seeds):
            raise DprecError("seeds must name at least one seed")
        check_seed_count(len(seeds))
        self.seeds = [int(s) for s in seeds]
        self.split = split if split is not None else LeaveOneOutSplit("latest")
        self.evaluator = evaluator if evaluator is not None else RankingEvaluator()
        self._folds: dict[int, list[tuple[Any, Any]]] = {}
        self._side_features: SideFeatures | None = None
        self._timestamps: sp.csr_matrix | None = None

    @property
    def ks(self) -> tuple[int, ...]:
        return tuple(getattr(self.evaluator, "ks", ()))

    def folds(self, seed: int) -> list[tuple[Any, Any]]:
        """(fold, shared evaluation state) pairs of one seed, drawn once."""
        if seed not in self._folds:
            name = self.dataset.name
            folds = self.split.folds(self.dataset, derive_generator(seed, "split", name))
            self._folds[seed] = [
                (f, self.evaluator.prepare(self.dataset, f, seed, self.split.kind))
                for f in folds]
        return self._folds[seed]

    def memory_estimate(self) -> int:
        """Bytes the run keeps until it ends: every seed's folds and shared evaluation state
        (the arrays of the first seed's, drawn now, times the seeds) and every fit's
        results (:data:`RESULT_BYTES_PER_FIT`)."""
        first = self.folds(self.seeds[0])
        per_seed = array_bytes(first) + len(first) * RESULT_BYTES_PER_FIT
        return len(self.seeds) * per_seed

    def check_memory(self) -> None:
        """DprecError, before any fit, if the run's folds and results cannot fit in memory."""
        require_memory(self.memory_estimate(), f"{len(self.seeds):,} seeds of "
                       f"{self.dataset.name} (their folds, evaluation state and results)",
                       "pass fewer seeds (--seeds)")

    def side_features(self) -> SideFeatures:
        """The dataset's side features, computed on first use and cached."""
        if self._side_features is None:
            from dprec.data.features import side_features
            self._side_features = side_features(self.dataset)
        return self._side_features

    def train_timestamps(self, train: sp.csr_matrix, system: str) -> sp.csr_matrix:
        """Each interaction of ``train`` with its time (a CSR of ``train``'s shape holding
        only its entries: a held-out interaction's time is not handed over);
        :class:`DprecError` if the dataset has no timestamps."""
        ds = self.dataset
        if ds.timestamps is None:
            raise DprecError(f"{system}, as configured, needs the interactions' timestamps; "
                             f"dataset {ds.name!r} has none: use a data set with timestamps "
                             "or settings that do not need them")
        if self._timestamps is None:
            m = ds.matrix.tocsr()
            self._timestamps = sp.csr_matrix(
                (np.asarray(ds.timestamps, np.int64), m.indices, m.indptr), shape=m.shape)
        if train.shape != self._timestamps.shape:
            raise DprecError(f"the training matrix of {system} has shape {train.shape}, the "
                             f"dataset {self._timestamps.shape}: its timestamps do not align")
        return sp.csr_matrix(self._timestamps.multiply(train.astype(bool)))

    def protocol(self) -> dict[str, object]:
        first, prepared = self.folds(self.seeds[0])[0]
        split = {**self.split.describe(), **(first.describe() if hasattr(first, "describe")
                                             else {})}
        evaluated = self.evaluator.describe_fold(first, prepared)
        return {"split": split, "folds_per_seed": len(self.folds(self.seeds[0])),
                **self.evaluator.describe(),
                **({"evaluated": evaluated} if evaluated else {})}

    def run(self, make: Callable[[], Recommender],
            on_seed: Callable[[int], None] | None = None,
            curve_every: int | None = None) -> RunResult:
        """Fit and evaluate a fresh system per seed and fold.

        ``per_seed`` holds one entry per (seed, fold), and every metric is the mean, std,
        95% interval half-width ``ci95`` and count ``n`` over those entries
        (:func:`~dprec.evaluation.intervals.summarise`; leave-one-out: one fold per seed).
        ``privacy`` accounts every fitted model: each number is the worst over the fits,
        with every fit's guarantees in ``privacy.per_fit`` when they differ
        (:mod:`dprec.evaluation.fit_privacy`).
        ``curve_every``: also evaluate after every that many rounds of a multi-round
        protocol (learning curves, in ``curves``).
        """
        if curve_every is not None and (int(curve_every) != curve_every or curve_every < 1):
            raise DprecError(f"curve_every must be an integer >= 1, got {curve_every}")
        self.check_memory()
        start = time.perf_counter()
        per_seed: list[Metrics] = []
        diags: list[dict[str, object]] = []
        curves: list[list[dict[str, object]]] = []
        reports: list[dict[str, object] | None] = []
        fits: list[tuple[int, int]] = []
        model: Recommender | None = None
        for seed in self.seeds:
            fold_metrics: list[Metrics] = []
            for k, (fold, prepared) in enumerate(self.folds(seed)):
                model = make()
                hook = None
                curve: list[dict[str, object]] = []
                if curve_every is not None:
                    hook = self._curve_hook(model, fold, prepared, seed, curve, curve_every)
                if model.uses_side_features:
                    model.set_side_features(self.side_features())
                if model.uses_rating_scale:
                    model.set_rating_scale(self.dataset.rating_scale)
                train = self.evaluator.train_matrix(fold, model)
                if model.uses_timestamps:
                    model.set_timestamps(self.train_timestamps(train, model.name))
                model.fit(train, derive_generator(seed, "system", model.name),
                          on_iteration=hook)
                metrics = self.evaluator.evaluate(model, fold, prepared,
                                                  derive_generator(seed, "ties", model.name))
                _check_degenerate(metrics, seed, k, self.dataset)
                fold_metrics.append(metrics)
                diags.append(model.diagnostics())
                report = model.privacy_report()
                reports.append(None if report is None else report.to_json())
                fits.append((seed, k))
                if curve_every is not None:
                    curves.append(curve)
            per_seed.extend(fold_metrics)
            log.info("%s seed %d: %s", model.name if model else "?", seed, fold_metrics)
            if on_seed is not None:
                on_seed(seed)
        assert model is not None
        return RunResult(
            system=model.name,
            dataset={**self.dataset.summary(), "filters": list(self.dataset.history)},
            protocol=self.protocol(),
            parameters=model.parameters(),
            seeds=self.seeds,
            per_seed=per_seed,
            privacy=merge_fit_reports(reports, fits),
            diagnostics=diags,
            wall_time_s=time.perf_counter() - start,
            curves=curves or None,
        )

    def _curve_hook(self, model: Recommender, fold: Any, prepared: Any, seed: int,
                    curve: list[dict[str, object]], every: int) -> IterationHook:
        def hook(round: int, state: object) -> None:
            if (round + 1) % every == 0:
                m = self.evaluator.evaluate(model, fold, prepared,
                                            derive_generator(seed, "ties", model.name))
                curve.append({"round": round + 1, "metrics": m})
        return hook


def _check_degenerate(metrics: Metrics, seed: int, fold: int, dataset: Dataset) -> None:
    """DprecError when a fit's evaluation has a non-finite metric: no test case could be
    scored (e.g. a one-item data set leaves nothing to rank), so the run measures nothing."""
    bad = [f"{proto} {name}" for proto, values in metrics.items()
           for name, v in values.items() if not np.isfinite(v)]
    if bad:
        raise DprecError(
            f"degenerate run: seed {seed}, fold {fold} has no finite {', '.join(bad[:4])}"
            f"{' ...' if len(bad) > 4 else ''}: no test case could be evaluated on "
            f"{dataset.name} ({dataset.n_users:,} users, {dataset.n_items:,} items, "
            f"{dataset.n_interactions:,} interactions); use a larger data set or another "
            "split")
