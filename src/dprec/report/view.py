"""What the report page shows, as plain values for its template: the metric tables with
their units and the paper's column, the privacy table, one privacy card per system, and the
figures (drawn by :mod:`dprec.evaluation.plots`, inlined as ``data:`` URIs).

Every value here is text or numbers; the template escapes all of it (the results are
untrusted input), so nothing in this module builds HTML.
"""

from __future__ import annotations

import base64
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dprec.evaluation.compare import (
    FULL_LIST,
    headline_columns,
    level_epsilon,
    sampled_label,
    sweep_references,
    table_metrics,
)
from dprec.evaluation.intervals import INTERVAL_NOTE, entry_count, format_interval
from dprec.evaluation.paper_numbers import DPLCF_PAPER_DATASET, PAPER_ML20M
from dprec.evaluation.plots import plot_hr_at_k, plot_metric_vs_eps
from dprec.privacy.adjacency import Adjacency
from dprec.report.folder import ResultSet, ResultsFolderContents

__all__ = [
    "EPS_UNIT", "TRUSTED_PARTIES", "Card", "Column", "FigureView", "GuaranteeRow", "SetView",
    "Table", "card", "metric_tables", "metric_unit", "png_data_uri", "privacy_table",
    "report_view", "set_view", "sweep_metric", "sweep_of_runs",
]

EPS_UNIT = "ε: bound on the log-likelihood ratio (nats); δ: probability"
TRUSTED_PARTIES = {
    "local": "none: each device randomises its own data before it leaves; the server is "
             "untrusted",
    "shuffled": "the shuffling proxy: it sees who sent each report, and must not collude "
                "with the server",
    "secure-sum": "the server and the proxy must not collude, and enough honest clients must "
                  "contribute (see the assumptions)",
    "central": "a trusted curator: it sees the raw data and adds the noise",
}
"""Who must be trusted, by the guarantee's model (privacy.guarantee.Model)."""
_LEVEL_NAMES = {"event": "per interaction", "user": "per user",
                "user_basic": "per user (basic composition)",
                "event_values": "per interaction, values only",
                "user_values": "per user, values only"}
_PROTOCOL_NOTES = {
    "sampled": "the held-out item ranked against {negatives} sampled negatives",
    "full": "the held-out item ranked against every item the user never interacted with "
            "(ties broken at random)",
    FULL_LIST: "each test user's top-K list over every item they never interacted with (ties: "
               "larger score, then smaller item id); MRR without cut-off; Coverage@K the share "
               "of the catalogue in at least one top K",
    "rating": "k-fold cross-validation over ratings, predictions clipped to the scale",
}


@dataclass
class Column:
    """A table column: its header and its unit."""

    header: str
    unit: str


@dataclass
class Table:
    """A table: caption, a note under it, columns after the row label, and rows."""

    caption: str
    note: str
    label: str
    columns: list[Column]
    rows: list[tuple[str, list[str]]]


@dataclass
class GuaranteeRow:
    """One guarantee of a privacy card (the claim, the true one, or a level)."""

    name: str
    epsilon: str
    delta: str
    level: str
    sides: str
    model: str
    mechanism: str
    notes: list[str]


@dataclass
class Card:
    """One system's privacy card: what it claims, what holds at each level, against whom."""

    label: str
    system: str
    private: bool
    threat_model: str
    trusted: str
    adjacency: str
    guarantees: list[GuaranteeRow]
    assumptions: list[tuple[str, str]]
    mechanisms: list[str]
    parameters: str
    seeds: str
    wall_time: str


@dataclass
class FigureView:
    """An image of the page: title, caption, and the PNG as a ``data:`` URI."""

    title: str
    caption: str
    uri: str


@dataclass
class SetView:
    """One result set on the page."""

    anchor: str
    title: str
    kind: str
    dataset: str
    stopped: str | None
    failed: list[tuple[str, str]]
    tables: list[Table]
    figures: list[FigureView]
    cards: list[Card]
    notes: list[str] = field(default_factory=list)


