"""`dprec report`'s page: the tables with units and the paper's column, one privacy card per
system, images inline only, everything from the results escaped, and clear errors."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_docs import HOSTILE, comparison_doc, plain_run, privacy

from dprec.report import ResultsFolderError, render_report, write_report
from dprec.report import view as view_module

PNG = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """Tags, attributes, and each table's caption, headers and cells."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.tables: list[dict] = []
        self.texts: list[str] = []
        self._into: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append({"caption": "", "th": [], "td": []})
        if tag in ("caption", "th", "td") and self.tables:
            self._into = tag
            self.tables[-1][tag if tag != "caption" else "caption"] = (
                self.tables[-1][tag] + [""] if tag != "caption" else "")

    def handle_endtag(self, tag):
        if tag in ("caption", "th", "td"):
            self._into = None

    def handle_data(self, data):
        self.texts.append(data)
        if self._into == "caption":
            self.tables[-1]["caption"] += data
        elif self._into in ("th", "td"):
            self.tables[-1][self._into][-1] += data

    def table(self, caption: str, row: str) -> dict:
        """The table of ``caption`` that has a row ``row``."""
        return next(t for t in self.tables if t["caption"] == caption and row in t["th"])


@pytest.fixture
def page(report_html: str) -> Page:
    return Page(report_html)


def test_the_metric_tables_carry_units_and_the_papers_column(page):
    sampled = page.table("sampled (99 negatives)", "dplcf-sp")
    assert "HR@10share of test users, 0–1" in sampled["th"]
    assert "NDCG@100–1; 1/log2(rank + 1)" in sampled["th"]
    assert "HR@10 paperML-20M (paper)" in sampled["th"]
    # dplcf-sp's row: ours (0.0700 ± its 95% interval over 2 seeds: t_{.975,1} 0.01 / √2
    # = 0.0898), then the paper's 0.7000 (Table 3, ML-20M)
    assert "0.0700 ± 0.0898" in sampled["td"] and "0.7000" in sampled["td"]
    full = page.table("full ranking, random ties", "dplcf-sp")
    assert not any(h.endswith("(paper)") for h in full["th"])  # the paper ranked sampled only
    priv = page.table("privacy", "dplcf-sp")
    assert "ε per usernats, tightest sound analysis" in priv["th"]
    assert "147.4 (δ=1e-06)" in priv["td"] and "∞ (δ=1e-06)" in priv["td"]


def test_one_privacy_card_per_system_with_claim_levels_adjacency_and_threat_model(page):
    cards = [a for t, a in page.tags if t == "article" and "card" in a.get("class", "")]
    assert len(cards) == 4 + 2  # the comparison's 4 systems and the 2 run files
    text = "".join(page.texts)
    for expected in ("published claim", "true guarantee", "per interaction", "per user",
                     "per user (basic composition)", "replace-one adjacency",
                     "untrusted server sees each user's obfuscated vector once",
                     "none: each device randomises its own data",
                     "the server and the proxy must not collude",
                     "non-private: the server sees the raw data"):
        assert expected in text, expected


def test_images_are_inline_pngs_and_nothing_links_outside(page):
    images = [a["src"] for t, a in page.tags if t == "img"]
    assert len(images) == 3 + 2 + 1  # HR@K full, sampled and per-user ε of the comparison;
    # HR@K and per-user ε of the run files; the experiment's figure
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG)
    links = [a.get("href") or a.get("src") for t, a in page.tags if t in ("a", "link", "script")]
    assert links and all(h.startswith("#") for h in links)
    assert not {t for t, _ in page.tags} & {"script", "link", "iframe", "object", "embed"}


def test_every_value_from_the_results_is_escaped(report_html):
    html = report_html
    assert HOSTILE not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    tags = Page(html).tags
    assert not any(k.startswith("on") for _, attrs in tags for k in attrs)
    assert [a["src"][:5] for t, a in tags if t == "img"] == ["data:"] * 6


def test_the_per_user_eps_plot_is_drawn_by_the_evaluation_plots(results_dir, monkeypatch):
    calls = []

    def spy(sweep, path, title, **kw):
        calls.append((sorted(sweep), kw["x"], kw["log_x"], dict(kw["references"])))
        path.write_bytes(PNG)
        return path

    monkeypatch.setattr(view_module, "plot_metric_vs_eps", spy)
    monkeypatch.setattr(view_module, "plot_hr_at_k", lambda res, ks, path, *a, **kw: spy(
        res, path, "", x="K", log_x=False, references={}))
    render_report(results_dir)
    assert ([HOSTILE, "dplcf-sp"], "user_epsilon", True,
            {"random": 0.1, "popularity (non-private)": 0.39}) in calls
    assert (["dp-pop"], "user_epsilon", True, {}) in calls  # separate runs as a sweep


