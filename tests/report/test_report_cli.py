"""`dprec report RESULTS_DIR [--out FILE] [--force]` on the command line."""

from __future__ import annotations

import json

from report_docs import plain_run
from typer.testing import CliRunner

from dprec.cli import app

runner = CliRunner()


def said(res) -> str:
    """The command's output with rich's line wrapping undone."""
    return " ".join(res.output.split())


def test_report_writes_the_page_and_refuses_to_overwrite_it(tmp_path):
    (tmp_path / "random.json").write_text(json.dumps(plain_run()))
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = tmp_path / "report.html"
    assert f"wrote {page}" in said(res) and "<article class=\"card" in page.read_text()
    again = runner.invoke(app, ["report", str(tmp_path)])
    assert again.exit_code == 2 and "exists; pass --force" in said(again)
    assert runner.invoke(app, ["report", str(tmp_path), "--force"]).exit_code == 0
    out = tmp_path / "elsewhere" / "r.html"
    assert runner.invoke(app, ["report", str(tmp_path), "--out", str(out)]).exit_code == 0
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_report_errors_are_one_line_with_what_to_do(tmp_path):
    res = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "does not exist" in said(res)
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "holds no results" in said(res)
    (tmp_path / "bad.json").write_text("{")
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "not valid JSON" in said(res)
    assert "bad.json" in "".join(res.output.split())  # rich folds a long path inside a word
    assert not (tmp_path / "report.html").exists()
