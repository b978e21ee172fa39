"""What every command of the command line shares: the consoles, the one-line error exit,
the progress bar, the options several commands take, and the data set loader.

The command modules import only this and :mod:`dprec.cli.tables` of the package, never each
other (tests/test_import_graph.py); the package face, :mod:`dprec.cli`, registers them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from dprec.data.dataset import Dataset

__all__ = [
    "DataDir", "Epsilon", "Folds", "Negatives", "Params", "ResultsDir", "Seeds", "Split", "err",
    "fail", "load_dataset", "out", "progress",
]

err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)

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
    help="Ranking: latest or random (leave-one-out), user (the PrivRec protocol), or strong "
         "/ strong:N (strong generalisation: 20% or N users held out, folded in on the "
         "device; e.g. ml-20m:gt3.5:min5 with strong:10000, the DPALS protocol). Rating: "
         "kfold or user. Default: latest for ranking, kfold for rating, user for the "
         "side-feature systems (privrec, ...).")]
Folds = Annotated[int | None, typer.Option(help="k of k-fold (rating systems, default 5).")]
Negatives = Annotated[int, typer.Option(help="Sampled negatives per test user.")]


def fail(e: Exception) -> NoReturn:
    """Print ``e`` as one line on stderr and exit with status 2."""
    err.print(f"[bold red]error:[/] {escape(str(e))}")
    raise typer.Exit(2)


def progress() -> Progress:
    """The progress bar of a long command, on stderr (stdout stays for results)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err, transient=False)


def load_dataset(name: str, data_dir: Path | None) -> Dataset:
    """The data set ``name`` (from ``data_dir`` or the cache)."""
    from dprec.data.registry import load_dataset as load
    return load(name, data_dir=data_dir)
