"""``dprec run``: one system on a data set over several seeds, its metrics and privacy
report (optionally on the sharded backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dprec.cli.common import (
    DataDir,
    Epsilon,
    Folds,
    Negatives,
    Params,
    ResultsDir,
    Seeds,
    Split,
    fail,
    load_dataset,
    progress,
)
from dprec.cli.tables import save_and_show
from dprec.errors import DprecError

__all__ = ["register", "run"]


def run(
    system: Annotated[str, typer.Argument(help="System name, see `dprec systems`.")],
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    epsilon: Epsilon = None,
    param: Params = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="A TOML config (e.g. written by `dprec tune`); --param overrides it."
    )] = None,
    preset: Annotated[str, typer.Option(
        help="default: the system's defaults; paper: the paper's own settings where they "
             "differ (e.g. plain Funk SVD for the LDP rating systems).")] = "default",
    seeds: Seeds = 5,
    split: Split = None,
    negatives: Negatives = 99,
    folds: Folds = None,
    curve_every: Annotated[int | None, typer.Option(
        help="Also evaluate every N rounds (learning curves, in the JSON).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")
                       ] = False,
    data_dir: DataDir = None,
    out_dir: ResultsDir = Path("results"),
    backend: Annotated[str | None, typer.Option(
        help="Run the protocol sharded: local (every shard in this process) or ray (shards "
             "on Ray actors; pip install 'dprec[ray]'); both give the same model for any "
             "number of shards. Omitted: the in-process engine (one random stream for all "
             "clients, a different draw). The systems whose descriptor names a shard adapter "
             "(DPLCF family, fmf-ldp, dp-pop, dpals).")] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Join this Ray cluster (e.g. auto after `ray start --head`); "
                              "default: start a local Ray with this machine's CPUs.")] = None,
    shards: Annotated[int | None, typer.Option(
        min=1, help="Shards for --backend (default: 1 local, one per CPU on Ray).")] = None,
) -> None:
    """Run one system on a data set over several seeds; print metrics and the privacy report."""
    from dprec.evaluation.results import check_output_base
    from dprec.evaluation.run_system import run_system
    runner = None
    try:
        check_output_base(out_dir)
        base, cf, params = _checked_inputs(system, epsilon, param, config, preset, seeds,
                                           split, folds)
        runner = _sharded_backend(system, backend, ray_address, shards)
        if runner is not None:
            runner.prestart()  # Ray's workers boot while the data load; every seed reuses them
        ds = load_dataset(dataset, data_dir)
        with progress() as bar:
            task = bar.add_task(f"{system} on {dataset}", total=seeds)
            res = run_system(system, ds, params, backend=runner, base=base, seeds=seeds,
                             split=split, negatives=negatives, folds=folds,
                             curve_every=curve_every, on_seed=lambda _: bar.advance(task))
    except DprecError as e:
        fail(e)
    finally:
        if runner is not None:
            runner.close()
    if cf is not None:
        res.config_file = {"path": cf.path, "provenance": cf.provenance}
    doc = res.to_json()
    if backend is not None:
        doc["backend"] = {"name": backend, "shards": shards, "ray_address": ray_address}
    save_and_show(doc, out_dir, dataset, system,
                  f"{system} on {dataset} ({seeds} seeds, mean ± 95% interval)", as_json)


def _checked_inputs(system: str, epsilon: float | None, param: list[str] | None,
                    config: Path | None, preset: str, seeds: int, split: str | None,
                    folds: int | None) -> tuple[Any, Any, dict[str, Any]]:
    """(base config, the config file read or None, parameters) of ``dprec run``: every
    option checked, and the model's memory, before the data set is loaded."""
    from dprec.evaluation.experiments import check_folds, task_of
    from dprec.evaluation.runner import check_seed_count
    from dprec.systems.params import config_from_file, param_pairs, system_params
    from dprec.systems.registry import check_model_memory, make_config, spec
    s = spec(system)
    check_seed_count(seeds)
    check_folds(task_of(system, split), split, folds)
    base, cf = config_from_file(config, system)
    if preset not in ("default", "paper"):
        raise DprecError(f"--preset must be default or paper, got {preset!r}")
    if preset == "paper":
        if cf is not None:
            raise DprecError("--preset paper and --config both set the config; use one")
        base = s.paper_config()
    params = system_params(system, epsilon, param_pairs(param))
    check_model_memory(system, make_config(system, params, base))
    return base, cf, params


def _sharded_backend(system: str, backend: str | None, ray_address: str | None,
                     shards: int | None) -> Any:
    """The sharded backend ``--backend`` names (kept warm across seeds; not started yet),
    or None for the in-process engine, which takes no --ray-address or --shards."""
    if backend is None:
        if ray_address is not None or shards is not None:
            raise DprecError("--ray-address and --shards need --backend")
        return None
    from dprec.distributed import make_backend
    from dprec.evaluation.run_system import check_backend
    check_backend(system)
    return make_backend(backend, ray_address, shards, keep_warm=True)


def register(app: typer.Typer) -> None:
    """Add ``dprec run`` to ``app``."""
    app.command("run")(run)
