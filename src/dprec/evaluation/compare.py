"""Side-by-side comparison: every system on the same folds, an eps sweep, files and plots."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from dprec.evaluation.paper_numbers import PAPER_ML20M
from dprec.evaluation.plots import plot_hr_at_k, plot_metric_vs_eps
from dprec.evaluation.runner import Experiment, RunResult
from dprec.systems.registry import PRIVATE_SYSTEMS, SystemOptions, make_system

TABLE_METRICS = ("HR@2", "HR@5", "HR@10", "NDCG@10")

DEFAULT_COMPARISON = (
    "random", "popularity", "lcf-ub", "lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap",
    "dplcf-oue", "dplcf-eb", "bpr-mf", "mf-np", "fcf", "fmf-ldp",
)
DEFAULT_EPS_GRID = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)

Tick = Callable[[str], None]


def run_systems(experiment: Experiment, names: Sequence[str], options: SystemOptions,
                tick: Tick | None = None) -> dict[str, RunResult]:
    """Run each named system on the experiment's shared folds."""
    out: dict[str, RunResult] = {}
    for name in names:
        out[name] = experiment.run(lambda n=name: make_system(n, options),
                                   on_seed=(lambda s, n=name: tick(n)) if tick else None)
    return out


def eps_sweep(experiment: Experiment, names: Sequence[str], options: SystemOptions,
              eps_grid: Sequence[float], metric: str = "HR@10", protocol: str = "sampled",
              tick: Tick | None = None) -> dict[str, list[tuple[float, float, float]]]:
    """metric (mean, std over seeds) against eps for each private system."""
    sweep: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}
    for eps in eps_grid:
        res = run_systems(experiment, names, replace(options, epsilon=float(eps)), tick)
        for n, r in res.items():
            m = r.metrics[protocol][metric]
            sweep[n].append((float(eps), m["mean"], m["std"]))
    return sweep


def comparison_rows(results: dict[str, RunResult]) -> list[dict[str, object]]:
    """One row per system: our sampled/full metrics (mean, std) and the paper's column."""
    rows = []
    for name, r in results.items():
        row: dict[str, object] = {"system": name}
        for proto in ("sampled", "full"):
            for m in TABLE_METRICS:
                v = r.metrics[proto][m]
                row[f"{proto} {m}"] = v["mean"]
                row[f"{proto} {m} std"] = v["std"]
        for m in TABLE_METRICS:
            row[f"paper ML-20M {m}"] = PAPER_ML20M.get(name, {}).get(m, math.nan)
        true = (r.privacy or {}).get("true") if r.privacy else None
        row["true eps"] = true["epsilon"] if true else ""
        row["sides"] = true["sides"] if true else ""
        rows.append(row)
    return rows


def save_comparison(out_dir: Path, dataset: str, results: dict[str, RunResult],
                    sweep: dict[str, list[tuple[float, float, float]]] | None,
                    ks: list[int]) -> list[Path]:
    """results.json, results.csv, hr_at_k.png and (with a sweep) hr10_vs_eps.png."""
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {"dataset": dataset, "results": {n: r.to_json() for n, r in results.items()},
           "eps_sweep": sweep}
    paths = [out_dir / "results.json", out_dir / "results.csv"]
    paths[0].write_text(json.dumps(doc, indent=2, default=float))
    rows = comparison_rows(results)
    with paths[1].open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    js = {n: r.to_json() for n, r in results.items()}
    paths.append(plot_hr_at_k(js, ks, out_dir / "hr_at_k.png", f"HR@K on {dataset} (sampled)"))
    paths.append(plot_hr_at_k(js, ks, out_dir / "hr_at_k_full.png",
                              f"HR@K on {dataset} (full ranking)", protocol="full"))
    if sweep:
        refs = {n: results[n].metrics["sampled"]["HR@10"]["mean"]
                for n in ("lcf-ub", "random") if n in results}
        paths.append(plot_metric_vs_eps(sweep, out_dir / "hr10_vs_eps.png",
                                        f"HR@10 against ε on {dataset}", references=refs))
    return paths


def private_names(names: Sequence[str]) -> list[str]:
    return [n for n in names if n in PRIVATE_SYSTEMS]
