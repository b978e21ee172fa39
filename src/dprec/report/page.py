"""The report page: the view of a results folder rendered by the package's jinja2 template
(autoescaping on: every value from the results is escaped) into one self-contained HTML
file, never written over an existing file unless asked."""

from __future__ import annotations

import time
from pathlib import Path

import jinja2

import dprec
from dprec.evaluation.results import write_new_text
from dprec.report.folder import ResultsFolderError, read_results_folder
from dprec.report.view import report_view

__all__ = ["REPORT_NAME", "TEMPLATE", "environment", "render_report", "write_report"]

REPORT_NAME = "report.html"
"""The page's name inside the results folder when no other path is given."""
TEMPLATE = "report.html.j2"
"""The page's template, a package data file under ``dprec/report/templates``."""


def environment() -> jinja2.Environment:
    """The template environment: the package's templates, autoescaping on for every
    template, and an undefined name an error (never an empty cell)."""
    return jinja2.Environment(loader=jinja2.PackageLoader("dprec.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def render_report(results_dir: Path) -> str:
    """The report of ``results_dir`` as one HTML page (images inline, no external link)."""
    view = report_view(read_results_folder(Path(results_dir)))
    return environment().get_template(TEMPLATE).render(
        **view, version=dprec.__version__,
        generated=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))


def write_report(results_dir: Path, out: Path | None = None, force: bool = False) -> Path:
    """Write the report of ``results_dir`` to ``out`` (default ``results_dir/report.html``)
    and return where it went. An existing file is refused unless ``force``."""
    target = Path(out) if out is not None else Path(results_dir) / REPORT_NAME
    if target.is_dir():
        raise ResultsFolderError(f"--out {target} is a folder; give a file name such as "
                                 f"{target / REPORT_NAME}")
    if target.exists() and not force:
        raise ResultsFolderError(f"{target} exists; pass --force to replace it, or --out to "
                                 "write elsewhere")
    text = render_report(Path(results_dir))
    written = write_new_text(target, text, overwrite=force)
    written.chmod(0o644)  # a page to share: readable, like the results beside it
    return written
