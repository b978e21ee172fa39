"""Side-by-side comparison: every system on the same folds, an eps sweep, files and plots."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dprec.evaluation.intervals import summary_half_width
from dprec.evaluation.paper_numbers import PAPER_ML20M
from dprec.evaluation.plots import plot_hr_at_k, plot_metric_vs_eps
from dprec.evaluation.ranking import FULL_LIST, HEADLINE
from dprec.evaluation.results import write_json
from dprec.evaluation.runner import Experiment, RunResult
from dprec.systems.registry import make_config, make_system, parse_label, spec

__all__ = [
    "DEFAULT_COMPARISON", "DEFAULT_EPS_GRID", "DEFAULT_PRIVREC_COMPARISON",
    "DEFAULT_STRONG_COMPARISON", "FULL_LIST", "HEADLINE",
    "DEFAULT_RATING_COMPARISON", "NARROW_LEVELS", "SWEEP_REFERENCES", "SweepPoint",
    "TABLE_METRICS", "Tick", "comparison_rows", "eps_sweep", "headline_columns",
    "level_epsilon", "private_names", "run_systems", "sampled_label", "save_comparison",
    "sweep_references", "table_metrics",
]

TABLE_METRICS = ("HR@2", "HR@5", "HR@10", "NDCG@10")

DEFAULT_COMPARISON = (
    "random", "popularity", "lcf-ub", "lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap",
    "dplcf-oue", "dplcf-eb", "bpr-mf", "gmf", "mf-np", "ease", "item-knn", "fcf", "fmf-ldp",
    "dp-pop", "dpals",
)
"""The seed systems with EASE and item-kNN beside ALS (issue 33: the non-private baselines
tuned for the full-ranking metric), then dp-pop and dpals on the secure sum at their default
per-user epsilon 1 (issue 24: `make run` shows them beside the seed systems)."""
DEFAULT_RATING_COMPARISON = (
    "global-mean", "bias", "nondp-svd", "pcc-knn", "cos-knn", "laplace-svd", "laplace-rr-svd",
    "ldp-svd[mechanism=laplace,epsilon=2]", "ldp-svd[mechanism=duchi,epsilon=2]",
    "ldp-svd[mechanism=piecewise,epsilon=2]", "dpsgd-mf", "dpps-mf", "pnbm", "dpsgd-pnbm",
    "dpps-pnbm",
)
"""Laplace-RR-SVD's defaults (eps1 = eps2 = 1) claim a total of 2: the honest mechanisms run
at that total; laplace-svd is the paper's Laplace-only baseline at eps1 = 1. The central-DP
baselines of seed 004 run at their default eps = 1."""
DEFAULT_PRIVREC_COMPARISON = (
    "random", "popularity", "fcf", "privrec", "privrec-cen", "fofl-self", "nn-self",
    "dp-privrec",
)
"""Seed 002's table (PrivRec, its baselines, DP-PrivRec at z = 1, M = 30) on its protocol."""
DEFAULT_STRONG_COMPARISON = ("random", "popularity", "ease", "mf-np", "dp-pop", "dpals")
"""Strong generalisation (the DPALS protocol): the baselines that fold a new user in from
their history alone, ALS, and the secure-sum systems at their default per-user epsilon."""
DEFAULT_EPS_GRID = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
SWEEP_REFERENCES = {"random": "random", "popularity": "popularity (non-private)",
                    "lcf-ub": "lcf-ub (non-private)"}
"""The systems drawn as horizontal lines on the eps-sweep plots, with their labels: random
(the floor), non-private popularity (the bar every private system must clear to be worth
its privacy loss) and LCF-UB (the DPLCF family's non-private upper bound)."""
NARROW_LEVELS = ("event_values", "user_values")
"""Levels of a narrower unit some systems report beside the whole-data ones (ldp-svd's
rating values, with which items were rated held fixed); never read as the per-user eps."""


def table_metrics(names: Sequence[str]) -> tuple[str, ...]:
    """The metric columns: the DPLCF table's set where present, else every metric."""
    if all(m in names for m in TABLE_METRICS):
        return TABLE_METRICS
    return tuple(names)

def sampled_label(results: Mapping[str, Mapping[str, Any]]) -> str:
    """"sampled (99 negatives)": the sampled protocol named with its negatives per test
    user, read from the first result's protocol (99 where it does not say)."""
    for r in results.values():
        p = r.get("protocol") if isinstance(r, Mapping) else None
        sampled = p.get("sampled") if isinstance(p, Mapping) else None
        if isinstance(sampled, Mapping) and isinstance(sampled.get("negatives"), int):
            return f"sampled ({sampled['negatives']} negatives)"
    return "sampled (99 negatives)"


