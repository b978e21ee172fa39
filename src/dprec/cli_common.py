"""What every part of the command line shares: the consoles, the one-line error exit, and
the parsing of data set, ``--param``, ``--epsilon`` and ``--config`` options.

``cli.py``, ``cli_serve.py`` and ``cli_audit.py`` import these from here, so no command
module imports another (tests/test_import_graph.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from dprec.errors import DprecError, check_positive

__all__ = ["err", "fail", "load_config", "load_dataset", "out", "pairs", "system_params"]

err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)


def fail(e: Exception) -> NoReturn:
    """Print ``e`` as one line on stderr and exit with status 2."""
    err.print(f"[bold red]error:[/] {escape(str(e))}")
    raise typer.Exit(2)


def load_dataset(name: str, data_dir: Path | None):
    """The data set ``name`` (from ``data_dir`` or the cache)."""
    from dprec.data.registry import load_dataset as load
    return load(name, data_dir=data_dir)


def pairs(params: list[str] | None) -> dict[str, str]:
    """``--param KEY=VALUE`` options as a dict (the last of a repeated key wins)."""
    found: dict[str, str] = {}
    for p in params or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise DprecError(f"--param must look like KEY=VALUE, got {p!r}")
        found[key.strip()] = value.strip()
    return found


def system_params(name: str, epsilon: float | None, params: dict[str, object]) -> dict:
    """--epsilon and --param for one system (the registry checks the keys)."""
    from dprec.systems.registry import spec
    out_: dict[str, object] = dict(params)
    if epsilon is not None:
        check_positive("epsilon", epsilon)
        s = spec(name)
        if "epsilon" not in s.settable():
            budget = [k for k in s.settable() if k.startswith("eps")]
            raise DprecError(f"{name} has no epsilon; set " + " and ".join(
                f"--param {k}=..." for k in budget) if budget and s.private else
                f"{name} is not private: it has no epsilon (drop --epsilon)")
        out_["epsilon"] = epsilon
    return out_


def load_config(path: Path | None, system: str):
    """The config in the TOML file ``path`` for ``system`` and the file; (None, None)
    without a file."""
    from dprec.systems.registry import make_config, read_config
    if path is None:
        return None, None
    cf = read_config(path)
    if cf.system != system:
        raise DprecError(f"config file {path} is for {cf.system}, not {system}")
    return make_config(system, cf.params), cf
