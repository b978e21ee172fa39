"""FMF-LDP over a users x items grid (the paper's Figure 4 analogue), on SYNTHETIC data.

The paper takes subsets of MovieLens-20M (>= 60 interactions per user); here every cell is a
fresh MovieLens-like synthetic set (dprec.data.registry ``synthetic-<U>x<I>-<n>``, labelled
synthetic everywhere) with ML-20M's filtered density, n = density x U x I (17M / (75K x 10K)
= 2.3%), raised where needed to 2 x min-per-user x U so that the registry gives every user
at least min-per-user (20) interactions. FMF-LDP (binary mechanism, k = 100, eps = 2.5, 20
epochs) is evaluated on a LATEST leave-one-out split, the held-out item ranked against 99
sampled never-seen items. The paper's grid numbers (SYSTEMS.md §2) are put beside ours.
Cells with more than --max-interactions interactions are skipped and listed as not run.
Writes results/fmf_ldp_grid/fmf_ldp_grid.{json,png} (the JSON after every cell). Usage:
  .venv/bin/python experiments/fmf_ldp_grid.py [--users 1000 10000 50000]
      [--items 1000 5000 10000] [--k 100] [--epsilon 2.5] [--seeds 1] [--lr 1e-3] [--with-fcf]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import LeaveOneOutSplit  # noqa: E402
from dprec.systems.fmf.system import FederatedMF, FMFConfig  # noqa: E402

# FMF-LDP paper, HR@10 on ML-20M subsets, k = 100, eps = 2.5 (copied from SYSTEMS.md §2).
PAPER_GRID: dict[int, dict[int, float]] = {
    1000: {1000: 0.1160, 5000: 0.1010, 10000: 0.1090},
    10000: {1000: 0.6325, 5000: 0.1988, 10000: 0.1216},
    50000: {1000: 0.6972, 5000: 0.6801, 10000: 0.5654},
}


def interactions(users: int, items: int, density: float, min_per_user: int) -> int:
    """density x U x I, at least 2 x min_per_user x U (so the registry's minimum is met)."""
    return max(round(density * users * items), 2 * min_per_user * users)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--items", type=int, nargs="+", default=[1000, 5000, 10000])
    ap.add_argument("--density", type=float, default=17e6 / (75e3 * 10e3))
    ap.add_argument("--min-per-user", type=int, default=20)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=2.5)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--split", choices=["random", "latest"], default="latest")
    ap.add_argument("--lr", type=float, default=1e-3, help="server learning rate (paper 1e-3)")
    ap.add_argument("--with-fcf", action="store_true", help="also run non-private FCF per cell")
    ap.add_argument("--max-interactions", type=int, default=None,
                    help="skip cells larger than this (they are reported as not run)")
    ap.add_argument("--out", type=Path, default=Path("results/fmf_ldp_grid"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    doc: dict[str, object] = {
        "experiment": "fmf_ldp_grid (paper Figure 4 analogue), SYNTHETIC data",
        "data": "dprec synthetic MovieLens-like generator via the registry, seed 0",
        "density_target": args.density, "min_per_user": args.min_per_user,
        "k": args.k, "epsilon_per_report": args.epsilon, "epochs": args.epochs, "lr": args.lr,
        "split": args.split, "seeds": list(range(args.seeds)),
        "metric": "HR@10 sampled (99 negatives)", "dprec_version": dprec.__version__,
        "paper_ml20m_subsets": {str(u): {str(i): v for i, v in d.items()}
                                for u, d in PAPER_GRID.items()},
        "cells": [], "not_run": [],
    }
    ours = np.full((len(args.users), len(args.items)), np.nan)
    for a, u in enumerate(args.users):
        for b, i in enumerate(args.items):
            n = interactions(u, i, args.density, args.min_per_user)
            if args.max_interactions is not None and n > args.max_interactions:
                doc["not_run"].append({"users": u, "items": i, "interactions": n})
                print(f"synthetic {u:>6d} users x {i:>6d} items: {n} interactions, NOT RUN "
                      f"(> --max-interactions)", flush=True)
                continue
            ds = load_dataset(f"synthetic-{u}x{i}-{n}")
            exp = Experiment(ds, range(args.seeds), LeaveOneOutSplit(args.split))
            r = exp.run(lambda: FederatedMF(f"FMF-LDP-{args.k}", FMFConfig(
                k=args.k, epsilon=args.epsilon, epochs=args.epochs, lr=args.lr)))
            m = r.metrics["sampled"]["HR@10"]
            ours[a, b] = m["mean"]
            cell: dict[str, object] = {
                "users": u, "items": i, "interactions": n, "density": n / (u * i),
                "min_user_interactions": int(np.diff(ds.matrix.indptr).min()),
                "HR@10": m, "full_HR@10": r.metrics["full"]["HR@10"],
                "paper_HR@10": PAPER_GRID.get(u, {}).get(i), "wall_time_s": r.wall_time_s,
                "privacy": r.privacy,
            }
            spread = f" ± {m['std']:.4f}" if args.seeds > 1 else ""
            paper = cell["paper_HR@10"]
            line = (f"synthetic {u:>6d} users x {i:>6d} items ({n / (u * i):.2%}): FMF-LDP "
                    f"HR@10 {m['mean']:.4f}{spread} (paper "
                    f"{'-' if paper is None else paper}) {r.wall_time_s:.0f} s")
            if args.with_fcf:
                f = exp.run(lambda: FederatedMF("FCF", FMFConfig(exact=True, epochs=args.epochs,
                                                                  lr=args.lr)))
                cell["fcf_HR@10"] = f.metrics["sampled"]["HR@10"]
                line += f"; FCF {cell['fcf_HR@10']['mean']:.4f}"
            print(line, flush=True)
            doc["cells"].append(cell)
            (args.out / "fmf_ldp_grid.json").write_text(json.dumps(doc, indent=2))

    print(f"\nHR@10 (sampled), synthetic data [paper, ML-20M subsets], k={args.k}, "
          f"eps={args.epsilon}, lr={args.lr:g}, {args.split} LOO, seeds={args.seeds}")
    print("users \\ items " + " ".join(f"{i:>17d}" for i in args.items))
    for a, u in enumerate(args.users):
        row = []
        for b, i in enumerate(args.items):
            p = PAPER_GRID.get(u, {}).get(i)
            ps = f"[{p:.4f}]" if p is not None else "[  -   ]"
            row.append(("  not run" if np.isnan(ours[a, b]) else f"{ours[a, b]:9.4f}") + ps)
        print(f"{u:13d} " + " ".join(f"{c:>17s}" for c in row))
    (args.out / "fmf_ldp_grid.json").write_text(json.dumps(doc, indent=2))
    plot(ours, args, args.out / "fmf_ldp_grid.png")
    print(f"saved {args.out}")


def plot(ours: np.ndarray, args: argparse.Namespace, path: Path) -> None:
    paper = np.array([[PAPER_GRID.get(u, {}).get(i, np.nan) for i in args.items]
                      for u in args.users], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    panels = ((axes[0], ours, "ours: synthetic MovieLens-like data"),
              (axes[1], paper, "paper: ML-20M subsets"))
    for ax, grid, title in panels:
        im = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0.0, vmax=1.0,
                       origin="lower")
        for a in range(grid.shape[0]):
            for b in range(grid.shape[1]):
                v = grid[a, b]
                ax.text(b, a, "not run" if np.isnan(v) else f"{v:.3f}", ha="center",
                        va="center", fontsize=9, color="white" if np.isnan(v) or v < 0.6
                        else "black")
        ax.set_xticks(range(len(args.items)), [str(i) for i in args.items])
        ax.set_yticks(range(len(args.users)), [str(u) for u in args.users])
        ax.set_xlabel("items")
        ax.set_ylabel("users")
        ax.set_title(title, fontsize=10)
        fig.colorbar(im, ax=ax, label="HR@10 (sampled)")
    fig.suptitle(f"FMF-LDP HR@10, k={args.k}, ε={args.epsilon}, {args.epochs} epochs, "
                 f"lr {args.lr:g}, "
                 f"{args.split} LOO", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