def headline_columns(results: Mapping[str, Mapping[str, Any]], sampled: tuple[str, ...] = (
        "HR@10", "NDCG@10"), short: bool = False) -> list[tuple[str, str, str]]:
    """(header, protocol, metric) of the columns every ranking table leads with (issue 33):
    the :data:`HEADLINE` metrics of the full top-K lists, then the ``sampled`` metrics
    headed "HR@10 sampled (99 negatives)" (``short``: "sampled HR@10", for a terminal table
    whose title names the negatives); empty unless every result has the full top-K lists
    (older results files, rating, the PrivRec protocol keep their own tables)."""
    docs = list(results.values())
    if not docs or not all(FULL_LIST in d.get("metrics", {}) for d in docs):
        return []
    cols = [(m, FULL_LIST, m) for m in HEADLINE
            if any(m in d["metrics"][FULL_LIST] for d in docs)]
    if all("sampled" in d["metrics"] for d in docs):
        label = sampled_label(results)
        cols += [(f"sampled {m}" if short else f"{m} {label}", "sampled", m) for m in sampled
                 if any(m in d["metrics"]["sampled"] for d in docs)]
    return cols


Tick = Callable[[str], None]
SweepPoint = dict[str, Any]
"""{"epsilon": mechanism eps, "mean": .., "std": .., "user_epsilon": per-user eps,
"sides": "two" | "one" | "none"}."""


def run_systems(experiment: Experiment, names: Sequence[str], configs: Mapping[str, Any],
                tick: Tick | None = None,
                on_result: Callable[[str, RunResult], None] | None = None,
                on_error: Callable[[str, Exception], None] | None = None,
                ) -> dict[str, RunResult]:
    """Run each named system with its config on the experiment's shared folds.

    ``on_result`` sees each result as soon as it exists. With ``on_error``, a system that
    raises is reported there and skipped, so the others still run; without, it propagates.
    """
    out: dict[str, RunResult] = {}
    for name in names:
        try:
            system = parse_label(name)[0]
            out[name] = experiment.run(
                lambda s=system, n=name: make_system(s, config=configs.get(n)),
                on_seed=(lambda s, n=name: tick(n)) if tick else None)
            out[name].system = name
        except Exception as e:  # noqa: BLE001 - one failing system must not lose the others
            if on_error is None:
                raise
            on_error(name, e)
            continue
        if on_result is not None:
            on_result(name, out[name])
    return out


def eps_sweep(experiment: Experiment, names: Sequence[str], configs: Mapping[str, Any],
              eps_grid: Sequence[float], metric: str = "HR@10", protocol: str = "sampled",
              tick: Tick | None = None,
              on_error: Callable[[str, Exception], None] | None = None,
              ) -> dict[str, list[SweepPoint]]:
    """metric (mean, std over seeds) and the per-user epsilon against eps, per private system.

    A point whose run fails (reported to ``on_error``) is left out of its system's curve.
    """
    sweep: dict[str, list[SweepPoint]] = {n: [] for n in names}
    for eps in eps_grid:
        at = {n: make_config(parse_label(n)[0], {"epsilon": float(eps)}, configs.get(n))
              for n in names}
        res = run_systems(experiment, names, at, tick,
                          on_error=(lambda n, e, eps=eps: on_error(f"{n} at eps={eps:g}", e))
                          if on_error else None)
        for n, r in res.items():
            m = r.metrics[protocol][metric]
            sweep[n].append({"epsilon": float(eps), "mean": m["mean"], "std": m["std"],
                             "user_epsilon": level_epsilon(r.privacy, "user"),
                             "sides": _sides(r.privacy)})
    return sweep


def level_epsilon(privacy: dict[str, Any] | None, level: str) -> float:
    """epsilon of ``privacy.levels[level]`` (nan for a non-private system)."""
    if not privacy or "levels" not in privacy:
        return math.nan
    eps = privacy["levels"][level]["epsilon"]
    return math.inf if eps == "inf" else float(eps)


def _sides(privacy: dict[str, Any] | None) -> str:
    if not privacy or "levels" not in privacy:
        return "none"
    return str(privacy["levels"]["user"]["sides"])


def sweep_references(results: Mapping[str, dict], metric: str = "HR@10",
                     protocol: str = "sampled") -> dict[str, float]:
    """label -> mean ``metric`` of each :data:`SWEEP_REFERENCES` system among the results
    ``results`` (name -> result JSON)."""
    return {label: results[n]["metrics"][protocol][metric]["mean"]
            for n, label in SWEEP_REFERENCES.items() if n in results}