def test_a_comparison_that_stopped_shows_what_finished(tmp_path):
    folder = tmp_path / "compare-1-incomplete"
    (folder / "systems").mkdir(parents=True)
    (folder / "systems" / "random.json").write_text(json.dumps(plain_run()))
    (folder / "status.json").write_text(json.dumps(
        {"complete": False, "finished": ["random"], "failed": {"gmf": "boom"},
         "stopped": "interrupted"}))
    page = Page(render_report(tmp_path))
    text = "".join(page.texts)
    assert "Stopped early: interrupted" in text and "gmf: boom" in text
    assert len([a for t, a in page.tags if t == "article"]) == 1


def test_a_broken_png_is_listed_not_embedded(tmp_path, report_html):
    exp = tmp_path / "exp"
    exp.mkdir()
    first_image = next(a["src"] for t, a in Page(report_html).tags if t == "img")
    (exp / "good.png").write_bytes(base64.b64decode(first_image.split(",", 1)[1]))
    (exp / "broken.png").write_bytes(PNG + b"\0" * 20)
    (exp / "fake.png").write_bytes(b"GIF89a")
    (exp / "summary.json").write_text("{}")
    (exp / "odd.json").write_text(json.dumps({"system": "x", "metrics": {"sampled": {
        "HR@10": 0.3}}}))  # an experiment's own shape: listed, not read as a run
    html = render_report(tmp_path)
    assert "exp/broken.png: a PNG that does not decode" in html
    assert "exp/fake.png: not a PNG file" in html
    assert "exp/summary.json: not a run or comparison result (no system name)" in html
    assert ("exp/odd.json: not a run or comparison result (metrics[&#39;sampled&#39;]"
            "[&#39;HR@10&#39;] has no numeric mean and std)") in html
    assert len([1 for t, _ in Page(html).tags if t == "img"]) == 1


def test_missing_and_empty_folders_are_refused_with_what_to_do(tmp_path):
    with pytest.raises(ResultsFolderError, match="does not exist; give the folder"):
        render_report(tmp_path / "nope")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("hi")
    with pytest.raises(ResultsFolderError, match="holds no results.*Run one of them"):
        render_report(tmp_path / "empty")
    (tmp_path / "f.json").write_text("{}")
    with pytest.raises(ResultsFolderError, match="is a file, not a folder"):
        render_report(tmp_path / "f.json")


def test_a_corrupt_json_file_is_named(results_dir):
    bad = results_dir / "synthetic-300x200" / "dp-pop-0.json"
    bad.write_text('{"system": "dp-pop", "metrics": ')
    with pytest.raises(ResultsFolderError) as e:
        render_report(results_dir)
    assert str(bad) in str(e.value) and "not valid JSON (line 1" in str(e.value)
    assert "move the file out" in str(e.value)
    doc = comparison_doc()
    doc["results"]["random"]["metrics"]["sampled"]["HR@10"] = {"mean": "0.1"}
    bad.unlink()
    comp = results_dir / "synthetic-300x200" / "compare-1" / "results.json"
    comp.write_text(json.dumps(doc))
    with pytest.raises(ResultsFolderError, match=r"results\.json: metrics\['sampled'\]"
                                                 r"\['HR@10'\] has no numeric mean"):
        render_report(results_dir)


def test_an_existing_report_is_never_overwritten_silently(tmp_path):
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    for name in ("random", "popularity"):
        (results_dir / f"{name}.json").write_text(json.dumps(plain_run(name)))
    first = write_report(results_dir)
    assert first == results_dir / "report.html" and first.stat().st_mode & 0o777 == 0o644
    first.write_text("mine")
    with pytest.raises(ResultsFolderError, match="exists; pass --force"):
        write_report(results_dir)
    assert first.read_text() == "mine"
    assert write_report(results_dir, force=True) == first
    assert first.read_text().startswith("<!DOCTYPE html>")
    other = write_report(results_dir, tmp_path / "elsewhere.html")
    assert other.read_text().count('<article class="card') == 2
    with pytest.raises(ResultsFolderError, match="is a folder"):
        write_report(results_dir, tmp_path, force=True)


def test_a_label_matplotlib_refuses_leaves_a_note_not_a_crash(tmp_path):
    for eps in (0.5, 1.0):
        doc = plain_run("a$\\frac$b")
        doc["privacy"] = privacy("a$\\frac$b", eps)
        doc["parameters"] = {"epsilon": eps}
        (tmp_path / f"run-{eps}.json").write_text(json.dumps(doc))
    html = render_report(tmp_path)
    assert ("HR@10, sampled (99 negatives) against the per-user ε: not drawn, matplotlib "
            "refused a label") in html
    assert html.count('<article class="card') == 2


def test_the_template_ships_as_package_data():
    import tomllib
    from fnmatch import fnmatch

    import dprec.report.page as page_module
    root = Path(page_module.__file__).parent
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    patterns = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"][
        "dprec.report"]
    template = f"templates/{page_module.TEMPLATE}"
    assert (root / template).is_file()
    assert any(fnmatch(template, p) for p in patterns)
