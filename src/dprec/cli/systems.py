"""``dprec systems``: the registered systems, or one system's options."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from dprec.cli.common import fail, out
from dprec.errors import DprecError

__all__ = ["register", "systems"]


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
        fail(e)
    t = Table(title=f"{name}: {s.summary} ({s.task}, {'private' if s.private else 'not private'})")
    for col in ("option", "type", "default", "what"):
        t.add_column(col)
    for field, tp, default, doc, fixed in config_fields(name):
        t.add_row(field, tp, f"{default}" + (" (fixed)" if fixed else ""), doc)
    out.print(t)
    out.print("set with --param KEY=VALUE or --config FILE.toml (see `dprec tune`)")


def register(app: typer.Typer) -> None:
    """Add ``dprec systems`` to ``app``."""
    app.command("systems")(systems)
