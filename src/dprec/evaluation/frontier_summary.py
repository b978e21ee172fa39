"""The Markdown summary of the per-user ε frontier (experiments/frontier.py, issue 24 §3),
full ranking first (issue 33): full-ranking HR@10 against ε_user, every headline metric of
the full top-K lists at ε_user 1 and 8 beside the references, sampled HR@10 (99 negatives),
full HR@10 with random ties, the accounted ε, the seed systems' paper points and the
targets. Every cell is a mean with its 95% interval over seeds
(:mod:`dprec.evaluation.intervals`).
"""

from __future__ import annotations

import math
from typing import Any

from dprec.evaluation.intervals import INTERVAL_NOTE, format_interval
from dprec.evaluation.metrics import FULL_LIST, HEADLINE

__all__ = ["DETAIL_EPS", "METRIC", "PROTOCOLS", "TITLES", "fmt_point", "matching_user_epsilon",
           "summary_markdown", "targets"]

METRIC = "HR@10"
PROTOCOLS = (FULL_LIST, "sampled", "full")
TITLES = {FULL_LIST: "Full-ranking HR@10 (top 10 of all unseen items; ties: larger score, "
                     "then smaller item id)",
          "sampled": "Sampled HR@10 (99 negatives)",
          "full": "Full HR@10, ties broken at random (issue 24's column)"}
"""The section title of each protocol's HR@10 table, full ranking first."""
DETAIL_EPS = (1.0, 8.0)
"""The per-user ε of the table with every headline metric (issue 33's targets)."""


def fmt_point(point: dict[str, Any], proto: str, metric: str | None = None) -> str:
    """mean ± 95% interval of ``point[proto]`` (of ``point["headline"][metric]`` with a
    metric), "(1 seed)" for one seed, "–" where the stored cells lack it."""
    v = point.get(proto) if metric is None else point.get("headline", {}).get(metric)
    return "–" if v is None else format_interval(v, len(point["seeds"]), digits=3)


def matching_user_epsilon(curve: list[dict[str, Any]], value: float) -> float | None:
    """The smallest per-user ε at which ``curve`` (sampled HR@10) reaches ``value``: linear
    in log ε between the first two points that straddle it; None if it never does."""
    pts = sorted((p for p in curve if p["kind"] == "frontier"), key=lambda p: p["user_epsilon"])
    prev = None
    for p in pts:
        if p["sampled"]["mean"] >= value:
            if prev is None:
                return p["user_epsilon"]
            x0, x1 = math.log(prev["user_epsilon"]), math.log(p["user_epsilon"])
            y0, y1 = prev["sampled"]["mean"], p["sampled"]["mean"]
            return math.exp(x0 + (value - y0) / (y1 - y0) * (x1 - x0))
        prev = p
    return None


