"""Laplace-SVD / Laplace-RR-SVD (seed 001) sweeps beside honest eps-LDP mechanisms.

Figure 2 analogue: RMSE against eps1 at a fixed eps2 for NonDP-SVD, Laplace-SVD (eps1),
Laplace-RR-SVD (eps1, eps2; true guarantee none) and every honest mechanism (ldp-svd with
laplace, duchi, piecewise) at the same TOTAL eps = eps1 + eps2; plus Laplace-SVD and
Laplace-RR-SVD with the server's plain Funk SVD ("paper SVD", noise_weighting=false), which
diverges where the Laplace noise is large (recorded as a failure).
Figure 3 analogue: Laplace-RR-SVD RMSE over an eps1 x eps2 grid (the paper: 0.1..3 in steps
of 0.1; default here 0.1 and 0.5..3 in steps of 0.5, --grid-step to change).
Table: every system at total eps = 1 and 2 (Laplace-RR-SVD split eps1 = eps2 = total / 2),
with hide_items (fake reports on unrated items) for laplace and piecewise.

Protocol: Experiment(ml-100k, seeds, KFoldSplit(folds), RatingEvaluator()): k-fold over the
ratings, RMSE / MAE of predictions clipped to 1..5, mean ± std over (seed, fold); the same
folds for every run. Funk SVD: Surprise's defaults (100 factors, lr 0.005, reg 0.02, 20
epochs, biases), noise-weighted on the server unless stated. Defaults: 5 folds, 1 seed (about
10 minutes on 2 cores). Writes results/ldp_svd/{fig2,fig3,table}.{json,png}. Usage:
  .venv/bin/python experiments/ldp_svd_sweeps.py [--folds 5] [--seeds 1] [--epochs 20]
      [--eps2 1.0] [--eps1 0.1 0.5 1 1.5 2 2.5 3] [--grid-step 0.5] [--totals 1 2]
      [--only fig2 fig3 table]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.errors import DprecError  # noqa: E402
from dprec.evaluation.rating import RatingEvaluator  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import KFoldSplit  # noqa: E402
from dprec.systems.registry import SYSTEMS, make_system  # noqa: E402

HONEST = ("laplace", "duchi", "piecewise")
WITHIN = 0.05


def run(exp: Experiment, system: str, params: dict[str, object]) -> dict[str, Any]:
    """One system on the experiment's folds: RMSE/MAE mean ± std and the privacy summary."""
    start = time.perf_counter()
    try:
        r = exp.run(lambda: make_system(system, params))
    except DprecError as e:
        return {"system": system, "params": params, "error": str(e), "RMSE": None,
                "MAE": None, "wall_time_s": time.perf_counter() - start}
    p = r.privacy or {}
    levels = p.get("levels") or {}
    return {
        "system": system, "params": params,
        "RMSE": r.metrics["rating"]["RMSE"], "MAE": r.metrics["rating"]["MAE"],
        "privacy": None if not p else {
            "true_per_rating": p["true"]["epsilon"], "sides": p["true"]["sides"],
            "claimed_per_rating": (p.get("claimed") or {}).get("epsilon"),
            "per_user_pld": levels["user"]["epsilon"],
            "per_user_basic": (levels.get("user_basic") or {}).get("epsilon"),
            "per_user_values_pld": levels["user_values"]["epsilon"],
            "per_rating_presence_and_value": levels["event"]["epsilon"],
        },
        "wall_time_s": r.wall_time_s,
    }


def _rmse(cell: dict[str, Any]) -> float:
    return math.nan if cell["RMSE"] is None else float(cell["RMSE"]["mean"])


def _fmt(cell: dict[str, Any]) -> str:
    if cell["RMSE"] is None:
        return "diverged"
    return f"{cell['RMSE']['mean']:.4f}±{cell['RMSE']['std']:.3f}"


def _honest(total: float, epochs: dict[str, object]) -> dict[str, tuple[str, dict]]:
    return {f"ldp-svd[{m}] @ eps1+eps2": ("ldp-svd", {**epochs, "mechanism": m,
                                                     "epsilon": total}) for m in HONEST}


def verdict(rr: float, honest: dict[str, float]) -> dict[str, Any]:
    best = min(honest, key=lambda k: honest[k])
    gap = honest[best] - rr
    return {"laplace_rr_svd": rr, "best_honest": best, "best_honest_rmse": honest[best],
            "gap": gap, "within_0.05": bool(gap <= WITHIN)}


