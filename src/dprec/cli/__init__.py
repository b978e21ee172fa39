"""The dprec command line: thin wrappers around library functions, one module per command
group, registered here on :data:`app` (the ``dprec`` console script is :func:`main`).

- :mod:`~dprec.cli.run`, :mod:`~dprec.cli.compare`, :mod:`~dprec.cli.tune`,
  :mod:`~dprec.cli.systems`: evaluate, compare, tune and list the systems;
- :mod:`~dprec.cli.data`, :mod:`~dprec.cli.privacy`: ``dprec data ...``, ``dprec privacy ...``;
- :mod:`~dprec.cli.serve`: ``dprec serve ...`` and ``dprec simulate``;
- :mod:`~dprec.cli.audit`: ``dprec audit``;
- :mod:`~dprec.cli.report`: ``dprec report``, one HTML page of a results folder;
- :mod:`~dprec.cli.common`, :mod:`~dprec.cli.tables`: what they share (consoles, options,
  progress, result tables). The command modules import only these two, never each other.
"""

from __future__ import annotations

import logging
import sys

import typer

from dprec.cli import audit, compare, data, privacy, report, run, serve, systems, tune

__all__ = ["app", "main"]

app = typer.Typer(help="dprec: recommendation under differential privacy with an untrusted server.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
for _group in (data, privacy, serve, audit, systems, run, compare, report, tune):  # help's order
    _group.register(app)


def main() -> None:  # pragma: no cover
    """The ``dprec`` console script."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    app()
