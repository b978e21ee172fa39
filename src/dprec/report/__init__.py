"""``dprec report``: one self-contained HTML page from a results folder (tables with their
units, the per-user-ε plot, each system's privacy card, the paper's column).

- :mod:`~dprec.report.folder`: what the folder holds, read and checked;
- :mod:`~dprec.report.view`: what the page shows, as plain values;
- :mod:`~dprec.report.page`: the jinja2 template (autoescaped) rendered and written.
"""

from dprec.report.folder import ResultsFolderError, read_results_folder
from dprec.report.page import render_report, write_report

__all__ = ["ResultsFolderError", "read_results_folder", "render_report", "write_report"]