def png_data_uri(data: bytes) -> str:
    """``data`` (PNG bytes) as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def metric_unit(name: str, rating_scale: str = "") -> str:
    """The unit of a metric: HR@K a share of test users, NDCG@K a discounted gain in
    [0, 1] (1/log2(rank + 1), one relevant item), RMSE/MAE rating points."""
    if name.startswith("HR@"):
        return "share of test users, 0–1"
    if name.startswith("NDCG@"):
        return "0–1; 1/log2(rank + 1)"
    if name.startswith("Recall@"):
        return "0–1; hits / min(K, positives)"
    if name == "MRR":
        return "0–1; 1/rank of the first positive"
    if name.startswith("Coverage@"):
        return "share of the catalogue, 0–1"
    if name in ("RMSE", "MAE"):
        return f"rating points ({rating_scale} scale)" if rating_scale else "rating points"
    return "as defined by the metric"


def _num(v: object, digits: int = 4) -> str:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return "—" if math.isnan(v) else f"{v:.{digits}f}"
    return str(v)


def _eps(v: object) -> str:
    if v == "inf" or (isinstance(v, float) and math.isinf(v)):
        return "∞"
    try:
        return f"{float(v):.4g}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(v)


def _delta(v: object) -> str:
    try:
        d = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(v)
    return "0" if d == 0 else f"{d:.0e}"


def _rating_scale(results: dict[str, dict[str, Any]]) -> str:
    for r in results.values():
        ds = r.get("dataset")
        if isinstance(ds, dict) and ds.get("rating_scale"):
            return str(ds["rating_scale"])
    return ""


def _protocol_note(proto: str, results: dict[str, dict[str, Any]]) -> str:
    doc = next(iter(results.values()))
    p = doc.get("protocol") if isinstance(doc.get("protocol"), dict) else {}
    sampled = p.get("sampled") if isinstance(p.get("sampled"), dict) else {}
    seeds = doc.get("seeds")
    n = len(seeds) if isinstance(seeds, list) else "?"
    note = _PROTOCOL_NOTES.get(proto, proto).format(negatives=sampled.get("negatives", 99))
    if proto == "full" and isinstance(p.get("protocol"), str):
        note = p["protocol"]  # the PrivRec protocol describes itself
    return f"{note}; {INTERVAL_NOTE}, {n} seed{'' if n == 1 else 's'}"


def _headline_table(results: dict[str, dict[str, Any]]) -> list[Table]:
    """The table the page leads with (issue 33): the full top-K list metrics, sampled HR@10
    and NDCG@10 beside (labelled with their negatives); none for results without them."""
    cols = headline_columns(results)
    if not cols:
        return []
    sampled = sampled_label(results)
    with_sampled = any(proto == "sampled" for _, proto, _ in cols)
    columns = [Column(h, metric_unit(m)) for h, _, m in cols]
    rows = [(n, [_interval(r, proto, m) for _, proto, m in cols]) for n, r in results.items()]
    note = _protocol_note(FULL_LIST, results)
    if with_sampled:
        note += (f"; the {sampled} columns rank the held-out item against that many sampled "
                 "items only (Krichene and Rendle, KDD 2020: sampled metrics can reorder "
                 "systems)")
    caption = "full ranking over all unseen items" + (f"; {sampled} beside" if with_sampled
                                                        else "")
    return [Table(caption, note, "system", columns, rows)]


def _interval(doc: dict[str, Any], proto: str, metric: str) -> str:
    return format_interval(doc["metrics"].get(proto, {}).get(metric), entry_count(doc))


def metric_tables(results: dict[str, dict[str, Any]]) -> list[Table]:
    """The headline table (full ranking first, :func:`_headline_table`), then per evaluation
    protocol, one row per system: mean ± 95% interval of each metric (the DPLCF table's set
    where present, :func:`~dprec.evaluation.compare.table_metrics`), with the paper's number
    beside ours in the sampled protocol (the papers' own protocol)."""
    protocols = sorted(dict.fromkeys(p for r in results.values() for p in r["metrics"]),
                       key=lambda p: FULL_FIRST.index(p) if p in FULL_FIRST
                       else len(FULL_FIRST))
    scale = _rating_scale(results)
    tables = _headline_table(results)
    for proto in protocols:
        rows_of = {n: r for n, r in results.items() if proto in r["metrics"]}
        names = list(dict.fromkeys(m for r in rows_of.values() for m in r["metrics"][proto]))
        metrics = table_metrics(names)
        paper = {n: PAPER_ML20M.get(r["system"], {}) for n, r in rows_of.items()}
        with_paper = proto == "sampled" and any(m in p for p in paper.values() for m in metrics)
        columns = []
        for m in metrics:
            columns.append(Column(m, metric_unit(m, scale)))
            if with_paper:
                columns.append(Column(f"{m} paper", DPLCF_PAPER_DATASET))
        rows = []
        for n, r in rows_of.items():
            cells = []
            for m in metrics:
                cells.append(_interval(r, proto, m))
                if with_paper:
                    cells.append(_num(paper[n].get(m, math.nan)))
            rows.append((n, cells))
        note = _protocol_note(proto, rows_of)
        if with_paper:
            note += (f"; the paper columns are the published numbers on {DPLCF_PAPER_DATASET}"
                     ", not ours (— where the paper has none)")
        caption = {"sampled": sampled_label(rows_of),
                   "full": "full ranking, random ties" if "sampled" in protocols
                   else "full protocol",
                   FULL_LIST: "full ranking, every top-K list metric"}.get(
                       proto, f"{proto} protocol")
        tables.append(Table(caption, note, "system", columns, rows))
    return tables



def _levels(doc: dict[str, Any]) -> dict[str, Any]:
    p = doc.get("privacy")
    return (p.get("levels") or {}) if isinstance(p, dict) else {}


def _eps_cell(g: object) -> str:
    if not isinstance(g, dict):
        return "—"
    text = _eps(g.get("epsilon"))
    delta = g.get("delta")
    return text + (f" (δ={_delta(delta)})" if delta not in (None, 0, 0.0, "0") else "")


def privacy_table(results: dict[str, dict[str, Any]]) -> Table:
    """One row per system: the published claim, ε per interaction and per user (tightest
    sound analysis, and by basic composition), sides and model."""
    rows = []
    for n, r in results.items():
        lv = _levels(r)
        p = r.get("privacy") if isinstance(r.get("privacy"), dict) else {}
        claimed = p.get("claimed") if isinstance(p.get("claimed"), dict) else None
        user = lv.get("user") if isinstance(lv.get("user"), dict) else {}
        rows.append((n, [
            _eps_cell(claimed) + (f" ({claimed.get('level')}-level)" if claimed else ""),
            _eps_cell(lv.get("event")), _eps_cell(lv.get("user")), _eps_cell(lv.get("user_basic")),
            str(user.get("sides", "—")), str(user.get("model", "—")),
        ]))
    columns = [Column("claimed ε", "as published"), Column("ε per interaction", "nats"),
               Column("ε per user", "nats, tightest sound analysis"),
               Column("ε per user (basic)", "nats, basic composition"),
               Column("sides", "two / one / none"), Column("model", "where the noise is added")]
    return Table("privacy", f"{EPS_UNIT}; — for a non-private system", "system", columns, rows)


def _guarantee_row(name: str, g: dict[str, Any]) -> GuaranteeRow:
    notes = g.get("notes") if isinstance(g.get("notes"), list) else []
    return GuaranteeRow(name, _eps(g.get("epsilon")), _delta(g.get("delta", 0)),
                        str(g.get("level", "")), str(g.get("sides", "")),
                        str(g.get("model", "")), str(g.get("mechanism", "")),
                        [str(x) for x in notes])


def _adjacency(value: object) -> str:
    try:
        return Adjacency(value).describe()
    except ValueError:
        return "not stated" if value is None else str(value)


def card(label: str, doc: dict[str, Any]) -> Card:
    """The privacy card of the result ``doc``: the claim, the true guarantee and each level,
    the adjacency, the threat model and whom it trusts."""
    p = doc.get("privacy") if isinstance(doc.get("privacy"), dict) else None
    seeds = doc.get("seeds")
    wall = doc.get("wall_time_s")
    params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    common = {"label": label, "system": str(doc["system"]),
              "parameters": ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults",
              "seeds": str(len(seeds)) if isinstance(seeds, list) else "?",
              "wall_time": _num(wall, 1) + " s" if wall is not None else "?"}
    if p is None:
        return Card(private=False, threat_model="non-private: the server sees the raw data",
                    trusted="the server, with everything", adjacency="—", guarantees=[],
                    assumptions=[], mechanisms=[], **common)
    rows = []
    for name, key in (("published claim", "claimed"), ("true guarantee", "true")):
        if isinstance(p.get(key), dict):
            rows.append(_guarantee_row(name, p[key]))
    for level, g in (p.get("levels") or {}).items():
        if isinstance(g, dict):
            rows.append(_guarantee_row(_LEVEL_NAMES.get(level, str(level)), g))
    true = p.get("true") if isinstance(p.get("true"), dict) else {}
    model = str(true.get("model", ""))
    assumptions = p.get("threat_model_assumptions")
    pairs = ([(str(k), "; ".join(map(str, v)) if isinstance(v, list) else str(v))
              for k, v in assumptions.items()]
             if isinstance(assumptions, dict) else [])
    listed = p.get("mechanisms") or []
    mechanisms = [", ".join(f"{k}={v}" for k, v in m.items()) if isinstance(m, dict) else str(m)
                  for m in (listed if isinstance(listed, list) else [listed])]
    return Card(private=True, threat_model=str(p.get("threat_model", "not stated")),
                trusted=TRUSTED_PARTIES.get(model, f"not stated (model {model or '?'})"),
                adjacency=_adjacency(p.get("adjacency")), guarantees=rows, assumptions=pairs,
                mechanisms=mechanisms, **common)


FULL_FIRST = (FULL_LIST, "full", "sampled")
"""The order of the per-protocol tables after the headline: full ranking first (issue 33)."""


def _sweep_label(proto: str, results: dict[str, dict[str, Any]]) -> str:
    """How a figure names its protocol: the sampled one with its negatives."""
    return {"sampled": sampled_label(results), "full": "full ranking, random ties",
            FULL_LIST: "full ranking"}.get(proto, proto)


def sweep_metric(results: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """The (metric, protocol) an ε sweep of these results reports: HR@10 sampled for the
    ranking task, HR@10 full for the PrivRec protocol, RMSE for rating (as ``dprec
    compare`` sweeps them)."""
    protocols = {p for r in results.values() for p in r["metrics"]}
    if "sampled" in protocols:
        return "HR@10", "sampled"
    if "rating" in protocols:
        return "RMSE", "rating"
    return "HR@10", "full"


def sweep_of_runs(results: dict[str, dict[str, Any]], metric: str, protocol: str
                  ) -> dict[str, list[dict[str, Any]]]:
    """Separate runs of private systems as sweep points, per system: ``metric`` against the
    run's ε parameter (else its per-user ε) and its per-user ε."""
    sweep: dict[str, list[dict[str, Any]]] = {}
    for r in results.values():
        m = r["metrics"].get(protocol, {}).get(metric)
        user = _levels(r).get("user")
        try:
            user_eps = level_epsilon(r["privacy"], "user")
        except (KeyError, TypeError, ValueError):
            continue
        if m is None or not isinstance(user, dict):
            continue
        eps = (r.get("parameters") or {}).get("epsilon", user_eps)
        sweep.setdefault(r["system"], []).append({
            "epsilon": float(eps) if isinstance(eps, int | float) else user_eps,
            "mean": m["mean"], "std": m["std"], "user_epsilon": user_eps,
            "sides": str(user.get("sides", "two"))})
    for pts in sweep.values():
        pts.sort(key=lambda p: p["epsilon"])
    return sweep


def _drawn(title: str, caption: str, draw: Callable[[Path], Path], figures: list[FigureView],
           notes: list[str]) -> None:
    """The PNG ``draw`` writes to a temporary path, added to ``figures`` as a data URI; if
    matplotlib refuses the results' text (a label it reads as bad mathtext), a note says
    so instead."""
    with tempfile.TemporaryDirectory(prefix="dprec-report-") as tmp:
        try:
            uri = png_data_uri(draw(Path(tmp) / "figure.png").read_bytes())
        except ValueError as e:
            notes.append(f"{title}: not drawn, matplotlib refused a label of the results ({e})")
            return
    figures.append(FigureView(title, caption, uri))


def _figures(s: ResultSet) -> tuple[list[FigureView], list[str]]:
    """The HR@K plot and the per-user-ε plot of a set (what it has data for), and notes on
    what could not be drawn."""
    figures, notes = [], []
    res, title = s.results, s.dataset or s.where
    metric, proto = (s.sweep_metric if s.sweep_metric is not None
                     else sweep_metric(res) if res else ("HR@10", "sampled"))
    ranking = [p for p in ("full", "sampled") if all(p in r["metrics"] for r in res.values())]
    doc = next(iter(res.values()), {})
    ks = (doc.get("protocol") or {}).get("ks") if isinstance(doc.get("protocol"), dict) else None
    ks_ok = isinstance(ks, list) and ks and all(type(k) is int for k in ks)
    for p in ranking[:1] if s.kind == "runs" else ranking:
        if ks_ok and all(f"HR@{k}" in r["metrics"][p] for r in res.values() for k in ks):
            _drawn(f"HR@K ({_sweep_label(p, res)})", "error bars: std over seeds",
                   lambda path, p=p: plot_hr_at_k(res, ks, path,
                                                  f"HR@K on {title} ({_sweep_label(p, res)})",
                                                  protocol=p), figures, notes)
    sweep = s.sweep if s.sweep is not None else sweep_of_runs(res, metric, proto)
    if any(sweep.values()):
        refs = {}
        if all(proto in r["metrics"] and metric in r["metrics"][proto] for r in res.values()):
            refs = sweep_references({r["system"]: r for r in res.values()}, metric, proto)
        shown = f"{metric}, {_sweep_label(proto, res)}"
        _drawn(f"{shown} against the per-user ε",
               "x: ε of all of a user's data (tightest sound analysis, log scale); grey "
               "lines: non-private references",
               lambda path: plot_metric_vs_eps(
                   sweep, path, f"{shown} against the per-user ε on {title}",
                   ylabel=shown, references=refs, x="user_epsilon",
                   log_x=True, order=list(dict.fromkeys([r["system"] for r in res.values()])),
                   xlabel="per-user ε (all of a user's data; log scale)"), figures, notes)
    elif s.kind != "runs":
        notes.append("no ε sweep in this comparison (run `dprec compare` with --eps-grid): "
                     "no per-user-ε plot")
    return figures, notes


def set_view(i: int, s: ResultSet) -> SetView:
    """Everything the page shows of one result set."""
    figures, notes = _figures(s) if s.results else ([], ["no system finished"])
    tables = metric_tables(s.results) if s.results else []
    if s.results:
        tables.append(privacy_table(s.results))
    return SetView(f"set-{i}", s.where if s.where != "." else "(top folder)", s.kind,
                   s.dataset, s.stopped, sorted(s.failed.items()), tables, figures,
                   [card(n, r) for n, r in s.results.items()], notes)


def report_view(contents: ResultsFolderContents) -> dict[str, Any]:
    """The template's context: the result sets, the folder's own figures, what was left
    out."""
    return {
        "folder": contents.root.name or str(contents.root),
        "sets": [set_view(i, s) for i, s in enumerate(contents.sets, 1)],
        "figures": [FigureView(f.where, "a figure found in the folder", png_data_uri(f.data))
                    for f in contents.figures],
        "skipped": contents.skipped,
        "eps_unit": EPS_UNIT,
    }
