"""The dprec command line: thin wrappers around library functions."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dprec.errors import DprecError, check_positive

if TYPE_CHECKING:
    from dprec.systems.registry import SystemOptions

app = typer.Typer(help="dprec: recommendation under differential privacy with an untrusted server.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
data_app = typer.Typer(help="Fetch and inspect data sets.", no_args_is_help=True)
app.add_typer(data_app, name="data")

err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)

DataDir = Annotated[Path | None, typer.Option(
    "--data-dir", envvar="DPREC_DATA", help="Folder holding a data set's files (else cache).")]
Seeds = Annotated[int, typer.Option("--seeds", min=1, help="Number of seeds (0..n-1).")]
ResultsDir = Annotated[Path, typer.Option("--out", help="Where results are written.")]
Neighbours = Annotated[int, typer.Option(help="Neighbour-list length K.")]
Neighbourhood = Annotated[str, typer.Option(
    help="item: the item's global top-K (Eq. 12); user: top-K among the user's items.")]
ReportsK = Annotated[int, typer.Option("--k", help="FMF-LDP reports per client per epoch.")]
Epochs = Annotated[int, typer.Option(help="Federated epochs (FCF, FMF-LDP).")]
Mechanism = Annotated[str, typer.Option(help="FMF-LDP mechanism: binary or piecewise.")]
LearningRate = Annotated[float | None, typer.Option(
    help="FCF/FMF-LDP learning rate (paper 1e-3).")]
Params = Annotated[list[str] | None, typer.Option(
    "--param", help="KEY=VALUE set on the system's config, repeatable, e.g. --param "
                    "factors=10 --param user_budget=500 (FMF-LDP), --param alpha=5.")]


def _fail(e: Exception) -> None:
    err.print(f"[bold red]error:[/] {e}")
    raise typer.Exit(2)


def _load(name: str, data_dir: Path | None):
    from dprec.data.registry import load_dataset
    return load_dataset(name, data_dir=data_dir)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err, transient=False)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4f}"
    return str(v)


@data_app.command("fetch")
def data_fetch(name: Annotated[str, typer.Argument(help="Data set name, e.g. ml-100k.")],
               data_dir: DataDir = None) -> None:
    """Fetch a data set into the local cache and verify it."""
    try:
        ds = _load(name, data_dir)
    except DprecError as e:
        _fail(e)
    out.print(f"{name}: {ds.n_users} users, {ds.n_items} items, {ds.n_interactions} interactions")


@data_app.command("info")
def data_info(name: Annotated[str, typer.Argument(help="Data set name, e.g. ml-100k.")],
              data_dir: DataDir = None) -> None:
    """Users, items, interactions, sparsity and activity quantiles."""
    try:
        ds = _load(name, data_dir)
    except DprecError as e:
        _fail(e)
    table = Table(title=f"{name}")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for k, v in ds.summary().items():
        table.add_row(k, _fmt(v) if not isinstance(v, int) else f"{v:,}")
    out.print(table)


@app.command("systems")
def systems() -> None:
    """List the systems by their command-line names."""
    from dprec.systems.registry import PRIVATE_SYSTEMS, SYSTEMS
    for n in SYSTEMS:
        out.print(f"{n}{'  (private)' if n in PRIVATE_SYSTEMS else ''}")


def _metrics_table(title: str, results: dict[str, dict], metrics: tuple[str, ...],
                   protocol: str, paper: dict[str, dict[str, float]] | None = None) -> Table:
    t = Table(title=title)
    t.add_column("system")
    for m in metrics:
        t.add_column(m, justify="right")
    if paper is not None:
        for m in metrics:
            t.add_column(f"paper {m}", justify="right", style="dim")
    t.add_column("true ε", justify="right")
    for name, r in results.items():
        row = [name]
        for m in metrics:
            v = r["metrics"][protocol][m]
            row.append(f"{v['mean']:.4f}±{v['std']:.3f}")
        if paper is not None:
            row += [_fmt(paper.get(name, {}).get(m, math.nan)) for m in metrics]
        true = r["privacy"]["true"] if r["privacy"] else None
        row.append(f"{float(true['epsilon']):.3g} {true['sides']}-sided" if true else "—")
        t.add_row(*row)
    return t


def _print_tables(title: str, docs: dict[str, dict]) -> None:
    from dprec.evaluation.compare import TABLE_METRICS
    from dprec.evaluation.paper_numbers import DPLCF_PAPER_DATASET, PAPER_ML20M
    out.print(_metrics_table(f"{title} — sampled (1 + 99 negatives); paper columns: "
                             f"{DPLCF_PAPER_DATASET}", docs, TABLE_METRICS, "sampled",
                             PAPER_ML20M))
    out.print(_metrics_table(f"{title} — full ranking (all never-seen items)", docs,
                             TABLE_METRICS, "full"))


def _pairs(params: list[str] | None) -> tuple[tuple[str, str], ...]:
    out = []
    for p in params or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise DprecError(f"--param must look like KEY=VALUE, got {p!r}")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def _options(epsilon: float | None, neighbours: int, neighbourhood: str, k: int, epochs: int,
             mechanism: str, lr: float | None, param: list[str] | None) -> SystemOptions:
    """The run options shared by `run` and `compare`, validated."""
    from dprec.systems.registry import SystemOptions
    if epsilon is not None:
        check_positive("epsilon", epsilon)
    return SystemOptions(epsilon=epsilon, neighbours=neighbours, neighbourhood=neighbourhood,
                         k=k, epochs=epochs, mechanism=mechanism, lr=lr,
                         overrides=_pairs(param))


def _results_dir(base: Path, dataset: str, what: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return base / dataset / f"{what}-{stamp}"


@app.command("run")
def run(
    system: Annotated[str, typer.Argument(help="System name, see `dprec systems`.")],
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    epsilon: Annotated[float | None, typer.Option(
        help="Privacy parameter of the mechanism (default: the paper's, 1 for DPLCF, "
             "2.5 per report for FMF-LDP).")] = None,
    neighbours: Neighbours = 20,
    neighbourhood: Neighbourhood = "item",
    k: ReportsK = 100,
    epochs: Epochs = 20,
    mechanism: Mechanism = "binary",
    lr: LearningRate = None,
    param: Params = None,
    seeds: Seeds = 5,
    split: Annotated[str, typer.Option(help="Leave-one-out rule: latest or random.")] = "latest",
    negatives: Annotated[int, typer.Option(help="Sampled negatives per test user.")] = 99,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")
                       ] = False,
    data_dir: DataDir = None,
    out_dir: ResultsDir = Path("results"),
) -> None:
    """Run one system on a data set over several seeds; print metrics and the privacy report."""
    from dprec.evaluation.runner import Experiment
    from dprec.systems.registry import make_system
    try:
        options = _options(epsilon, neighbours, neighbourhood, k, epochs, mechanism, lr, param)
        make_system(system, options)
        ds = _load(dataset, data_dir)
        exp = Experiment(ds, range(seeds), split_rule=split, n_negatives=negatives)  # type: ignore[arg-type]
        with _progress() as bar:
            task = bar.add_task(f"{system} on {dataset}", total=seeds)
            res = exp.run(lambda: make_system(system, options),
                          on_seed=lambda s: bar.advance(task))
    except DprecError as e:
        _fail(e)
    doc = res.to_json()
    path = _results_dir(out_dir, dataset, system).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=float))
    if as_json:
        sys.stdout.write(json.dumps(doc, default=float) + "\n")
        err.print(f"saved {path}")
        return
    _print_tables(f"{system} on {dataset} ({seeds} seeds, mean±std)", {system: doc})
    _print_privacy(doc)
    out.print(f"saved {path}")


def _print_privacy(doc: dict) -> None:
    p = doc["privacy"]
    if p is None:
        out.print("Privacy report: none (non-private system)")
        return
    out.print(f"[bold]Privacy report — {doc['system']}[/]")
    out.print(f"  threat model: {p['threat_model']}")
    for m in p.get("mechanisms", []):
        out.print("  mechanism: " + ", ".join(f"{k}={v}" for k, v in m.items()))
    if p.get("claimed"):
        c = p["claimed"]
        out.print(f"  published claim: ε={c['epsilon']} ({c['level']}-level, {c['sides']}-sided)")
    t = p["true"]
    out.print(f"  true guarantee:  ε={t['epsilon']}, δ={t['delta']} ({t['level']}-level, "
              f"{t['sides']}-sided, {t['model']} model)")
    for note in t.get("notes", []):
        out.print(f"    note: {note}")
    if "user_level" in p:
        u = p["user_level"]
        out.print(f"  user level (basic composition): ε={u['epsilon']} ({u['sides']}-sided)")
    if "local" in p:
        loc = p["local"]
        out.print(f"  local: ε per report {loc['epsilon_per_report']}, per round "
                  f"{loc['epsilon_per_round']}, per user over training {loc['epsilon_user']} "
                  "(basic composition)")


@app.command("compare")
def compare(
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    seeds: Seeds = 5,
    epsilon: Annotated[float | None, typer.Option(
        help="ε for the main table (default: each paper's, 1 for DPLCF, 2.5 for FMF-LDP).")
    ] = None,
    neighbours: Neighbours = 20,
    neighbourhood: Neighbourhood = "item",
    k: ReportsK = 100,
    epochs: Epochs = 20,
    mechanism: Mechanism = "binary",
    lr: LearningRate = None,
    param: Params = None,
    systems_: Annotated[str | None, typer.Option(
        "--systems", help="Comma-separated system names (default: all).")] = None,
    eps_grid: Annotated[str, typer.Option(help="Comma-separated ε values for the sweep; "
                                          "empty to skip.")] = "0.5,1,1.5,2,2.5,3",
    sweep_seeds: Annotated[int, typer.Option(help="Seeds per point of the ε sweep.")] = 3,
    data_dir: DataDir = None,
    out_dir: ResultsDir = Path("results"),
) -> None:
    """Every system side by side on the same folds, an ε sweep, results JSON + CSV + plots."""
    from dprec.evaluation.compare import (
        DEFAULT_COMPARISON,
        eps_sweep,
        private_names,
        run_systems,
        save_comparison,
    )
    from dprec.evaluation.runner import Experiment
    from dprec.systems.registry import make_system
    try:
        names = [s.strip() for s in systems_.split(",")] if systems_ else list(DEFAULT_COMPARISON)
        options = _options(epsilon, neighbours, neighbourhood, k, epochs, mechanism, lr, param)
        for n in names:
            make_system(n, options)
        grid = [float(x) for x in eps_grid.split(",") if x.strip()]
        for e in grid:
            if not e > 0:
                raise DprecError(f"every ε in --eps-grid must be > 0, got {e}")
        ds = _load(dataset, data_dir)
        exp = Experiment(ds, range(seeds))
        sweep_exp = Experiment(ds, range(sweep_seeds))
        private = private_names(names)
        total = len(names) * seeds + len(grid) * len(private) * sweep_seeds
        with _progress() as bar:
            task = bar.add_task(f"compare on {dataset}", total=total)

            def tick(name: str) -> None:
                bar.update(task, advance=1, description=f"compare on {dataset}: {name}")

            results = run_systems(exp, names, options, tick)
            sweep = eps_sweep(sweep_exp, private, options, grid, tick=tick) if grid else None
    except DprecError as e:
        _fail(e)
    target = _results_dir(out_dir, dataset, "compare")
    paths = save_comparison(target, dataset, results, sweep, list(exp.ks))
    docs = {n: r.to_json() for n, r in results.items()}
    _print_tables(f"{dataset}, ε={epsilon or 'paper default'}, K_nb={neighbours}, "
                  f"{seeds} seeds (mean±std)", docs)
    if sweep:
        t = Table(title=f"HR@10 (sampled) against ε, {sweep_seeds} seeds")
        t.add_column("system")
        for e in grid:
            t.add_column(f"ε={e:g}", justify="right")
        for n, pts in sweep.items():
            t.add_row(n, *[f"{m:.4f}±{s:.4f}" for _, m, s in pts])
        out.print(t)
    for p in paths:
        out.print(f"saved {p}")


def main() -> None:  # pragma: no cover
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
