"""The tables the commands print: metrics with their ε per interaction and per user, and a
run's privacy report (what ``run``, ``compare`` and ``simulate`` show)."""

from __future__ import annotations

import math

from rich.markup import escape
from rich.table import Table

from dprec.cli.common import out

__all__ = ["eps_text", "fmt_value", "metrics_table", "print_privacy", "print_tables"]


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


def _table_metrics(docs: dict[str, dict], protocol: str) -> tuple[str, ...]:
    """The metric columns: the standard ranking set where present, else all the results have."""
    from dprec.evaluation.compare import table_metrics
    return table_metrics(list(next(iter(docs.values()))["metrics"][protocol]))


def metrics_table(title: str, results: dict[str, dict], protocol: str,
                  paper: dict[str, dict[str, float]] | None = None) -> Table:
    """One row per system: mean±std of each metric of ``protocol`` (beside the paper's
    numbers if given) and its ε per interaction, per user and per user by basic composition."""
    metrics = _table_metrics(results, protocol)
    t = Table(title=title)
    t.add_column("system")
    for m in metrics:
        t.add_column(m, justify="right")
    if paper is not None:
        for m in metrics:
            t.add_column(f"paper {m}", justify="right", style="dim")
    for col in ("ε per interaction", "ε per user", "ε per user (basic)", "sides"):
        t.add_column(col, justify="right")
    for name, r in results.items():
        row = [escape(name)]
        for m in metrics:
            v = r["metrics"][protocol][m]
            row.append(f"{v['mean']:.4f}±{v['std']:.3f}")
        if paper is not None:
            row += [fmt_value(paper.get(name, {}).get(m, math.nan)) for m in metrics]
        levels = (r["privacy"] or {}).get("levels") or {}
        row += [eps_text(levels.get("event")), eps_text(levels.get("user")),
                eps_text(levels.get("user_basic")),
                levels["user"]["sides"] if levels else "—"]
        t.add_row(*row)
    return t


def print_tables(title: str, docs: dict[str, dict]) -> None:
    """One :func:`metrics_table` per evaluation protocol of the results ``docs``."""
    from dprec.evaluation.paper_numbers import DPLCF_PAPER_DATASET, PAPER_ML20M
    protocols = list(next(iter(docs.values()))["metrics"])
    for proto in protocols:
        if proto == "sampled":
            out.print(metrics_table(f"{title} — sampled (1 + negatives); paper columns: "
                                    f"{DPLCF_PAPER_DATASET}", docs, proto, PAPER_ML20M))
        elif proto == "full":
            out.print(metrics_table(f"{title} — full ranking (all never-seen items)", docs,
                                    proto))
        else:
            out.print(metrics_table(f"{title} — {proto}", docs, proto))


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
