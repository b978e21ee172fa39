"""The tables the commands print: metrics, the paper's numbers, each system's ε per
interaction and per user, and a run's privacy report (what ``run``, ``compare`` and
``simulate`` show), each table at most :data:`TABLE_WIDTH` columns wide."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dprec.cli.common import err, out

__all__ = [
    "TABLE_WIDTH", "eps_text", "fitted_tables", "fmt_value", "headline_tables",
    "metric_tables", "paper_table", "print_privacy", "print_tables", "privacy_tables",
    "save_and_show",
]

TABLE_WIDTH = 120
"""The widest a printed table gets, in columns: in a log of 120 columns or more every number
is whole; columns that do not fit go to a further table led by the same row labels (and the
results folder's CSV holds every column, with δ and the model)."""


def fmt_value(v: object) -> str:
    """A float to 4 decimals (NaN: empty), anything else as text."""
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def eps_text(g: dict | None) -> str:
    """A guarantee as ``ε, δ=…`` (``∞`` for an unbounded ε, ``—`` for none)."""
    if not g:
        return "—"
    eps = g["epsilon"]
    text = "∞" if eps == "inf" else f"{float(eps):.3g}"
    return text + (f", δ={g['delta']:.0e}" if g.get("delta") else "")


def _column_width(header: str, cells: Sequence[str]) -> int:
    """The cells a column takes on screen: its widest cell or its unwrapped header."""
    return max([cell_len(header), *(cell_len(c) for c in cells)])


def fitted_tables(title: str, label: str, rows: Sequence[str],
                  columns: Sequence[tuple[str, Sequence[str]]],
                  width: int | None = None) -> list[Table]:
    """``columns`` (header, one cell per row) over as few tables as fit ``width`` columns
    (default: the console's, at most :data:`TABLE_WIDTH`), each led by the ``label`` column
    of ``rows``, so that no cell is cut. A table's width is the sum of its columns plus
    3 per column (padding and rule) plus 1 (rich's default box). A column too wide on its
    own gets a table of its own and folds rather than being cut."""
    width = min(out.width, TABLE_WIDTH) if width is None else width
    room = width - 1 - (_column_width(label, rows) + 3)
    groups: list[list[tuple[str, Sequence[str]]]] = [[]]
    used = 0
    for col in columns:
        need = _column_width(*col) + 3
        if groups[-1] and used + need > room:
            groups.append([])
            used = 0
        groups[-1].append(col)
        used += need
    tables = []
    for i, group in enumerate(groups):
        part = f" (part {i + 1} of {len(groups)})" if len(groups) > 1 else ""
        t = Table(title=escape(title + part))
        t.add_column(label, overflow="fold")
        for header, _ in group:
            t.add_column(header, justify="right", overflow="fold")
        for r, row in enumerate(rows):
            t.add_row(Text(row), *(Text(cells[r]) for _, cells in group))
        tables.append(t)
    return tables


def _cell(doc: dict, protocol: str, metric: str, digits: int = 4) -> str:
    """A result's metric as mean ± 95% interval ("1 seed" without one; "—" if absent)."""
    from dprec.evaluation.intervals import entry_count, format_interval
    return format_interval(doc["metrics"].get(protocol, {}).get(metric), entry_count(doc),
                           digits)


def metric_tables(title: str, results: dict[str, dict], protocol: str,
                  width: int | None = None) -> list[Table]:
    """One row per system: mean ± 95% interval over seeds of each metric of ``protocol``,
    over as many tables as fit ``width`` (see :func:`fitted_tables`)."""
    from dprec.evaluation.compare import table_metrics
    metrics = table_metrics(list(next(iter(results.values()))["metrics"][protocol]))
    columns = [(m, [_cell(r, protocol, m) for r in results.values()]) for m in metrics]
    return fitted_tables(title, "system", list(results), columns, width)


def headline_tables(title: str, results: dict[str, dict],
                    width: int | None = None) -> list[Table]:
    """The table every ranking result leads with (issue 33): full ranking over all unseen
    items (HR@10, Recall@20, NDCG@10, MRR, Coverage@10 of the top-K lists), the sampled
    HR@10 beside (the title names its negatives; 3 decimals, so that the table fits
    :data:`TABLE_WIDTH`); empty for results without the full top-K lists (older files,
    rating, the PrivRec protocol)."""
    from dprec.evaluation.compare import headline_columns
    cols = headline_columns(results, ("HR@10",), short=True)
    if not cols:
        return []
    columns = [(header, [_cell(r, proto, m, 3) for r in results.values()])
               for header, proto, m in cols]
    return fitted_tables(title, "system", list(results), columns, width)


def paper_table(title: str, results: dict[str, dict], protocol: str,
                paper: dict[str, dict[str, float]], width: int | None = None) -> list[Table]:
    """The paper's numbers of the systems of ``results`` it reports, under the metric names
    of ``protocol``'s table (none: an empty list)."""
    from dprec.evaluation.compare import table_metrics
    metrics = table_metrics(list(next(iter(results.values()))["metrics"][protocol]))
    names = [n for n in results if any(m in paper.get(n, {}) for m in metrics)]
    if not names:
        return []
    columns = [(m, [fmt_value(paper[n].get(m, math.nan)) for n in names]) for m in metrics]
    return fitted_tables(title, "system", names, columns, width)


def privacy_tables(title: str, results: dict[str, dict],
                   width: int | None = None) -> list[Table]:
    """One row per system: its ε per interaction, per user and per user by basic
    composition, and whether the per-user guarantee is two- or one-sided."""
    levels = [(r["privacy"] or {}).get("levels") or {} for r in results.values()]
    columns = [
        ("ε per interaction", [eps_text(lv.get("event")) for lv in levels]),
        ("ε per user", [eps_text(lv.get("user")) for lv in levels]),
        ("ε per user (basic)", [eps_text(lv.get("user_basic")) for lv in levels]),
        ("sides", [str(lv["user"]["sides"]) if lv else "—" for lv in levels]),
    ]
    return fitted_tables(title, "system", list(results), columns, width)


def print_tables(title: str, docs: dict[str, dict]) -> None:
    """The metrics of the results ``docs``, per evaluation protocol (the sampled one with the
    paper's numbers after it), then their privacy, each at most :data:`TABLE_WIDTH` wide."""
    from dprec.evaluation.compare import FULL_LIST, sampled_label
    from dprec.evaluation.paper_numbers import DPLCF_PAPER_DATASET, PAPER_ML20M
    protocols = list(next(iter(docs.values()))["metrics"])
    sampled = sampled_label(docs)
    beside = f"; {sampled} beside" if "sampled" in protocols else ""
    tables: list[Table] = headline_tables(
        f"{title} — full ranking over all unseen items (ties: larger score, then smaller "
        f"item id){beside}", docs)
    for proto in protocols:
        if proto == "sampled":
            tables += metric_tables(f"{title} — {sampled}", docs, proto)
            tables += paper_table(f"the paper's numbers on {DPLCF_PAPER_DATASET}, beside the "
                                  f"{sampled} table above", docs, proto, PAPER_ML20M)
        elif proto == "full":
            tables += metric_tables(f"{title} — full ranking, HR@K/NDCG@K with random ties "
                                    "(all never-seen items)", docs, proto)
        elif proto == FULL_LIST:
            tables += metric_tables(f"{title} — full ranking, every top-K list metric", docs,
                                    proto)
        else:
            tables += metric_tables(f"{title} — {proto}", docs, proto)
    tables += privacy_tables(f"{title} — privacy", docs)
    for t in tables:
        out.print(t)


def print_privacy(doc: dict) -> None:
    """The privacy report of one run's result ``doc``: threat model, mechanisms, the
    published claim, the true guarantee and each level's."""
    p = doc["privacy"]
    if p is None:
        out.print("Privacy report: none (non-private system)")
        return
    out.print(f"[bold]Privacy report — {doc['system']}[/]")
    out.print(f"  threat model: {escape(str(p['threat_model']))}")
    for m in p.get("mechanisms", []):
        out.print("  mechanism: " + escape(", ".join(f"{k}={v}" for k, v in m.items())))
    if p.get("claimed"):
        c = p["claimed"]
        out.print(f"  published claim: ε={c['epsilon']} ({c['level']}-level, {c['sides']}-sided)")
    true = p.get("true") or {}
    if true:
        out.print(f"  true guarantee: {eps_text(true)} ({true['level']}-level, "
                  f"{true['sides']}-sided, {true['model']} model)")
        for note in true.get("notes", []):
            out.print(f"    note: {escape(str(note))}")
    names = {"event": "per interaction", "user": "per user", "user_basic": "per user (basic)"}
    for level, g in (p.get("levels") or {}).items():
        if g is None:
            continue
        out.print(f"  {names.get(level, level)}: {eps_text(g)} ({g['sides']}-sided, "
                  f"{g['model']} model)")
        for note in g.get("notes", []):
            out.print(f"    note: {escape(str(note))}")
    if "local" in p:
        loc = p["local"]
        out.print(f"  local: ε per report {loc['epsilon_per_report']}, per round "
                  f"{loc['epsilon_per_round']}, per user over training {loc['epsilon_user']} "
                  "(basic composition)")


def save_and_show(doc: dict, out_dir: Path, dataset: str, system: str, title: str,
                  as_json: bool) -> None:
    """Write one run's result ``doc`` to a new file under ``out_dir``, then show it: one
    strict JSON document on stdout (``as_json``; the saved path on stderr), else its metric
    tables under ``title`` and its privacy report (what ``run`` and ``simulate`` print)."""
    from dprec.evaluation.results import new_result_file, strict_json_text, write_json
    path = write_json(new_result_file(out_dir, dataset, system), doc)
    if as_json:
        sys.stdout.write(strict_json_text(doc) + "\n")
        err.print(f"saved {path}")
        return
    print_tables(title, {system: doc})
    print_privacy(doc)
    out.print(f"saved {path}")
