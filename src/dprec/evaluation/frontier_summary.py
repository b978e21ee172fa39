"""The Markdown summary of the per-user ε frontier (experiments/frontier.py, issue 24 §3),
full ranking first (issue 33 §1): full-ranking HR@10, Recall@20 and NDCG@10 against ε_user,
every headline metric of the full top-K lists at ε_user 1 and 8 beside the references (the
generator's oracle, a ceiling, on synthetic data), then sampled HR@10 (99 negatives) and full
HR@10 with random ties, the accounted ε on one privacy axis (issue 33 §5: zero-out,
:mod:`dprec.privacy.relations`), the seed systems' paper points and the targets. Every cell
is a mean with its 95% interval over seeds (:mod:`dprec.evaluation.intervals`).
"""

from __future__ import annotations

import math
from typing import Any

from dprec.errors import DprecError
from dprec.evaluation.intervals import INTERVAL_NOTE, format_interval
from dprec.evaluation.metrics import FULL_LIST, HEADLINE
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.relations import on_relation

__all__ = ["AXIS", "AXIS_NOTE", "DETAIL_EPS", "FULL_TABLES", "METRIC", "PROTOCOLS", "TITLES",
           "axis_guarantee", "config_column", "fmt_point", "matching_user_epsilon",
           "summary_markdown", "targets"]

METRIC = "HR@10"
PROTOCOLS = (FULL_LIST, "sampled", "full")
TITLES = {FULL_LIST: "Full-ranking HR@10 (top 10 of all unseen items; ties: larger score, "
                     "then smaller item id)",
          "sampled": "Sampled HR@10 (99 negatives)",
          "full": "Full HR@10, ties broken at random (issue 24's column)"}
"""The section title of each protocol's HR@10 table, full ranking first."""
FULL_TABLES = ("Recall@20", "NDCG@10")
"""Full-ranking metrics with their own table against ε_user, after HR@10's."""
DETAIL_EPS = (1.0, 8.0)
"""The per-user ε of the table with every headline metric (issue 33's targets)."""
AXIS = Adjacency.ZERO_OUT
"""The one neighbouring relation of the ε axis (issue 33 §5)."""
AXIS_NOTE = (
    "One privacy axis: every ε_user is a per-user ε under **zero-out** adjacency (one "
    "user's data replaced by ⊥: no interactions, the user still taking part) at the δ "
    "shown. The secure-sum systems (dp-pop, dpals, dp-fedavg) are accounted under "
    "zero-out; the systems whose users randomise their own reports (the DPLCF family, bpr-mf, "
    "gmf, ldp-pop: local; fmf-ldp: local reports through a shuffler) under replace-one, "
    "whose (ε, δ) holds unchanged under zero-out when ⊥ stands for one fixed "
    "input of the randomiser (the pair (x, ⊥) is then the replace-one pair (x, x₀)): their "
    "points are sound upper bounds, possibly loose (`dprec.privacy.relations`). The other "
    "way, a zero-out (ε, δ) is a replace-one (2ε, (1 + e^ε) δ) (two steps through ⊥, "
    "group privacy; Dwork and Roth 2014, Thm. 2.2): the column \"replace-one\" of the "
    "accounted-ε table.")


def axis_guarantee(epsilon: float | None, delta: float | None,
                   adjacency: str | None) -> tuple[float, float] | None:
    """(ε, δ) of a guarantee accounted under ``adjacency`` (an :class:`Adjacency` value) on
    the axis relation :data:`AXIS`; None when there is none to convert or no sound
    conversion."""
    if epsilon is None or delta is None:
        return None
    try:
        return on_relation(epsilon, delta, Adjacency(adjacency), AXIS)
    except (ValueError, DprecError):
        return None


def fmt_point(point: dict[str, Any], proto: str, metric: str | None = None) -> str:
    """mean ± 95% interval of ``point[proto]`` (of ``point["headline"][metric]`` with a
    metric), "(1 seed)" for one seed, "–" where the stored cells lack it."""
    v = point.get(proto) if metric is None else point.get("headline", {}).get(metric)
    return "–" if v is None else format_interval(v, len(point["seeds"]), digits=3)


