"""The dprec command line: thin wrappers around library functions."""

from __future__ import annotations

import json
import logging
import math
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dprec.cli_audit import register as register_audit_commands
from dprec.cli_common import err, out
from dprec.cli_common import fail as _fail
from dprec.cli_common import load_config as _load_config
from dprec.cli_common import load_dataset as _load
from dprec.cli_common import pairs as _pairs
from dprec.cli_common import system_params as _system_params
from dprec.cli_serve import register as register_serve_commands
from dprec.errors import DprecError, check_positive

__all__ = [
    "DataDir", "Epsilon", "Params", "ResultsDir", "Seeds", "Split", "Terminated", "app", "compare",
    "data_app", "data_fetch", "data_info", "main", "privacy_app", "privacy_gaussian",
    "privacy_table", "run", "systems", "tune_cmd",
]

app = typer.Typer(help="dprec: recommendation under differential privacy with an untrusted server.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
data_app = typer.Typer(help="Fetch and inspect data sets.", no_args_is_help=True)
app.add_typer(data_app, name="data")
privacy_app = typer.Typer(help="Privacy accounting tables and calculators.", no_args_is_help=True)
app.add_typer(privacy_app, name="privacy")
register_serve_commands(app)  # dprec serve ..., dprec simulate (cli_serve.py)
register_audit_commands(app)  # dprec audit (cli_audit.py)


DataDir = Annotated[Path | None, typer.Option(
    "--data-dir", envvar="DPREC_DATA", help="Folder holding a data set's files (else cache).")]
Seeds = Annotated[int, typer.Option("--seeds", min=1, help="Number of seeds (0..n-1).")]
ResultsDir = Annotated[Path, typer.Option("--out", help="Where results are written.")]
Epsilon = Annotated[float | None, typer.Option(
    help="Sets the system's `epsilon` (default: the paper's, 1 per bit for the DPLCF family, "
         "2.5 per report for FMF-LDP). An error for non-private systems.")]
Params = Annotated[list[str] | None, typer.Option(
    "--param", help="KEY=VALUE set on the system's config, repeatable, e.g. --param "
                    "neighbours=10 --param k=50. `dprec systems NAME` lists the keys.")]
Split = Annotated[str | None, typer.Option(
    help="Ranking: latest or random (leave-one-out), or user (the PrivRec protocol). Rating: "
         "kfold or user. Default: latest for ranking, kfold for rating, user for the "
         "side-feature systems (privrec, ...).")]

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
def systems(name: Annotated[str | None, typer.Argument(
        help="A system: print its options with their docs and defaults.")] = None) -> None:
    """List the systems, or one system's options (config fields, docs, defaults)."""
    from dprec.systems.registry import SYSTEMS, config_fields, spec
    if name is None:
        t = Table(title="systems (`dprec systems NAME` for options)")
        for col in ("name", "task", "private", "what"):
            t.add_column(col)
        for n, s in SYSTEMS.items():
            t.add_row(n, s.task, "yes" if s.private else "no", s.summary)
        out.print(t)
        return
    try:
        s = spec(name)
    except DprecError as e:
        _fail(e)
    t = Table(title=f"{name}: {s.summary} ({s.task}, {'private' if s.private else 'not private'})")
    for col in ("option", "type", "default", "what"):
        t.add_column(col)
    for field, tp, default, doc, fixed in config_fields(name):
        t.add_row(field, tp, f"{default}" + (" (fixed)" if fixed else ""), doc)
    out.print(t)
    out.print("set with --param KEY=VALUE or --config FILE.toml (see `dprec tune`)")


def _table_metrics(docs: dict[str, dict], protocol: str) -> tuple[str, ...]:
    """The metric columns: the standard ranking set where present, else all the results have."""
    from dprec.evaluation.compare import table_metrics
    return table_metrics(list(next(iter(docs.values()))["metrics"][protocol]))


def _eps(g: dict | None) -> str:
    if not g:
        return "—"
    eps = g["epsilon"]
    text = "∞" if eps == "inf" else f"{float(eps):.3g}"
    return text + (f", δ={g['delta']:.0e}" if g.get("delta") else "")


def _metrics_table(title: str, results: dict[str, dict], protocol: str,
                   paper: dict[str, dict[str, float]] | None = None) -> Table:
    metrics = _table_metrics(results, protocol)
    t = Table(title=title)
    t.add_column("system")
    for m in metrics:
        t.add_column(m, justify="right")
    if paper is not None:
        for m in metrics:
            t.add_column(f"paper {m}", justify="right", style="dim")
    for col in ("ε per interaction", "ε per user", "ε per user (basic)", "sides"):
        t.add_column(col, justify="right")
    for name, r in results.items():
        row = [escape(name)]
        for m in metrics:
            v = r["metrics"][protocol][m]
            row.append(f"{v['mean']:.4f}±{v['std']:.3f}")
        if paper is not None:
            row += [_fmt(paper.get(name, {}).get(m, math.nan)) for m in metrics]
        levels = (r["privacy"] or {}).get("levels") or {}
        row += [_eps(levels.get("event")), _eps(levels.get("user")),
                _eps(levels.get("user_basic")),
                levels["user"]["sides"] if levels else "—"]
        t.add_row(*row)
    return t


def _print_tables(title: str, docs: dict[str, dict]) -> None:
    from dprec.evaluation.paper_numbers import DPLCF_PAPER_DATASET, PAPER_ML20M
    protocols = list(next(iter(docs.values()))["metrics"])
    for proto in protocols:
        if proto == "sampled":
            out.print(_metrics_table(f"{title} — sampled (1 + negatives); paper columns: "
                                     f"{DPLCF_PAPER_DATASET}", docs, proto, PAPER_ML20M))
        elif proto == "full":
            out.print(_metrics_table(f"{title} — full ranking (all never-seen items)", docs,
                                     proto))
        else:
            out.print(_metrics_table(f"{title} — {proto}", docs, proto))


def _check_folds(task: str, split: str | None, folds: int | None) -> None:
    """--folds sets k of k-fold, so it is an error anywhere else (leave-one-out ranking,
    the user split), rather than silently ignored."""
    if folds is None:
        return
    if task != "rating" or (split or "kfold") != "kfold":
        how = ("the PrivRec user split" if task == "privrec" else "leave-one-out (one fold "
               "per seed)" if task == "ranking" else "the user split")
        raise DprecError(f"--folds sets k of k-fold rating runs; this run uses {how}: drop "
                         "--folds")
    if folds < 2:
        raise DprecError(f"--folds must be >= 2, got {folds}")


def _check_seeds(seeds: int) -> None:
    from dprec.evaluation.runner import check_seed_count
    check_seed_count(seeds)


def _experiment(task: str, ds, seeds: int, split: str | None, negatives: int,
                folds: int | None):
    """The experiment of a task: leave-one-out ranking, k-fold / user-split rating, or the
    PrivRec protocol ("privrec": 80/20 user split, fine-tune half on the device)."""
    from dprec.evaluation.ranking import RankingEvaluator
    from dprec.evaluation.runner import Experiment
    from dprec.evaluation.split import LeaveOneOutSplit
    if task == "privrec":
        from dprec.evaluation.split import UserSplit
        from dprec.evaluation.user_ranking import UserRankingEvaluator
        if split not in (None, "user"):
            raise DprecError(f"the PrivRec protocol uses the user split, got --split {split}")
        return Experiment(ds, range(seeds), UserSplit(0.2), UserRankingEvaluator())
    if task == "ranking":
        rule = split or "latest"
        if rule not in ("latest", "random"):
            raise DprecError(f"--split for a ranking system must be latest or random, got {rule}")
        return Experiment(ds, range(seeds), LeaveOneOutSplit(rule),  # type: ignore[arg-type]
                          RankingEvaluator(negatives))
    from dprec.evaluation.rating import RatingEvaluator
    from dprec.evaluation.split import KFoldSplit, UserSplit
    kind = split or "kfold"
    if kind == "kfold":
        return Experiment(ds, range(seeds), KFoldSplit(folds or 5), RatingEvaluator())
    if kind == "user":
        return Experiment(ds, range(seeds), UserSplit(), RatingEvaluator())
    raise DprecError(f"--split for a rating system must be kfold or user, got {kind}")


def _task_of(system: str, split: str | None) -> str:
    """The experiment a system runs in: its task, or "privrec" for side-feature systems and
    for a ranking system asked for ``--split user``."""
    from dprec.systems.registry import spec
    s = spec(system)
    if s.protocol == "user-split" or (s.task == "ranking" and split == "user"):
        return "privrec"
    return s.task


@app.command("run")
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
    negatives: Annotated[int, typer.Option(help="Sampled negatives per test user.")] = 99,
    folds: Annotated[int | None, typer.Option(
        help="k of k-fold (rating systems, default 5).")] = None,
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
             "clients, a different draw). DPLCF family and fmf-ldp.")] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Join this Ray cluster (e.g. auto after `ray start --head`); "
                              "default: start a local Ray with this machine's CPUs.")] = None,
    shards: Annotated[int | None, typer.Option(
        min=1, help="Shards for --backend (default: 1 local, one per CPU on Ray).")] = None,
) -> None:
    """Run one system on a data set over several seeds; print metrics and the privacy report."""
    from dprec.evaluation.results import (
        check_output_base,
        new_result_file,
        strict_json_text,
        write_json,
    )
    from dprec.systems.registry import check_model_memory, make_config, make_system, spec
    runner = None
    try:
        check_output_base(out_dir)
        s = spec(system)
        _check_seeds(seeds)
        _check_folds(_task_of(system, split), split, folds)
        base, cf = _load_config(config, system)
        if preset not in ("default", "paper"):
            raise DprecError(f"--preset must be default or paper, got {preset!r}")
        if preset == "paper":
            if cf is not None:
                raise DprecError("--preset paper and --config both set the config; use one")
            base = s.paper_config()
        params = _system_params(system, epsilon, _pairs(param))
        probe = make_system(system, params, base)
        cfg = make_config(system, params, base)
        check_model_memory(system, cfg)
        if backend is not None:
            from dprec.distributed import make_backend
            if not hasattr(probe, "transport"):
                raise DprecError(f"{system} has no sharded backend; the DPLCF family and "
                                 "fmf-ldp do")
            runner = make_backend(backend, ray_address, shards, keep_warm=True)
            runner.prestart()  # Ray's workers boot while the data load; every seed reuses them
        elif ray_address is not None or shards is not None:
            raise DprecError("--ray-address and --shards need --backend")
        ds = _load(dataset, data_dir)
        check_model_memory(system, cfg, ds.n_users, ds.n_items)
        exp = _experiment(_task_of(system, split), ds, seeds, split, negatives, folds)
        exp.check_memory()

        def make():  # type: ignore[no-untyped-def]
            model = make_system(system, params, base)
            if runner is not None:
                model.transport = runner
            return model

        with _progress() as bar:
            task = bar.add_task(f"{system} on {dataset}", total=seeds)
            res = exp.run(make, on_seed=lambda _: bar.advance(task), curve_every=curve_every)
    except DprecError as e:
        _fail(e)
    finally:
        if runner is not None:
            runner.close()
    if cf is not None:
        res.config_file = {"path": cf.path, "provenance": cf.provenance}
    doc = res.to_json()
    if backend is not None:
        doc["backend"] = {"name": backend, "shards": shards, "ray_address": ray_address}
    path = write_json(new_result_file(out_dir, dataset, system), doc)
    if as_json:
        sys.stdout.write(strict_json_text(doc) + "\n")
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
    out.print(f"  threat model: {escape(str(p['threat_model']))}")
    for m in p.get("mechanisms", []):
        out.print("  mechanism: " + escape(", ".join(f"{k}={v}" for k, v in m.items())))
    if p.get("claimed"):
        c = p["claimed"]
        out.print(f"  published claim: ε={c['epsilon']} ({c['level']}-level, {c['sides']}-sided)")
    true = p.get("true") or {}
    if true:
        out.print(f"  true guarantee: {_eps(true)} ({true['level']}-level, {true['sides']}-sided, "
                  f"{true['model']} model)")
        for note in true.get("notes", []):
            out.print(f"    note: {escape(str(note))}")
    names = {"event": "per interaction", "user": "per user", "user_basic": "per user (basic)"}
    for level, g in (p.get("levels") or {}).items():
        if g is None:
            continue
        out.print(f"  {names.get(level, level)}: {_eps(g)} ({g['sides']}-sided, "
                  f"{g['model']} model)")
        for note in g.get("notes", []):
            out.print(f"    note: {escape(str(note))}")
    if "local" in p:
        loc = p["local"]
        out.print(f"  local: ε per report {loc['epsilon_per_report']}, per round "
                  f"{loc['epsilon_per_round']}, per user over training {loc['epsilon_user']} "
                  "(basic composition)")


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


