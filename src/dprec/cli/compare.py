"""``dprec compare``: every system side by side on the same folds, an ε sweep, and the
results folder (JSON, CSV, plots), kept as ``-incomplete`` if the run is stopped.

The command is three steps: :func:`plan_comparison` checks every option and builds the
experiments before any work, :func:`run_comparison` fills the results folder, and
:func:`print_comparison` shows the tables.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from dprec.cli.common import (
    DataDir,
    Folds,
    ResultsDir,
    Seeds,
    err,
    fail,
    load_dataset,
    out,
    progress,
)
from dprec.cli.tables import fitted_tables, print_tables
from dprec.errors import DprecError

__all__ = [
    "SWEEP_METRIC", "ComparisonPlan", "Terminated", "compare", "plan_comparison",
    "print_comparison", "register", "run_comparison",
]

SWEEP_METRIC = {"ranking": ("HR@10", "full-topk"), "rating": ("RMSE", "rating"),
                "privrec": ("HR@10", "full"), "strong": ("Recall@20", "full-topk")}
"""The metric and evaluation protocol the ε sweep of each task reports."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it stops the way Ctrl-C does."""


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM raises :class:`Terminated`."""
    def handler(signum: int, frame: object) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave SIGTERM as it is
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class ComparisonPlan:
    """A checked comparison: the systems (labels), their configs and tuned files, the
    private ones swept over ``grid``, and the main and sweep experiments."""

    dataset: str
    task: str
    epsilon: float | None
    seeds: int
    sweep_seeds: int
    names: list[str]
    configs: dict[str, Any]
    files: dict[str, Any]
    private: list[str]
    grid: list[float]
    exp: Any
    sweep_exp: Any


def _split_labels(text: str) -> list[str]:
    """Split --systems on commas outside brackets; variants use ';' or ',' inside []."""
    labels, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            labels.append(cur.strip())
            cur = ""
        else:
            cur += ch
    labels.append(cur.strip())
    labels = [x.replace(";", ",") for x in labels if x]
    if len(set(labels)) != len(labels):
        raise DprecError(f"--systems names a system twice: {text}")
    return labels


def _systems_of(task: str, systems_: str | None) -> list[str]:
    """The labels of ``--systems`` (default: every system of the task), each of the task."""
    from dprec.evaluation.compare import (
        DEFAULT_COMPARISON,
        DEFAULT_PRIVREC_COMPARISON,
        DEFAULT_RATING_COMPARISON,
        DEFAULT_STRONG_COMPARISON,
    )
    from dprec.systems.registry import parse_label, spec
    default = {"ranking": DEFAULT_COMPARISON, "rating": DEFAULT_RATING_COMPARISON,
               "privrec": DEFAULT_PRIVREC_COMPARISON, "strong": DEFAULT_STRONG_COMPARISON}[task]
    names = _split_labels(systems_) if systems_ else list(default)
    for n in names:
        sp_ = spec(parse_label(n)[0])
        kind = (task if sp_.task == "ranking" and task in ("privrec", "strong")
                and not (task == "strong" and sp_.protocol == "user-split") else sp_.task)
        if kind != task:
            raise DprecError(f"--task {task}: {n} is a {kind} system (use --task {kind})")
        if task == "ranking" and sp_.protocol == "user-split":
            raise DprecError(f"--task ranking: {n} is evaluated on the PrivRec protocol "
                             "(use --task privrec)")
    return names


def _compare_configs(labels: list[str], configs_dir: Path | None, preset: str,
                     epsilon: float | None, params: dict[str, str]) -> tuple[dict, dict]:
    """Each label's config: tuned file (if any) + its own [KEY=VALUE] + --epsilon + --param."""
    from dprec.systems.params import check_epsilon
    from dprec.systems.registry import make_config, parse_label, read_config, spec
    if epsilon is not None:
        check_epsilon(epsilon)
    if preset not in ("default", "paper", "tuned"):
        raise DprecError(f"--preset must be default, paper or tuned, got {preset!r}")
    if preset != "tuned" and configs_dir is not None:
        raise DprecError(f"--preset {preset} does not read tuned configs; drop --configs")
    if preset == "tuned" and configs_dir is None:
        raise DprecError("--preset tuned reads tuned configs: give --configs DIR")
    parsed = {label: parse_label(label) for label in labels}
    systems = {name for name, _ in parsed.values()}
    files: dict[str, object] = {}
    if configs_dir is not None:
        if not configs_dir.is_dir():
            raise DprecError(f"--configs {configs_dir} is not a folder")
        for path in sorted(configs_dir.glob("*.toml")):
            cf = read_config(path)
            for label, (name, _) in parsed.items():
                if name == cf.system:
                    files[label] = cf
    for key in params:
        if not any(key in spec(n).settable() for n in systems):
            raise DprecError(f"no listed system has the option {key}")
    if epsilon is not None and not any("epsilon" in spec(n).settable() and spec(n).private
                                       for n in systems):
        raise DprecError("no listed system has an epsilon (drop --epsilon)")
    configs = {}
    for label, (name, own) in parsed.items():
        s = spec(name)
        cf = files.get(label)
        base = make_config(name, cf.params) if cf is not None else None  # type: ignore[attr-defined]
        if preset == "paper":
            base = s.paper_config()
        mine: dict[str, object] = {k: v for k, v in params.items() if k in s.settable()}
        if epsilon is not None and s.private and "epsilon" in s.settable():
            mine["epsilon"] = epsilon
        configs[label] = make_config(name, {**own, **mine}, base)
    return configs, files


