"""``dprec report``: one self-contained HTML page from a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dprec.cli.common import fail, out
from dprec.errors import DprecError

__all__ = ["register", "report"]


def report(
    results_dir: Annotated[Path, typer.Argument(
        help="A results folder: what `dprec compare`, `dprec run` or an experiment wrote "
             "(e.g. results, or one comparison inside it).")],
    out_path: Annotated[Path | None, typer.Option(
        "--out", help="Where the page goes (default: RESULTS_DIR/report.html).")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace the page if it exists (else an existing file is refused).")
    ] = False,
) -> None:
    """One HTML page (images inline) of a results folder: the tables with their units, the
    per-user-ε plot, each system's privacy card and the paper's numbers."""
    from dprec.report import write_report
    try:
        path = write_report(results_dir, out_path, force=force)
    except DprecError as e:
        fail(e)
    out.print(f"wrote {path}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``dprec report`` to ``app``."""
    app.command("report")(report)