def _compare_configs(labels: list[str], configs_dir: Path | None, preset: str,
                     epsilon: float | None, params: dict[str, str]) -> tuple[dict, dict]:
    """Each label's config: tuned file (if any) + its own [KEY=VALUE] + --epsilon + --param."""
    from dprec.systems.registry import make_config, parse_label, read_config, spec
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


@app.command("compare")
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
    folds: Annotated[int | None, typer.Option(help="k of k-fold (rating, default 5).")
                     ] = None,
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
    from dprec.evaluation.compare import (
        DEFAULT_COMPARISON,
        DEFAULT_PRIVREC_COMPARISON,
        DEFAULT_RATING_COMPARISON,
        private_names,
    )
    from dprec.evaluation.results import check_output_base
    from dprec.systems.registry import check_model_memory, make_config, parse_label, spec
    try:
        check_output_base(out_dir)
        if task not in ("ranking", "rating", "privrec"):
            raise DprecError(f"--task must be ranking, rating or privrec, got {task!r}")
        _check_seeds(max(seeds, sweep_seeds))
        _check_folds(task, None, folds)
        default = {"ranking": DEFAULT_COMPARISON, "rating": DEFAULT_RATING_COMPARISON,
                   "privrec": DEFAULT_PRIVREC_COMPARISON}[task]
        names = _split_labels(systems_) if systems_ else list(default)
        for n in names:
            sp_ = spec(parse_label(n)[0])
            kind = "privrec" if sp_.task == "ranking" and task == "privrec" else sp_.task
            if kind != task:
                raise DprecError(f"--task {task}: {n} is a {kind} system (use --task {kind})")
            if task == "ranking" and sp_.protocol == "user-split":
                raise DprecError(f"--task ranking: {n} is evaluated on the PrivRec protocol "
                                 "(use --task privrec)")
        if eps_grid is None:
            eps_grid = "0.5,1,1.5,2,2.5,3" if task == "ranking" else ""
        if epsilon is not None:
            check_positive("epsilon", epsilon)
        if preset is None:
            preset = "tuned" if configs_dir is not None else "default"
        configs, files = _compare_configs(names, configs_dir, preset, epsilon, _pairs(param))
        grid = []
        for x in eps_grid.split(","):
            if not x.strip():
                continue
            try:
                grid.append(float(x))
            except ValueError:
                raise DprecError(f"--eps-grid must hold numbers, got {x.strip()!r}") from None
        for e in grid:
            if not e > 0:
                raise DprecError(f"every ε in --eps-grid must be > 0, got {e}")
        private = private_names(names)
        if grid:
            private = [n for n in private if "epsilon" in spec(parse_label(n)[0]).settable()]
        for n in private:
            for e in grid:
                make_config(parse_label(n)[0], {"epsilon": e}, configs[n])
        for n in names:
            check_model_memory(n, configs[n])
        ds = _load(dataset, data_dir)
        for n in names:
            check_model_memory(n, configs[n], ds.n_users, ds.n_items)
        exp = _experiment(task, ds, seeds, None, 99, folds)
        sweep_exp = _experiment(task, ds, sweep_seeds, None, 99, folds)
        exp.check_memory()
        sweep_exp.check_memory()
    except DprecError as e:
        _fail(e)
    with _terminate_as_interrupt():
        _compare_into_folder(out_dir, dataset, epsilon, seeds, sweep_seeds, names, configs,
                             files, private, grid, exp, sweep_exp, task)


