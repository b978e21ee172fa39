"""``dprec data fetch|info``: fetch a data set into the cache, and describe one."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from dprec.cli.common import DataDir, fail, load_dataset, out
from dprec.cli.tables import fmt_value
from dprec.errors import DprecError

__all__ = ["data_app", "data_fetch", "data_info", "register"]

data_app = typer.Typer(help="Fetch and inspect data sets.", no_args_is_help=True)


@data_app.command("fetch")
def data_fetch(name: Annotated[str, typer.Argument(help="Data set name, e.g. ml-100k.")],
               data_dir: DataDir = None) -> None:
    """Fetch a data set into the local cache and verify it."""
    try:
        ds = load_dataset(name, data_dir)
    except DprecError as e:
        fail(e)
    out.print(f"{name}: {ds.n_users} users, {ds.n_items} items, {ds.n_interactions} interactions")


@data_app.command("info")
def data_info(name: Annotated[str, typer.Argument(help="Data set name, e.g. ml-100k.")],
              data_dir: DataDir = None) -> None:
    """Users, items, interactions, sparsity and activity quantiles."""
    try:
        ds = load_dataset(name, data_dir)
    except DprecError as e:
        fail(e)
    table = Table(title=f"{name}")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for k, v in ds.summary().items():
        table.add_row(k, fmt_value(v) if not isinstance(v, int) else f"{v:,}")
    out.print(table)


def register(app: typer.Typer) -> None:
    """Add ``dprec data`` to ``app``."""
    app.add_typer(data_app, name="data")