def matching_user_epsilon(curve: list[dict[str, Any]], value: float,
                          proto: str = "sampled") -> float | None:
    """The smallest per-user ε at which ``curve`` (HR@10 of ``proto``) reaches ``value``:
    linear in log ε between the first two points that straddle it; None if it never does."""
    pts = sorted((p for p in curve if p["kind"] == "frontier" and p.get(proto)),
                 key=lambda p: p["user_epsilon"])
    prev = None
    for p in pts:
        if p[proto]["mean"] >= value:
            if prev is None:
                return p["user_epsilon"]
            x0, x1 = math.log(prev["user_epsilon"]), math.log(p["user_epsilon"])
            y0, y1 = prev[proto]["mean"], p[proto]["mean"]
            return math.exp(x0 + (value - y0) / (y1 - y0) * (x1 - x0))
        prev = p
    return None


def summary_markdown(doc: dict[str, Any]) -> str:
    """The committed summary: provenance, the privacy axis, the full-ranking tables (HR@10,
    then :data:`FULL_TABLES`, then every headline metric), the sampled and random-ties
    tables, the accounted per-user ε, the seed systems' paper points and the targets."""
    lines = [f"# Full-ranking HR@10 against the per-user ε on {doc['dataset']} "
             "(issue 24 §3, issue 33)", "",
             f"Command: `{doc['command']}`  ", f"Date: {doc['date']}, commit {doc['commit']} "
             "(plus uncommitted changes, if any)  ",
             f"Seeds: {doc['seeds']} (fewer where the seeds column says so); "
             f"δ = {doc['delta']:g}; latest-item leave-one-out; full ranking = every unseen "
             f"item, sampled = 99 negatives; {INTERVAL_NOTE} (\"1 seed\" where one ran; – "
             "where a stored cell predates the metric: rerun it with --force).  ",
             "Configs: " + doc["provenance"], "", *(f"- {n}" for n in doc.get("notes", [])),
             *([""] if doc.get("notes") else []), AXIS_NOTE, ""]
    tables = [(FULL_LIST, None, TITLES[FULL_LIST])] + [
        (FULL_LIST, m, f"Full-ranking {m}") for m in FULL_TABLES]
    for proto, metric, title in tables:
        lines += _eps_table(doc, proto, metric, title)
    lines += _headline_lines(doc)
    for proto in PROTOCOLS[1:]:
        lines += _eps_table(doc, proto, None, TITLES[proto])
    lines += _accounted_lines(doc) + _paper_lines(doc)
    lines += ["", "## Targets", ""] + [f"- {t}" for t in doc["targets"] or ["no dpals point "
                                                                        "at ε_user 1 or 8"]]
    return "\n".join(lines) + "\n"


def _eps_table(doc: dict[str, Any], proto: str, metric: str | None, title: str) -> list[str]:
    """One metric against ε_user: a row per system, then the references (the same value in
    every column); [] when no point has the metric (cells stored before it)."""
    eps = doc["user_epsilons"]
    refs = list(doc["references"].values())
    points = [p for pts in doc["systems"].values() for p in pts] + refs
    if metric is not None and not any(p.get("headline", {}).get(metric) for p in points):
        return []
    lines = [f"## {title}", "", f"ε_user: per-user ε under {AXIS.describe()}, δ = "
             f"{doc['delta']:g}.", "",
             "| system | config | seeds | " + " | ".join(f"ε_user {e:g}" for e in eps)
             + " |", "|---|---|---" + "|---" * len(eps) + "|"]
    for label, pts in doc["systems"].items():
        by = {p["target_user_epsilon"]: p for p in pts if p["kind"] == "frontier"}
        prov = config_column(pts)
        n = len(pts[0]["seeds"]) if pts else 0
        lines.append(f"| {label} | {prov} | {n} | " + " | ".join(
            fmt_point(by[e], proto, metric) if e in by else "–" for e in eps) + " |")
    for r in refs:
        lines.append(f"| {r['label']} | {r['config_provenance'].split(' (')[0]} | "
                     f"{len(r['seeds'])} | "
                     + " | ".join([fmt_point(r, proto, metric)] * len(eps)) + " |")
    return lines + [""]