def _compare_into_folder(out_dir: Path, dataset: str, epsilon: float | None, seeds: int,
                         sweep_seeds: int, names: list[str], configs: dict, files: dict,
                         private: list[str], grid: list[float], exp, sweep_exp,  # noqa: ANN001
                         task: str) -> None:
    """Run the comparison into its results folder (kept as ``-incomplete`` if stopped)."""
    from dprec.evaluation.compare import eps_sweep, run_systems, save_comparison
    from dprec.evaluation.results import ResultsFolder
    folder = ResultsFolder(out_dir, dataset, "compare")

    def failed(name: str, e: Exception) -> None:
        kind = "" if isinstance(e, DprecError) else f"{type(e).__name__}: "
        folder.record_failure(name, f"{kind}{e}")
        err.print(f"[bold red]{escape(name)} failed:[/] {escape(kind + str(e))}")

    def saved(name: str, r) -> None:  # noqa: ANN001
        if files.get(name) is not None:
            cf = files[name]
            r.config_file = {"path": cf.path, "provenance": cf.provenance}  # type: ignore[attr-defined]
        folder.save_system(name, r.to_json())

    total = len(names) * seeds + len(grid) * len(private) * sweep_seeds
    try:
        with _progress() as bar:
            bar_task = bar.add_task(f"compare on {dataset}", total=total)

            def tick(name: str) -> None:
                bar.update(bar_task, advance=1,
                           description=f"compare on {escape(dataset)}: {escape(name)}")

            results = run_systems(exp, names, configs, tick, on_result=saved, on_error=failed)
            metric, proto = {"ranking": ("HR@10", "sampled"), "rating": ("RMSE", "rating"),
                             "privrec": ("HR@10", "full")}[task]
            sweep = (eps_sweep(sweep_exp, [n for n in private if n in results], configs, grid,
                               metric, proto, tick=tick, on_error=failed) if grid else None)
        if not results:
            raise DprecError("every system failed; see the errors above")
        save_comparison(folder.path, dataset, results, sweep, list(exp.ks), folder.failed)
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
    docs = {n: r.to_json() for n, r in results.items()}
    tuned = ", ".join(f"{n} ({f.path})" for n, f in files.items()) or "none"  # type: ignore[attr-defined]
    _print_tables(f"{dataset}, ε={epsilon or 'paper default'}, {seeds} seeds (mean±std); "
                  f"tuned configs: {tuned}", docs)
    if sweep:
        t = Table(title=f"{metric} ({proto}) against ε, {sweep_seeds} seeds; in brackets the "
                        "per-user ε")
        t.add_column("system")
        for e in grid:
            t.add_column(f"ε={e:g}", justify="right")
        for n, pts in sweep.items():
            by_eps = {p["epsilon"]: p for p in pts}
            t.add_row(escape(n), *[f"{by_eps[e]['mean']:.4f}±{by_eps[e]['std']:.4f} "
                           f"[{by_eps[e]['user_epsilon']:.3g}]" if e in by_eps else "failed"
                           for e in grid])
        out.print(t)
    out.print(f"saved {target} (" + ", ".join(sorted(p.name for p in target.iterdir())) + ")")
    if folder.failed:
        err.print(f"[bold red]{len(folder.failed)} run(s) failed:[/] "
                  + "; ".join(f"{k}: {v}" for k, v in folder.failed.items()))
        raise typer.Exit(1)


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


