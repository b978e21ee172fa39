"""``dprec tune``: grid search on validation data carved out of each training fold, written
as a TOML config that ``run --config`` and ``compare --configs`` reuse."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from dprec.cli.common import (
    DataDir,
    Epsilon,
    Folds,
    Negatives,
    Params,
    Split,
    err,
    fail,
    load_dataset,
    out,
    progress,
)
from dprec.errors import DprecError

__all__ = ["register", "tune_cmd"]


def _read_grid(path: Path) -> dict[str, list]:
    import tomllib
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DprecError(f"grid file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise DprecError(f"grid file {path} is not readable TOML: {e}") from None
    grid = doc.get("grid")
    if not isinstance(grid, dict) or set(doc) - {"grid"}:
        raise DprecError(f"grid file {path} must hold one table: [grid] KEY = [values, ...]")
    return grid


def tune_cmd(
    system: Annotated[str, typer.Argument(help="System name, see `dprec systems`.")],
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    grid: Annotated[Path | None, typer.Option(
        help="TOML with [grid] KEY = [values]; default: the system's paper grid.")] = None,
    metric: Annotated[str | None, typer.Option(
        help="Validation metric (default HR@10 for ranking, RMSE for rating).")] = None,
    protocol: Annotated[str | None, typer.Option(
        help="Results section the metric is read from: full-topk (ranking's default: top-K "
             "lists over all unseen items, the headline of every table), full (random "
             "ties), sampled (1 + --negatives); the PrivRec split reads full (its "
             "paper's reading) unless told full-topk.")] = None,
    epsilon: Epsilon = None,
    param: Params = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Seeds (0..n-1).")] = 2,
    split: Split = None,
    negatives: Negatives = 99,
    folds: Folds = None,
    out_path: Annotated[Path | None, typer.Option(
        "--out", help="Config to write (default configs/<dataset>/<system>.toml).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing config file.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Grid search on validation data carved out of each training fold; writes a TOML config
    that `dprec run SYSTEM --config FILE` and `dprec compare --configs DIR` reuse."""
    from dprec.evaluation.experiments import check_folds, experiment_for, task_of
    from dprec.evaluation.runner import check_seed_count
    from dprec.evaluation.tuning import default_grid, grid_points, tune
    from dprec.systems.params import param_pairs, system_params
    from dprec.systems.registry import check_model_memory, make_config, spec
    try:
        s = spec(system)
        check_seed_count(seeds)
        base = make_config(system, system_params(system, epsilon, param_pairs(param)))
        g = _read_grid(grid) if grid is not None else default_grid(system)
        points = grid_points(g)
        configs = [make_config(system, p, base, typed=True) for p in points]
        for c in configs:
            check_model_memory(system, c)
        kind = task_of(system, split)
        check_folds(kind, split, folds)
        metric, protocol = _metric_and_protocol(s.task, kind, metric, protocol, negatives)
        target = _config_target(out_path, dataset, system, force)
        ds = load_dataset(dataset, data_dir)
        for c in configs:
            check_model_memory(system, c, ds.n_users, ds.n_items)
        exp = experiment_for(kind, ds, seeds, split, negatives, folds)
        exp.check_memory()
        n_folds = len(exp.folds(exp.seeds[0]))
        command = "dprec tune " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
        with progress() as bar:
            task = bar.add_task(f"tune {system} on {dataset}",
                                total=len(points) * seeds * n_folds)
            res = tune(system, exp, g, metric, protocol=protocol, base=base, command=command,
                       tick=lambda: bar.advance(task))
    except DprecError as e:
        fail(e)
    out.print(_grid_table(res, g, f"{system} on {dataset}: validation {metric} ({protocol}, "
                                  f"{seeds} seeds)", metric))
    saved = _write_config(system, res, target, force)
    where = res.provenance.get("best_position", {})
    out.print(f"best {res.best} ({metric} {res.best_score:.4f}); in the grid: "
              + ", ".join(f"{k} {v}" for k, v in where.items()) + f"; saved {saved}")
    out.print(f"reuse: dprec run {system} --config {saved}")


def _metric_and_protocol(task: str, kind: str, metric: str | None, protocol: str | None,
                         negatives: int) -> tuple[str, str]:
    """The validation metric and the results section it is read from: the defaults filled
    in (HR@10 or RMSE; full-topk, or the split's own section), each checked to be measured
    by a ``kind`` run of a ``task`` system."""
    from dprec.evaluation.ranking import FULL_LIST, LIST_KS, RankingEvaluator
    metric = metric or ("HR@10" if task == "ranking" else "RMSE")
    ks = (5, 10, 20, 30) if kind == "privrec" else RankingEvaluator(negatives).ks
    sections = {"rating": "rating", "privrec": "full"}
    protocol = protocol or sections.get(kind, FULL_LIST)
    known = ({"rating": ["rating"], "privrec": ["full", FULL_LIST]}.get(kind)
             or [FULL_LIST, "full", "sampled"])
    if protocol not in known:
        raise DprecError(f"--protocol {protocol} is not measured for a {kind} run; "
                         f"choose one of {', '.join(known)}")
    allowed = (["RMSE", "MAE"] if task == "rating" else
               [*(f"{m}@{k}" for m in ("HR", "Recall", "NDCG", "Coverage")
                  for k in LIST_KS), "MRR"] if protocol == FULL_LIST else
               [f"{m}@{k}" for m in ("HR", "NDCG") for k in ks])
    if metric not in allowed:
        raise DprecError(f"metric {metric} is not measured for a {task} system"
                         f"{'' if task == 'rating' else f' ({protocol})'}; "
                         f"choose one of {', '.join(allowed)}")
    return metric, protocol


def _config_target(out_path: Path | None, dataset: str, system: str, force: bool) -> Path:
    """The config file to write (default ``configs/<dataset>/<system>.toml``), refused if it
    exists without ``force`` or is a folder, or if its folder cannot hold results."""
    from dprec.evaluation.results import check_output_base
    target = out_path or Path("configs") / dataset / f"{system}.toml"
    if target.exists() and not force:
        raise DprecError(f"{target} exists; pass --force to overwrite it or --out elsewhere")
    if target.is_dir():
        raise DprecError(f"--out {target} is a folder; name the config file to write")
    check_output_base(target.parent)
    return target


def _grid_table(res: Any, grid: dict[str, list], title: str, metric: str) -> Table:
    """One row per grid point with its validation score, the best marked ◀."""
    t = Table(title=title)
    for k in grid:
        t.add_column(k)
    t.add_column(metric, justify="right")
    for row in res.scores:
        mark = " ◀" if all(row[k] == res.best[k] for k in grid) else ""
        t.add_row(*[str(row[k]) for k in grid], f"{row['score']:.4f}{mark}")
    return t


def _write_config(system: str, res: Any, target: Path, force: bool) -> Path:
    """Write the tuned config with its provenance to ``target`` and return where it went:
    beside it, with a warning, if another run wrote ``target`` meanwhile (no ``force``)."""
    from dprec.evaluation.results import write_new_text
    from dprec.systems.registry import config_to_toml
    try:
        saved = write_new_text(target, config_to_toml(system, res.config, res.provenance),
                               overwrite=force)
    except (DprecError, OSError) as e:
        fail(DprecError(f"cannot write {target}: {e}"))
    if saved != target:
        err.print(f"[yellow]warning:[/] {escape(str(target))} was written by another run "
                  f"while this one tuned; it is kept, and this config is saved as "
                  f"{escape(str(saved))}")
    return saved


def register(app: typer.Typer) -> None:
    """Add ``dprec tune`` to ``app``."""
    app.command("tune")(tune_cmd)