def summary_markdown(doc: dict[str, Any]) -> str:
    """The committed summary: provenance, the sampled and full tables, the accounted
    per-user ε, the seed systems' paper points, the references and the targets."""
    eps = doc["user_epsilons"]
    refs = doc["references"]
    lines = [f"# HR@10 against the per-user ε on {doc['dataset']} (issue 24 §3)", "",
             f"Command: `{doc['command']}`  ", f"Date: {doc['date']}, commit {doc['commit']} "
             "(plus uncommitted changes, if any)  ",
             f"Seeds: {doc['seeds']} (fewer where the seeds column says so); "
             f"δ = {doc['delta']:g}; latest-item leave-one-out; full ranking = every unseen "
             f"item, sampled = 99 negatives; {INTERVAL_NOTE} (\"1 seed\" where one ran; – "
             "where a stored cell predates the metric: rerun it with --force).  ",
             "Configs: " + doc["provenance"], "", *(f"- {n}" for n in doc.get("notes", [])),
             *([""] if doc.get("notes") else [])]
    for proto in PROTOCOLS:
        lines += [f"## {TITLES[proto]}", "",
                  "| system | config | seeds | " + " | ".join(f"ε_user {e:g}" for e in eps)
                  + " |", "|---|---|---" + "|---" * len(eps) + "|"]
        for label, pts in doc["systems"].items():
            by = {p["target_user_epsilon"]: p for p in pts if p["kind"] == "frontier"}
            prov = pts[0]["config_provenance"].split(" (")[0] if pts else ""
            n = len(pts[0]["seeds"]) if pts else 0
            lines.append(f"| {label} | {prov} | {n} | " + " | ".join(
                fmt_point(by[e], proto) if e in by else "–" for e in eps) + " |")
        for r in refs.values():
            lines.append(f"| {r['label']} | {r['config_provenance'].split(' (')[0]} | "
                         f"{len(r['seeds'])} | "
                         + " | ".join([fmt_point(r, proto)] * len(eps)) + " |")
        lines.append("")
        if proto == FULL_LIST:
            lines += _headline_lines(doc)
    lines += ["## Accounted per-user ε (the system's own ε)", "",
              "Largest over seeds, from each run's privacy report; ! marks a point above its "
              "target.", "", "| system | sides | " + " | ".join(f"{e:g}" for e in eps) + " |",
              "|---|---" + "|---" * len(eps) + "|"]
    for label, pts in doc["systems"].items():
        by = {p["target_user_epsilon"]: p for p in pts if p["kind"] == "frontier"}
        sides = pts[0]["sides"] if pts else ""
        lines.append(f"| {label} | {sides} | " + " | ".join(
            (f"{by[e]['user_epsilon']:.4g} ({by[e]['mechanism_epsilon']:.4g})"
             + (" !" if by[e]["over_target"] else "")) if e in by else "–" for e in eps) + " |")
    paper = [(label, p) for label, pts in doc["systems"].items() for p in pts
             if p["kind"] == "paper"]
    if paper:
        dpals = {k: v for k, v in doc["systems"].items() if k.startswith("dpals")}
        lines += ["", "## The seed systems at their paper setting", "",
                  "Each dpals column: the per-user ε at which that dpals reaches the seed "
                  "system's sampled HR@10 (linear in log ε between frontier points; ≤: already "
                  "at its lowest point; >: not within the grid).", "",
                  "| system | ε (own unit) | per-user ε | full-ranking HR@10 | sampled HR@10 "
                  "(99 negatives) | full HR@10 (random ties) |"
                  + "".join(f" {k}: ε_user at this sampled HR@10 |" for k in dpals),
                  "|---|---|---|---|---|---" + "|---" * len(dpals) + "|"]
        for label, p in paper:
            match = [matching_user_epsilon(c, p["sampled"]["mean"]) for c in dpals.values()]
            lowest = [min((q["user_epsilon"] for q in c if q["kind"] == "frontier"),
                          default=None) for c in dpals.values()]
            lines.append(f"| {label} | {p['mechanism_epsilon']:g} | {p['user_epsilon']:.4g} | "
                         f"{fmt_point(p, FULL_LIST)} | {fmt_point(p, 'sampled')} | "
                         f"{fmt_point(p, 'full')} |"
                         + "".join(
                             f" > {max(eps):g} |" if m is None else
                             f" ≤ {m:.3g} |" if m == low else f" {m:.3g} |"
                             for m, low in zip(match, lowest, strict=True)))
    lines += ["", "## Targets", ""] + [f"- {t}" for t in doc["targets"] or ["no dpals point "
                                                                        "at ε_user 1 or 8"]]
    return "\n".join(lines) + "\n"


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
    """The issue's targets, measured: dpals against popularity and ALS at ε_user 1 and 8,
    on full-ranking HR@10 (sampled HR@10 where the stored cells predate it)."""
    refs = doc["references"]
    out = []
    points = [p for r in refs.values() for p in [r]] + [
        p for pts in doc["systems"].values() for p in pts]
    proto = FULL_LIST if all(p.get(FULL_LIST) for p in points) else "sampled"
    name = "full-ranking" if proto == FULL_LIST else "sampled"
    pop = (refs.get("popularity", {}).get(proto) or {}).get("mean")
    als = (refs.get("mf-np", {}).get(proto) or {}).get("mean")
    for label, pts in doc["systems"].items():
        if not label.startswith("dpals"):
            continue
        for p in pts:
            if p["kind"] != "frontier" or p["target_user_epsilon"] not in (1.0, 8.0):
                continue
            hr = p[proto]["mean"]
            parts = [f"{label} at ε_user {p['target_user_epsilon']:g}: {name} HR@10 {hr:.3f}"]
            if pop is not None:
                parts.append(f"popularity {pop:.3f} ({'above' if hr > pop else 'below'})")
            if als is not None:
                parts.append(f"{hr / als:.2f}× ALS ({als:.3f})")
            out.append(", ".join(parts))
    return out