def config_column(points: list[dict[str, Any]]) -> str:
    """The config column of one system's row of ε_user points (a paper point, at no ε_user,
    has its own table): their provenance (up to the path in brackets), or, where they ran
    from different configs (files tuned per ε), each provenance with the ε_user it covers,
    e.g. ``tuned at ε 1: ε_user 0.5, 1; tuned at ε 8: ε_user 8``."""
    groups: dict[str, list[str]] = {}
    for p in points:
        if p["target_user_epsilon"] is not None:
            groups.setdefault(p["config_provenance"].split(" (")[0], []).append(
                f"{p['target_user_epsilon']:g}")
    if len(groups) <= 1:
        return next(iter(groups), "")
    return "; ".join(f"{g}: ε_user {', '.join(e)}" for g, e in groups.items())


def _accounted_lines(doc: dict[str, Any]) -> list[str]:
    """The accounted per-user ε of every point (largest over seeds), the relation it was
    accounted under, and the replace-one guarantee at :data:`DETAIL_EPS`."""
    eps = doc["user_epsilons"]
    lines = ["## Accounted per-user ε (the system's own ε)", "",
             "Largest over seeds, from each run's privacy report, in parentheses the "
             "system's own ε (per bit / per report for the local systems); ! marks a point "
             f"above its target. Every value is on the axis relation ({AXIS.describe()}); "
             "\"accounted under\" is the relation of the system's own report, and each "
             "\"replace-one\" column the same point as a replace-one (ε, δ) (unchanged for a "
             "replace-one report; (2ε, (1 + e^ε) δ) for a zero-out one).", "",
             "| system | sides | accounted under | " + " | ".join(f"{e:g}" for e in eps)
             + " | " + " | ".join(f"replace-one at ε_user {e:g}" for e in DETAIL_EPS) + " |",
             "|---|---|---" + "|---" * (len(eps) + len(DETAIL_EPS)) + "|"]
    for label, pts in doc["systems"].items():
        by = {p["target_user_epsilon"]: p for p in pts if p["kind"] == "frontier"}
        first = pts[0] if pts else {}
        lines.append(
            f"| {label} | {first.get('sides', '')} | "
            f"{str(first.get('adjacency') or '–').replace('_', '-')} | " + " | ".join(
                (f"{by[e]['user_epsilon']:.4g} ({by[e]['mechanism_epsilon']:.4g})"
                 + (" !" if by[e]["over_target"] else "")) if e in by else "–" for e in eps)
            + " | " + " | ".join(_replace_one(by.get(e)) for e in DETAIL_EPS) + " |")
    return lines


def _replace_one(point: dict[str, Any] | None) -> str:
    """The point's guarantee as a replace-one (ε, δ), "–" when it has none."""
    if point is None or point.get("user_epsilon") is None:
        return "–"
    try:
        eps, delta = on_relation(point["user_epsilon"], point["user_delta"],
                                 Adjacency(point["adjacency"]), Adjacency.REPLACE_ONE)
    except (ValueError, DprecError, TypeError):
        return "–"
    return f"({eps:.4g}, {delta:.2g})" + (" vacuous" if delta >= 1 else "")


