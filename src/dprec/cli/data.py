"""``dprec data fetch|info``: fetch a data set into the cache, and describe one."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from dprec.cli.common import DataDir, err, fail, load_dataset, out
from dprec.cli.tables import fmt_value
from dprec.errors import DprecError

__all__ = ["data_app", "data_fetch", "data_info", "register"]

data_app = typer.Typer(
    help="Fetch and inspect data sets.\n\n"
         "Downloadable: ml-100k, ml-1m, ml-10m, ml-20m, ml-25m (GroupLens; each release's size "
         "and sha256 are pinned, a corrupt download is refused). Local only: frappe, csv:PATH. "
         "Generated: synth-<users>x<items>[-<interactions>] (ML-100K's cold tail and drift in "
         "time; for new work) and synthetic-<users>x<items>[-<interactions>] (the original "
         "generator, kept so that earlier results reproduce). "
         "Any name takes the papers' user filter NAME:minN, the users with at least N "
         "interactions and the items they rated, e.g. ml-20m:min60 (seeds 000 and 003); it "
         "works wherever a data set is named (--dataset of run, compare, tune).",
    no_args_is_help=True)


def _download_bar() -> Progress:
    """A download's progress bar (bytes, speed, time left), on stderr."""
    return Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), TimeRemainingColumn(), console=err,
                    transient=False)


@data_app.command("fetch")
def data_fetch(
    name: Annotated[str, typer.Argument(
        help="Data set name, e.g. ml-100k, ml-1m, ml-20m:min60.")],
    data_dir: DataDir = None,
    url: Annotated[str | None, typer.Option(
        "--url", help="Base URL of the MovieLens zips (a mirror); default "
                      "$DPREC_GROUPLENS_URL, else files.grouplens.org.")] = None,
) -> None:
    """Fetch a data set into the local cache and verify it (ML-1M/10M/20M/25M: download
    with a progress bar, resumed after a dropped connection, checked against the release's
    pinned size and sha256)."""
    from dprec.data.grouplens import ARCHIVES, fetch_movielens
    from dprec.data.registry import split_filters
    try:
        base = split_filters(name)[0].lower()
        if base in ARCHIVES:
            bar = _download_bar()
            with bar:
                task = bar.add_task(f"{base}.zip", total=ARCHIVES[base].size)
                fetch_movielens(base, url=url,
                                progress=lambda done, total: bar.update(task, completed=done))
        ds = load_dataset(name, data_dir)
    except DprecError as e:
        fail(e)
    source = next((h for h in ds.history if h.startswith("source:")), "")
    out.print(f"{ds.name}: {ds.n_users:,} users, {ds.n_items:,} items, "
              f"{ds.n_interactions:,} interactions" + (f" ({source})" if source else ""))


@data_app.command("info")
def data_info(name: Annotated[str, typer.Argument(help="Data set name, e.g. ml-100k.")],
              data_dir: DataDir = None) -> None:
    """Users, items, interactions, sparsity and activity quantiles; then the shape
    (dprec.data.stats): popularity Gini, the top 1% of items' share of the interactions, the
    share of items with fewer than 10 users, and drift in time at the latest (held-out)
    item: drift_lift and drift_auc (its popularity just before against the user's other
    items'; 1 and 0.5 without drift), newer_auc (is it a newer item; 0.5 without drift)."""
    from dprec.data.stats import dataset_stats
    try:
        ds = load_dataset(name, data_dir)
    except DprecError as e:
        fail(e)
    table = Table(title=f"{name}")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    summary = ds.summary()
    shape = {k: v for k, v in dataset_stats(ds).items() if k in _SHAPE}
    for k, v in {**summary, **shape}.items():
        table.add_row(k, fmt_value(v) if not isinstance(v, int) else f"{v:,}")
    out.print(table)


_SHAPE = ("popularity_gini", "top1pct_share", "items_under_10", "drift_lift", "drift_auc",
          "newer_auc")
"""The rows of ``dprec data info`` beyond :meth:`Dataset.summary`."""


def register(app: typer.Typer) -> None:
    """Add ``dprec data`` to ``app``."""
    app.add_typer(data_app, name="data")