def _swept_systems(names: list[str], configs: dict[str, Any], grid: list[float]) -> list[str]:
    """The private systems of the sweep (with a grid: those with an ``epsilon``), each
    checked to take every ε of ``grid``."""
    from dprec.evaluation.compare import private_names
    from dprec.systems.registry import make_config, parse_label, spec
    private = private_names(names)
    if grid:
        private = [n for n in private if "epsilon" in spec(parse_label(n)[0]).settable()]
    for n in private:
        for e in grid:
            make_config(parse_label(n)[0], {"epsilon": e}, configs[n])
    return private


def strong_task(task: str) -> tuple[str, str | None]:
    """``--task strong:N`` to ("strong", "strong:N") (N held-out users); any other task to
    (task, None)."""
    if task.split(":")[0] == "strong":
        return "strong", task
    return task, None


def plan_comparison(dataset: str, task: str, epsilon: float | None, seeds: int,
                    sweep_seeds: int, folds: int | None, systems_: str | None,
                    configs_dir: Path | None, preset: str | None, param: list[str] | None,
                    eps_grid: str | None, data_dir: Path | None) -> ComparisonPlan:
    """Every option of ``dprec compare`` checked, the data loaded and the experiments'
    memory estimated, before any system runs."""
    from dprec.evaluation.experiments import check_folds, experiment_for
    from dprec.evaluation.runner import check_seed_count
    from dprec.systems.params import epsilon_grid, param_pairs
    from dprec.systems.registry import check_model_memory
    task, split = strong_task(task)
    if task not in ("ranking", "rating", "privrec", "strong"):
        raise DprecError(f"--task must be ranking, rating, privrec, strong or strong:N, got "
                         f"{task!r}")
    check_seed_count(max(seeds, sweep_seeds))
    check_folds(task, None, folds)
    names = _systems_of(task, systems_)
    if eps_grid is None:
        eps_grid = "0.5,1,1.5,2,2.5,3" if task == "ranking" else ""
    if preset is None:
        preset = "tuned" if configs_dir is not None else "default"
    configs, files = _compare_configs(names, configs_dir, preset, epsilon, param_pairs(param))
    grid = epsilon_grid(eps_grid)
    private = _swept_systems(names, configs, grid)
    for n in names:
        check_model_memory(n, configs[n])
    ds = load_dataset(dataset, data_dir)
    for n in names:
        check_model_memory(n, configs[n], ds.n_users, ds.n_items)
    exp = experiment_for(task, ds, seeds, split, 99, folds)
    sweep_exp = experiment_for(task, ds, sweep_seeds, split, 99, folds)
    exp.check_memory()
    sweep_exp.check_memory()
    return ComparisonPlan(dataset, task, epsilon, seeds, sweep_seeds, names, configs, files,
                          private, grid, exp, sweep_exp)