def figure2(exp: Experiment, args: argparse.Namespace, ep: dict[str, object],
            nondp: dict[str, Any] | None) -> dict[str, Any]:
    lines: dict[str, list[dict[str, Any]]] = {}
    verdicts = []
    for eps1 in args.eps1:
        total = eps1 + args.eps2
        systems = {
            "laplace-svd @ eps1": ("laplace-svd", {**ep, "epsilon": eps1}),
            "laplace-rr-svd": ("laplace-rr-svd", {**ep, "eps1": eps1, "eps2": args.eps2}),
            **_honest(total, ep),
            "laplace-svd @ eps1 (paper SVD)": ("laplace-svd", {**ep, "epsilon": eps1,
                                                             "noise_weighting": False}),
            "laplace-rr-svd (paper SVD)": ("laplace-rr-svd", {**ep, "eps1": eps1,
                                                              "eps2": args.eps2,
                                                              "noise_weighting": False}),
        }
        row = {}
        for label, (system, params) in systems.items():
            cell = run(exp, system, params)
            cell.update(eps1=eps1, eps2=args.eps2, total=total)
            lines.setdefault(label, []).append(cell)
            row[label] = cell
        v = verdict(_rmse(row["laplace-rr-svd"]),
                    {m: _rmse(row[f"ldp-svd[{m}] @ eps1+eps2"]) for m in HONEST})
        verdicts.append({"eps1": eps1, "eps2": args.eps2, "total": total, **v})
        print(f"  eps1={eps1:<4g} total={total:<4g} " + "  ".join(
            f"{k.replace(' @ eps1+eps2', '')}: {_fmt(c)}" for k, c in row.items()), flush=True)
    return {"eps2": args.eps2, "eps1": args.eps1, "lines": lines, "nondp": nondp,
            "same_total_eps": verdicts}


def figure3(exp: Experiment, grid: list[float], ep: dict[str, object]) -> dict[str, Any]:
    rmse = np.full((len(grid), len(grid)), np.nan)
    cells = []
    for a, eps2 in enumerate(grid):
        for b, eps1 in enumerate(grid):
            cell = run(exp, "laplace-rr-svd", {**ep, "eps1": eps1, "eps2": eps2})
            cell.update(eps1=eps1, eps2=eps2)
            cells.append(cell)
            rmse[a, b] = _rmse(cell)
        print(f"  eps2={eps2:<4g} " + " ".join(f"{v:.4f}" for v in rmse[a]), flush=True)
    return {"grid": grid, "rmse_rows_eps2_cols_eps1": rmse.tolist(), "cells": cells}


def table(exp: Experiment, totals: list[float], ep: dict[str, object]) -> dict[str, Any]:
    out = []
    for total in totals:
        systems = {
            "laplace-svd (= ldp-svd[laplace])": ("laplace-svd", {**ep, "epsilon": total}),
            "laplace-rr-svd (eps1 = eps2 = total/2)": (
                "laplace-rr-svd", {**ep, "eps1": total / 2, "eps2": total / 2}),
            "ldp-svd[duchi]": ("ldp-svd", {**ep, "mechanism": "duchi", "epsilon": total}),
            "ldp-svd[piecewise]": ("ldp-svd", {**ep, "mechanism": "piecewise",
                                               "epsilon": total}),
            "ldp-svd[laplace, hide_items]": ("ldp-svd", {**ep, "mechanism": "laplace",
                                                         "epsilon": total, "hide_items": True}),
            "ldp-svd[piecewise, hide_items]": ("ldp-svd", {**ep, "mechanism": "piecewise",
                                                           "epsilon": total,
                                                           "hide_items": True}),
            "laplace-svd (paper SVD)": ("laplace-svd", {**ep, "epsilon": total,
                                                        "noise_weighting": False}),
            "laplace-rr-svd (paper SVD)": ("laplace-rr-svd", {**ep, "eps1": total / 2,
                                                              "eps2": total / 2,
                                                              "noise_weighting": False}),
        }
        rows = {}
        for label, (system, params) in systems.items():
            rows[label] = run(exp, system, params)
            c = rows[label]
            mae = "" if c["MAE"] is None else f"MAE {c['MAE']['mean']:.4f}±{c['MAE']['std']:.3f}"
            print(f"  total eps {total:g}  {label:42s} RMSE {_fmt(c)}  {mae}", flush=True)
        honest = {k: _rmse(rows[k]) for k in ("laplace-svd (= ldp-svd[laplace])",
                                              "ldp-svd[duchi]", "ldp-svd[piecewise]")}
        out.append({"total": total, "rows": rows,
                    "verdict": verdict(_rmse(rows["laplace-rr-svd (eps1 = eps2 = total/2)"]),
                                       honest)})
    return {"totals": totals, "results": out}