def _paper_lines(doc: dict[str, Any]) -> list[str]:
    """The seed systems at their paper setting, with the per-user ε at which each dpals
    reaches the same full-ranking HR@10 (sampled where the cells predate it)."""
    paper = [(label, p) for label, pts in doc["systems"].items() for p in pts
             if p["kind"] == "paper"]
    if not paper:
        return []
    eps = doc["user_epsilons"]
    proto = FULL_LIST if all(p.get(FULL_LIST) for _, p in paper) else "sampled"
    name = "full-ranking" if proto == FULL_LIST else "sampled"
    dpals = {k: v for k, v in doc["systems"].items() if k.startswith("dpals")}
    lines = ["", "## The seed systems at their paper setting", "",
             f"Each dpals column: the per-user ε at which that dpals reaches the seed "
             f"system's {name} HR@10 (linear in log ε between frontier points; ≤: already "
             "at its lowest point; >: not within the grid).", "",
             "| system | ε (own unit) | per-user ε | full-ranking HR@10 | sampled HR@10 "
             "(99 negatives) | full HR@10 (random ties) |"
             + "".join(f" {k}: ε_user at this {name} HR@10 |" for k in dpals),
             "|---|---|---|---|---|---" + "|---" * len(dpals) + "|"]
    for label, p in paper:
        match = [matching_user_epsilon(c, p[proto]["mean"], proto) for c in dpals.values()]
        lowest = [min((q["user_epsilon"] for q in c if q["kind"] == "frontier"),
                      default=None) for c in dpals.values()]
        lines.append(f"| {label} | {p['mechanism_epsilon']:g} | {p['user_epsilon']:.4g} | "
                     f"{fmt_point(p, FULL_LIST)} | {fmt_point(p, 'sampled')} | "
                     f"{fmt_point(p, 'full')} |"
                     + "".join(f" > {max(eps):g} |" if m is None else
                               f" ≤ {m:.3g} |" if m == low else f" {m:.3g} |"
                               for m, low in zip(match, lowest, strict=True)))
    return lines


def _headline_lines(doc: dict[str, Any]) -> list[str]:
    """Every headline metric of the full top-K lists, with sampled HR@10 beside: the
    references, then each system at the per-user ε of :data:`DETAIL_EPS`."""
    head = ["| system | ε_user | seeds | " + " | ".join(HEADLINE)
            + " | sampled HR@10 (99 negatives) |", "|---|---|---" + "|---" * len(HEADLINE)
            + "|---|"]
    rows = []
    for r in doc["references"].values():
        rows.append((r["label"], "–", r))
    for label, pts in doc["systems"].items():
        rows += [(label, f"{p['target_user_epsilon']:g}", p) for p in pts
                 if p["kind"] == "frontier" and p["target_user_epsilon"] in DETAIL_EPS]
    return [f"### Every full-ranking metric (references, and ε_user "
            f"{' and '.join(f'{e:g}' for e in DETAIL_EPS)})", "", *head,
            *(f"| {name} | {e} | {len(p['seeds'])} | "
              + " | ".join(fmt_point(p, FULL_LIST, m) for m in HEADLINE)
              + f" | {fmt_point(p, 'sampled')} |" for name, e, p in rows), ""]


def targets(doc: dict[str, Any]) -> list[str]:
    """The issue's targets, measured: dpals against popularity, ALS, EASE and the oracle
    (where they ran) at ε_user 1 and 8, on full-ranking HR@10 (sampled HR@10 where the
    stored cells predate it)."""
    refs = doc["references"]
    out = []
    points = [p for r in refs.values() for p in [r]] + [
        p for pts in doc["systems"].values() for p in pts]
    proto = FULL_LIST if all(p.get(FULL_LIST) for p in points) else "sampled"
    name = "full-ranking" if proto == FULL_LIST else "sampled"
    level = {k: (refs.get(k, {}).get(proto) or {}).get("mean")
             for k in ("popularity", "mf-np", "ease", "oracle")}
    shown = {"mf-np": "ALS", "ease": "EASE", "oracle": "the oracle"}
    for label, pts in doc["systems"].items():
        if not label.startswith("dpals"):
            continue
        for p in pts:
            if p["kind"] != "frontier" or p["target_user_epsilon"] not in (1.0, 8.0):
                continue
            hr = p[proto]["mean"]
            parts = [f"{label} at ε_user {p['target_user_epsilon']:g}: {name} HR@10 {hr:.3f}"]
            if level["popularity"] is not None:
                pop = level["popularity"]
                parts.append(f"popularity {pop:.3f} ({'above' if hr > pop else 'below'})")
            parts += [f"{hr / level[k]:.2f}× {v} ({level[k]:.3f})" for k, v in shown.items()
                      if level[k]]
            out.append(", ".join(parts))
    return out