def compare(
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    seeds: Seeds = 5,
    epsilon: Annotated[float | None, typer.Option(
        help="ε of every private system for the main table (default: each paper's).")
    ] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="KEY=VALUE for every listed system that has KEY (an error if none).")
    ] = None,
    configs_dir: Annotated[Path | None, typer.Option(
        "--configs", help="Folder of tuned TOML configs (configs/<dataset>), one per system.")
    ] = None,
    task: Annotated[str, typer.Option(
        help="ranking (leave-one-out, HR/NDCG), rating (k-fold RMSE/MAE) or privrec (80/20 "
             "user split, on-device fine-tuning, HR/NDCG@5..30 against all unseen items)."
    )] = "ranking",
    folds: Folds = None,
    preset: Annotated[str | None, typer.Option(
        help="default: every system's defaults (the papers' settings except documented "
             "improvements); paper: the papers' own settings for everything; tuned: read "
             "--configs (chosen when --configs is given).")] = None,
    systems_: Annotated[str | None, typer.Option(
        "--systems", help="Comma-separated system names or variants NAME[KEY=VALUE;...] "
                          "(default: every system of the task).")] = None,
    eps_grid: Annotated[str | None, typer.Option(
        help="Comma-separated ε values for the sweep; empty to skip (default: 0.5..3 for "
             "ranking, none for rating).")] = None,
    sweep_seeds: Annotated[int, typer.Option(min=1, help="Seeds per point of the ε sweep.")
                           ] = 3,
    data_dir: DataDir = None,
    out_dir: ResultsDir = Path("results"),
) -> None:
    """Every system side by side on the same folds, an ε sweep, results JSON + CSV + plots."""
    from dprec.evaluation.results import check_output_base
    try:
        check_output_base(out_dir)
        plan = plan_comparison(dataset, task, epsilon, seeds, sweep_seeds, folds, systems_,
                               configs_dir, preset, param, eps_grid, data_dir)
    except DprecError as e:
        fail(e)
    with _terminate_as_interrupt():
        _compare_into_folder(plan, out_dir)


def run_comparison(plan: ComparisonPlan, folder: Any) -> tuple[dict, dict | None]:
    """Run every system, then the ε sweep, saving each result into ``folder`` (a
    :class:`~dprec.evaluation.results.ResultsFolder`) as it finishes; a failed system is
    recorded there and the others go on. Returns the results and the sweep (None: none)."""
    from dprec.evaluation.compare import eps_sweep, run_systems

    def failed(name: str, e: Exception) -> None:
        kind = "" if isinstance(e, DprecError) else f"{type(e).__name__}: "
        folder.record_failure(name, f"{kind}{e}")
        err.print(f"[bold red]{escape(name)} failed:[/] {escape(kind + str(e))}")

    def saved(name: str, r) -> None:  # noqa: ANN001
        if plan.files.get(name) is not None:
            cf = plan.files[name]
            r.config_file = {"path": cf.path, "provenance": cf.provenance}
        folder.save_system(name, r.to_json())

    total = (len(plan.names) * plan.seeds
             + len(plan.grid) * len(plan.private) * plan.sweep_seeds)
    with progress() as bar:
        bar_task = bar.add_task(f"compare on {plan.dataset}", total=total)

        def tick(name: str) -> None:
            bar.update(bar_task, advance=1,
                       description=f"compare on {escape(plan.dataset)}: {escape(name)}")

        results = run_systems(plan.exp, plan.names, plan.configs, tick, on_result=saved,
                              on_error=failed)
        metric, proto = SWEEP_METRIC[plan.task]
        sweep = (eps_sweep(plan.sweep_exp, [n for n in plan.private if n in results],
                           plan.configs, plan.grid, metric, proto, tick=tick, on_error=failed)
                 if plan.grid else None)
    return results, sweep