def plot2(doc: dict[str, Any], path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for label, cells in doc["lines"].items():
        x = [c["eps1"] for c in cells]
        y = [_rmse(c) for c in cells]
        ax.plot(x, y, "--" if "paper SVD" in label else "-", marker="o", ms=3, label=label)
    if doc["nondp"] is not None:
        ax.axhline(_rmse(doc["nondp"]), color="k", lw=1, label="nondp-svd")
    ax.set_xlabel(f"ε1 (honest mechanisms at ε1 + ε2, ε2 = {doc['eps2']:g})")
    ax.set_ylabel("RMSE")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot3(doc: dict[str, Any], path: Path, title: str) -> None:
    rmse = np.array(doc["rmse_rows_eps2_cols_eps1"])
    grid = doc["grid"]
    fig, ax = plt.subplots(figsize=(6.5, 5.2))
    im = ax.imshow(rmse, cmap="viridis_r", origin="lower")
    for a in range(rmse.shape[0]):
        for b in range(rmse.shape[1]):
            ax.text(b, a, f"{rmse[a, b]:.3f}", ha="center", va="center", fontsize=7,
                    color="white" if rmse[a, b] > np.nanmean(rmse) else "black")
    ax.set_xticks(range(len(grid)), [f"{e:g}" for e in grid])
    ax.set_yticks(range(len(grid)), [f"{e:g}" for e in grid])
    ax.set_xlabel("ε1 (Laplace step)")
    ax.set_ylabel("ε2 (report the true rating w.p. e^ε2/(1+e^ε2))")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="RMSE")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=20, help="Funk SVD epochs")
    ap.add_argument("--eps2", type=float, default=1.0, help="Figure 2's fixed eps2")
    ap.add_argument("--eps1", type=float, nargs="+", default=[0.1, 0.5, 1, 1.5, 2, 2.5, 3])
    ap.add_argument("--grid-step", type=float, default=0.5,
                    help="Figure 3 grid: 0.1, then step .. 3 (paper: 0.1)")
    ap.add_argument("--totals", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--only", nargs="+", choices=["fig2", "fig3", "table"],
                    default=["fig2", "fig3", "table"])
    ap.add_argument("--out", type=Path, default=Path("results/ldp_svd"))
    args = ap.parse_args()

    start = time.perf_counter()
    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    exp = Experiment(ds, range(args.seeds), KFoldSplit(args.folds), RatingEvaluator())
    ep: dict[str, object] = {"epochs": args.epochs}
    args.out.mkdir(parents=True, exist_ok=True)
    head = {"dataset": ds.summary(), "protocol": exp.protocol(), "seeds": exp.seeds,
            "svd_epochs": args.epochs, "dprec_version": dprec.__version__}
    label = f"{ds.name}, {args.folds}-fold, {args.seeds} seed(s), SVD {args.epochs} epochs"
    nondp = None
    if "nondp-svd" in SYSTEMS:
        nondp = run(exp, "nondp-svd", ep)
        print(f"{label}\nnondp-svd RMSE {_fmt(nondp)}", flush=True)
    else:
        print("nondp-svd is not registered: Figure 2 without the non-private line")

    if "table" in args.only:
        print("Table: every system at the same total eps")
        doc = {**head, "experiment": "ldp_svd table (total eps)", "nondp": nondp,
               **table(exp, args.totals, ep)}
        (args.out / "table.json").write_text(json.dumps(doc, indent=2, default=float))
    if "fig2" in args.only:
        print(f"Figure 2: RMSE vs eps1 at eps2 = {args.eps2:g}")
        doc = {**head, "experiment": "seed 001 Figure 2 analogue", **figure2(exp, args, ep,
                                                                            nondp)}
        (args.out / "fig2.json").write_text(json.dumps(doc, indent=2, default=float))
        plot2(doc, args.out / "fig2.png", f"RMSE vs ε1, {label}")
        for v in doc["same_total_eps"]:
            print(f"  total {v['total']:<4g} Laplace-RR-SVD {v['laplace_rr_svd']:.4f}, best "
                  f"honest {v['best_honest']} {v['best_honest_rmse']:.4f} (gap "
                  f"{v['gap']:+.4f}, within 0.05: {v['within_0.05']})")
    if "fig3" in args.only:
        grid = [0.1] + [float(x) for x in np.arange(args.grid_step, 3.0 + 1e-9, args.grid_step)
                        if x > 0.1 + 1e-9]
        print(f"Figure 3: Laplace-RR-SVD RMSE, rows eps2, columns eps1 = {grid}")
        doc = {**head, "experiment": "seed 001 Figure 3 analogue", **figure3(exp, grid, ep)}
        (args.out / "fig3.json").write_text(json.dumps(doc, indent=2, default=float))
        plot3(doc, args.out / "fig3.png", f"Laplace-RR-SVD RMSE (true guarantee: none), {label}")
    print(f"saved {args.out} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
