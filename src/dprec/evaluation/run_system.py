"""One registered system on a data set over seeds: the one path of ``dprec run`` and
``dprec simulate`` (issue 32 §5).

The system's messages travel in process, over a transport (the HTTP services) or through a
sharded backend; the last two need a recommender that declares
:attr:`~dprec.systems.base.Recommender.networked`. The system is built once per seed and
fold, the first one before the data's experiment starts so that a system that cannot run
as asked is refused before any service starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.experiments import (
    check_folds,
    experiment_for,
    one_run_split,
    task_of,
)
from dprec.evaluation.runner import RunResult, check_seed_count
from dprec.systems.base import Recommender
from dprec.systems.deployable import deployable_systems, sharded_systems
from dprec.systems.registry import check_model_memory, make_config, spec

__all__ = ["check_backend", "run_system"]


def check_backend(name: str) -> None:
    """:class:`DprecError` unless system ``name`` runs in shards: its server half names a
    shard adapter (checked before any data load or backend start)."""
    if name not in sharded_systems():
        raise DprecError(f"{name} has no sharded backend; these do: "
                         f"{', '.join(sharded_systems())}")


def run_system(name: str, dataset: Dataset, params: Mapping[str, object] | None = None,
               transport: Any | Callable[[], Any] | None = None, backend: Any | None = None,
               *, base: Any | None = None, seeds: int = 5, split: str | None = None,
               negatives: int = 99, folds: int | None = None, simulation: bool = False,
               curve_every: int | None = None,
               on_seed: Callable[[int], None] | None = None) -> RunResult:
    """Fit and evaluate system ``name`` (its config ``base``, default the system's, with
    ``params`` applied) on ``dataset`` over seeds 0..``seeds``-1.

    ``transport``: the services' transport, or a function that starts it (called only once
    the system is known to run over one); ``backend``: a sharded round executor
    (:func:`dprec.distributed.make_backend`); neither: in process. ``simulation``: a
    protocol simulation (``dprec simulate``): the system must be networked even in process,
    and the split trains once per seed (:func:`~dprec.evaluation.experiments.one_run_split`).
    Same seeds, same numbers, whichever path carries the messages (except where a system's
    clients draw as devices over the services).
    """
    if transport is not None and backend is not None:
        raise DprecError("a run goes over a transport or a sharded backend, not both")
    if backend is not None:
        check_backend(name)
    check_seed_count(seeds)
    task = task_of(name, split)
    run_split = one_run_split(task, split) if simulation else split
    check_folds(task, run_split, folds)
    config = make_config(name, params, base)
    check_model_memory(name, config, dataset.n_users, dataset.n_items)
    exp = experiment_for(task, dataset, seeds, run_split, negatives, folds)
    exp.check_memory()
    built = [spec(name).build(config)]
    if (simulation or transport is not None) and not built[0].networked:
        raise DprecError(f"{name} does not run over a network transport or a sharded "
                         f"backend; these do: {', '.join(deployable_systems())}")
    carrier = transport() if callable(transport) else transport if transport is not None \
        else backend

    def make() -> Recommender:
        model = built.pop() if built else spec(name).build(config)
        if carrier is not None:
            model.transport = carrier  # type: ignore[attr-defined]
        return model

    return exp.run(make, on_seed=on_seed, curve_every=curve_every)
