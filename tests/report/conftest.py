"""Fixtures of the report tests; the documents they write are in :mod:`report_docs`."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_docs import write_results


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    return write_results(tmp_path / "results")


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> str:
    """The page of :func:`write_results`'s folder, rendered once per test module."""
    from dprec.report import render_report
    return render_report(write_results(tmp_path_factory.mktemp("report") / "results"))