def _compare_into_folder(plan: ComparisonPlan, out_dir: Path) -> None:
    """Run the comparison into its results folder (kept as ``-incomplete`` if stopped)."""
    from dprec.evaluation.compare import save_comparison
    from dprec.evaluation.results import ResultsFolder
    folder = ResultsFolder(out_dir, plan.dataset, "compare")
    try:
        results, sweep = run_comparison(plan, folder)
        if not results:
            raise DprecError("every system failed; see the errors above")
        save_comparison(folder.path, plan.dataset, results, sweep, list(plan.exp.ks),
                        folder.failed, sweep_metric=SWEEP_METRIC[plan.task])
    except KeyboardInterrupt as e:
        how = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        kept = folder.abandon(how)
        err.print(f"{how}: finished systems kept in {kept}")
        raise typer.Exit(143 if isinstance(e, Terminated) else 130) from None
    except (DprecError, OSError) as e:
        kept = folder.abandon(str(e))
        err.print(f"[bold red]error:[/] {e}; finished systems kept in {kept}")
        raise typer.Exit(2) from None
    except Exception as e:
        folder.abandon(f"{type(e).__name__}: {e}")
        raise
    target = folder.complete()
    print_comparison(plan, {n: r.to_json() for n, r in results.items()}, sweep)
    out.print(f"saved {target} (" + ", ".join(sorted(p.name for p in target.iterdir())) + ")")
    if folder.failed:
        err.print(f"[bold red]{len(folder.failed)} run(s) failed:[/] "
                  + "; ".join(f"{k}: {v}" for k, v in folder.failed.items()))
        raise typer.Exit(1)


def _sweep_tables(plan: ComparisonPlan, sweep: dict[str, list[dict]]) -> list[Table]:
    """The sweep's metric (mean ± 95% interval over the sweep's seeds) per system and ε,
    with the per-user ε in brackets, over as many tables as fit
    :data:`~dprec.cli.tables.TABLE_WIDTH`."""
    from dprec.evaluation.intervals import format_interval
    metric, proto = SWEEP_METRIC[plan.task]
    label = {"sampled": "sampled, 99 negatives", "full-topk": "full ranking"}.get(proto, proto)
    by_eps = {n: {p["epsilon"]: p for p in pts} for n, pts in sweep.items()}
    columns = [(f"ε={e:g}", [f"{format_interval(at[e], plan.sweep_seeds)} "
                             f"[{at[e]['user_epsilon']:.3g}]" if e in at else "failed"
                             for at in by_eps.values()])
               for e in plan.grid]
    return fitted_tables(f"{metric} ({label}) against ε, {plan.sweep_seeds} seeds, mean ± "
                         "95% interval; in brackets the per-user ε", "system", list(sweep),
                         columns)


def print_comparison(plan: ComparisonPlan, docs: dict[str, dict], sweep: dict | None) -> None:
    """The main tables of the results ``docs`` and, if any, the sweep's."""
    tuned = ", ".join(f"{n} ({f.path})" for n, f in plan.files.items()) or "none"
    print_tables(f"{plan.dataset}, ε={plan.epsilon or 'paper default'}, {plan.seeds} seeds "
                 f"(mean ± 95% interval); tuned configs: {tuned}", docs)
    if sweep:
        for t in _sweep_tables(plan, sweep):
            out.print(t)


def register(app: typer.Typer) -> None:
    """Add ``dprec compare`` to ``app``."""
    app.command("compare")(compare)