def comparison_rows(results: dict[str, RunResult]) -> list[dict[str, object]]:
    """One row per system: the full top-K list metrics first, then sampled/full (mean, std,
    95% interval half-width, NaN with one seed), the privacy levels, the paper.

    ``eps user`` is always the whole of a user's data (for the LDP rating systems: which
    items were rated and the values); a system that also reports a narrower unit adds its
    ``eps event_values``/``eps user_values`` columns (values only, the item set fixed).
    """
    rows = []
    for name, r in results.items():
        row: dict[str, object] = {"system": name}
        ordered = sorted(r.metrics.items(), key=lambda kv: kv[0] != FULL_LIST)
        for proto, metrics in ordered:
            for m in table_metrics(list(metrics)):
                row[f"{proto} {m}"] = metrics[m]["mean"]
                row[f"{proto} {m} std"] = metrics[m]["std"]
                ci, _ = summary_half_width(metrics[m], len(r.per_seed) or len(r.seeds))
                row[f"{proto} {m} ci95"] = math.nan if ci is None else ci
        if "sampled" in r.metrics:
            for m in TABLE_METRICS:
                row[f"paper ML-20M {m}"] = PAPER_ML20M.get(name, {}).get(m, math.nan)
        p = r.privacy
        levels = (p or {}).get("levels", {})
        for level in ("event", "user", "user_basic"):
            g = levels.get(level)
            row[f"eps {level}"] = g["epsilon"] if g else ""
            row[f"delta {level}"] = g["delta"] if g else ""
        for level in NARROW_LEVELS:
            if levels.get(level):
                row[f"eps {level}"] = levels[level]["epsilon"]
        row["sides"] = levels["user"]["sides"] if levels else ""
        row["model"] = levels["user"]["model"] if levels else ""
        rows.append(row)
    return rows


def save_comparison(out_dir: Path, dataset: str, results: dict[str, RunResult],
                    sweep: dict[str, list[SweepPoint]] | None,
                    ks: list[int], failed: Mapping[str, str] | None = None,
                    sweep_metric: tuple[str, str] = ("HR@10", "sampled")) -> list[Path]:
    """results.json (strict JSON: a non-finite number as the text "nan", "inf" or "-inf",
    :func:`~dprec.evaluation.results.write_json`), results.csv, HR@K plots, the sweep's
    ``sweep_metric`` (metric, protocol; recorded as ``eps_sweep_metric``) against eps and
    against per-user eps.

    ``failed`` (system -> error) is recorded in results.json beside the results.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {"dataset": dataset, "results": {n: r.to_json() for n, r in results.items()},
           "eps_sweep": sweep, "failed": dict(failed or {}),
           **({"eps_sweep_metric": {"metric": sweep_metric[0], "protocol": sweep_metric[1]}}
              if sweep else {})}
    paths = [out_dir / "results.json", out_dir / "results.csv"]
    write_json(paths[0], doc)
    if not results:
        return paths[:1]
    ranking = all("sampled" in r.metrics for r in results.values())
    rows = comparison_rows(results)
    with paths[1].open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    if not ranking:
        if all(set(r.metrics) <= {"full", FULL_LIST} and "full" in r.metrics
               for r in results.values()):  # the PrivRec protocol
            js = {n: r.to_json() for n, r in results.items()}
            paths.append(plot_hr_at_k(js, ks, out_dir / "hr_at_k_full.png",
                                      f"HR@K on {dataset} (user split, all unseen items)",
                                      protocol="full"))
        return paths
    js = {n: r.to_json() for n, r in results.items()}
    paths.append(plot_hr_at_k(js, ks, out_dir / "hr_at_k.png", f"HR@K on {dataset} (sampled)"))
    paths.append(plot_hr_at_k(js, ks, out_dir / "hr_at_k_full.png",
                              f"HR@K on {dataset} (full ranking)", protocol="full"))
    if sweep:
        metric, protocol = sweep_metric
        refs = sweep_references(js, metric, protocol)
        shown = f"{metric} ({'full ranking' if protocol == FULL_LIST else protocol})"
        paths.append(plot_metric_vs_eps(sweep, out_dir / "hr10_vs_eps.png",
                                        f"{shown} against ε on {dataset}", references=refs,
                                        order=list(js), ylabel=shown))
        paths.append(plot_metric_vs_eps(
            sweep, out_dir / "hr10_vs_user_eps.png",
            f"{shown} against the per-user ε on {dataset}", references=refs, ylabel=shown,
            x="user_epsilon", log_x=True, order=list(js),
            xlabel="per-user ε (all of a user's data; tightest sound analysis, log scale)"))
    return paths


def private_names(names: Sequence[str]) -> list[str]:
    return [n for n in names if spec(parse_label(n)[0]).private]