@app.command("tune")
def tune_cmd(
    system: Annotated[str, typer.Argument(help="System name, see `dprec systems`.")],
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    grid: Annotated[Path | None, typer.Option(
        help="TOML with [grid] KEY = [values]; default: the system's paper grid.")] = None,
    metric: Annotated[str | None, typer.Option(
        help="Validation metric (default HR@10 for ranking, RMSE for rating).")] = None,
    epsilon: Epsilon = None,
    param: Params = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Seeds (0..n-1).")] = 2,
    split: Split = None,
    negatives: Annotated[int, typer.Option(help="Sampled negatives per user.")] = 99,
    folds: Annotated[int | None, typer.Option(
        help="k of k-fold (rating systems, default 5).")] = None,
    out_path: Annotated[Path | None, typer.Option(
        "--out", help="Config to write (default configs/<dataset>/<system>.toml).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing config file.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Grid search on validation data carved out of each training fold; writes a TOML config
    that `dprec run SYSTEM --config FILE` and `dprec compare --configs DIR` reuse."""
    from dprec.evaluation.ranking import RankingEvaluator
    from dprec.evaluation.results import check_output_base, write_new_text
    from dprec.evaluation.tuning import default_grid, grid_points, tune
    from dprec.systems.registry import check_model_memory, config_to_toml, make_config, spec
    try:
        s = spec(system)
        _check_seeds(seeds)
        base = make_config(system, _system_params(system, epsilon, _pairs(param)))
        g = _read_grid(grid) if grid is not None else default_grid(system)
        points = grid_points(g)
        configs = [make_config(system, p, base, typed=True) for p in points]
        for c in configs:
            check_model_memory(system, c)
        kind = _task_of(system, split)
        _check_folds(kind, split, folds)
        metric = metric or ("HR@10" if s.task == "ranking" else "RMSE")
        ks = (5, 10, 20, 30) if kind == "privrec" else RankingEvaluator(negatives).ks
        allowed = (["RMSE", "MAE"] if s.task == "rating" else
                   [f"{m}@{k}" for m in ("HR", "NDCG") for k in ks])
        if metric not in allowed:
            raise DprecError(f"metric {metric} is not measured for a {s.task} system; "
                             f"choose one of {', '.join(allowed)}")
        target = out_path or Path("configs") / dataset / f"{system}.toml"
        if target.exists() and not force:
            raise DprecError(f"{target} exists; pass --force to overwrite it or --out elsewhere")
        if target.is_dir():
            raise DprecError(f"--out {target} is a folder; name the config file to write")
        check_output_base(target.parent)
        ds = _load(dataset, data_dir)
        for c in configs:
            check_model_memory(system, c, ds.n_users, ds.n_items)
        exp = _experiment(kind, ds, seeds, split, negatives, folds)
        exp.check_memory()
        n_folds = len(exp.folds(exp.seeds[0]))
        command = "dprec tune " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
        with _progress() as bar:
            task = bar.add_task(f"tune {system} on {dataset}",
                                total=len(points) * seeds * n_folds)
            res = tune(system, exp, g, metric, protocol="full" if kind == "privrec" else None,
                       base=base, command=command,
                       tick=lambda: bar.advance(task))
    except DprecError as e:
        _fail(e)
    t = Table(title=f"{system} on {dataset}: validation {metric} ({seeds} seeds)")
    for k in g:
        t.add_column(k)
    t.add_column(metric, justify="right")
    for row in res.scores:
        mark = " ◀" if all(row[k] == res.best[k] for k in g) else ""
        t.add_row(*[str(row[k]) for k in g], f"{row['score']:.4f}{mark}")
    out.print(t)
    try:
        saved = write_new_text(target, config_to_toml(system, res.config, res.provenance),
                               overwrite=force)
    except (DprecError, OSError) as e:
        _fail(DprecError(f"cannot write {target}: {e}"))
    if saved != target:
        err.print(f"[yellow]warning:[/] {escape(str(target))} was written by another run "
                  f"while this one tuned; it is kept, and this config is saved as "
                  f"{escape(str(saved))}")
    out.print(f"best {res.best} ({metric} {res.best_score:.4f}); saved {saved}")
    out.print(f"reuse: dprec run {system} --config {saved}")


@privacy_app.command("table")
def privacy_table(
    name: Annotated[str, typer.Argument(help="Which published table: privrec.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list on stdout.")] = False,
) -> None:
    """A published accountant table beside our reproduction and the correct accounting."""
    from dprec.privacy.gaussian import privrec_table
    if name != "privrec":
        _fail(DprecError(f"unknown table {name!r}; known: privrec"))
    rows = privrec_table()
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    t = Table(title="DP-PrivRec Table 3 (z = 1, 1000 rounds, N = 4,800): eps")
    for col in ("q", "delta", "paper (replace-one)",
                "reproduced (1000 x M steps, classic; replace-one)",
                "correct: RDP without replacement (replace-one)",
                "PLD, Poisson sampling (add/remove-one)"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(f"{round(r['q'] * 4800)}/4800", f"{r['delta']:.0e}", f"{r['paper']:.4f}",
                  f"{r['reproduced']:.4f}", f"{r['rdp_without_replacement']:.4f}",
                  f"{r['pld_poisson']:.4f}")
    out.print(t)
    out.print("The paper composes the Gaussian step 1000 x M times (over-counting by M); "
              "Algorithm 2 runs 1000 fixed-size batches drawn without replacement.")
    from dprec.privacy.accounting import gaussian_rdp_epsilon
    from dprec.privacy.gaussian import privrec_effective_noise
    z_eff = privrec_effective_noise(1.0, 0.7)
    eps = [gaussian_rdp_epsilon(z_eff, m / 4800, 1000, 1e-6, "fixed_size_replace_one",
                                dataset_size=4800) for m in (5, 30)]
    out.print(f"Both queries as implemented (h = 0.7; the clip indicator's replace-one "
              f"sensitivity is 1/M, not the 2/M its sigma_b assumes): effective z = "
              f"{z_eff:.3f} instead of 1, eps at delta 1e-6 = {eps[0]:.4f} (M = 5) and "
              f"{eps[1]:.4f} (M = 30), RDP without replacement.")


@privacy_app.command("gaussian")
def privacy_gaussian(
    noise_multiplier: Annotated[float | None, typer.Option(help="Noise std / sensitivity.")
                                ] = None,
    sampling_rate: Annotated[float, typer.Option(help="Sampling rate q in (0, 1].")] = 0.01,
    steps: Annotated[int, typer.Option(help="Number of steps.")] = 1000,
    delta: Annotated[float, typer.Option(help="Target delta.")] = 1e-6,
    target_epsilon: Annotated[float | None, typer.Option(
        help="Instead: the noise multiplier that reaches this eps (RDP, Poisson).")] = None,
) -> None:
    """eps of the sampled Gaussian mechanism by every accountant, or the noise for an eps."""
    from dprec.privacy.gaussian import gaussian_epsilons, noise_multiplier_for
    try:
        if (noise_multiplier is None) == (target_epsilon is None):
            raise DprecError("give exactly one of --noise-multiplier and --target-epsilon")
        if target_epsilon is not None:
            z = noise_multiplier_for(target_epsilon, sampling_rate, steps, delta)
            out.print(f"noise multiplier {z:.4f} reaches eps <= {target_epsilon:g} at "
                      f"delta={delta:g} (RDP, Poisson sampling, q={sampling_rate:g}, "
                      f"{steps} steps)")
            return
        assert noise_multiplier is not None
        eps = gaussian_epsilons(noise_multiplier, sampling_rate, steps, delta)
    except DprecError as e:
        _fail(e)
    t = Table(title=f"sampled Gaussian: z={noise_multiplier:g}, q={sampling_rate:g}, "
                    f"{steps} steps, delta={delta:g}")
    from dprec.privacy.gaussian import ADJACENCY
    t.add_column("accountant")
    t.add_column("adjacency")
    t.add_column("eps", justify="right")
    for k, v in eps.items():
        t.add_row(k, ADJACENCY[k], "n/a" if math.isnan(v) else f"{v:.4f}")
    out.print(t)


def main() -> None:  # pragma: no cover
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
