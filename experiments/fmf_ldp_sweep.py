"""FMF-LDP privacy-utility heat map (the paper's Figure 2 analogue): HR@10 over eps x k.

Each cell trains FMF-LDP (binary mechanism, per-report eps, k reports per user per epoch, 20
epochs) and evaluates it on a RANDOM leave-one-out split, the held-out item ranked against
99 sampled never-seen items (dprec.evaluation.runner.Experiment, folds shared by all cells).
FCF (exact gradients, non-private) is run once as the upper reference. The script states
whether k = 1 is at the random level (HR@10 = 0.10), as the paper says: the k = 1 cells are
re-run with --random-check-seeds seeds (the grid's seeds share folds, so a few seeds move a
whole row together) and a cell counts as "at random level" when |HR@10 - 0.10| is within 2
standard errors of the mean over those seeds (std / sqrt(seeds)).
The true per-user budget of a cell is T k eps (T epochs); the paper states k eps.
Writes results/fmf_ldp_sweep/fmf_ldp_sweep.{json,png}. Usage:
  .venv/bin/python experiments/fmf_ldp_sweep.py [--dataset ml-100k] [--epsilons 0.5 1 2.5 5]
      [--ks 1 10 50 100 250] [--epochs 20] [--seeds 3] [--lr 1e-3]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.dataset import Dataset  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import LeaveOneOutSplit  # noqa: E402
from dprec.systems.fmf.system import FederatedMF, FMFConfig  # noqa: E402

RANDOM_HR10 = 0.10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k", help="registry name")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.5, 5.0])
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 10, 50, 100, 250])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--split", choices=["random", "latest"], default="random")
    ap.add_argument("--lr", type=float, default=1e-3, help="server learning rate (paper 1e-3)")
    ap.add_argument("--random-check-seeds", type=int, default=12,
                    help="seeds of the k = 1 re-run that decides 'at random level'")
    ap.add_argument("--out", type=Path, default=Path("results/fmf_ldp_sweep"))
    args = ap.parse_args()

    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    exp = Experiment(ds, range(args.seeds), LeaveOneOutSplit(args.split))
    fcf = exp.run(lambda: FederatedMF("FCF", FMFConfig(exact=True, epochs=args.epochs, lr=args.lr)))
    print(f"{ds.name}: {args.split} leave-one-out, {args.epochs} epochs, seeds={args.seeds}; "
          f"FCF (non-private) HR@10 {fcf.metrics['sampled']['HR@10']['mean']:.4f}")
    cells: list[dict[str, object]] = []
    hr = np.zeros((len(args.ks), len(args.epsilons)))
    sd = np.zeros_like(hr)
    for a, k in enumerate(args.ks):
        for b, eps in enumerate(args.epsilons):
            r = exp.run(lambda k=k, eps=eps: FederatedMF(
                f"FMF-LDP-{k}", FMFConfig(k=k, epsilon=eps, epochs=args.epochs, lr=args.lr)))
            m = r.metrics["sampled"]["HR@10"]
            hr[a, b], sd[a, b] = m["mean"], m["std"]
            cells.append({"k": k, "epsilon": eps, "HR@10": m,
                          "full_HR@10": r.metrics["full"]["HR@10"],
                          "NDCG@10": r.metrics["sampled"]["NDCG@10"],
                          "epsilon_user_true": args.epochs * k * eps,
                          "epsilon_user_claimed": k * eps,
                          "privacy": r.privacy, "wall_time_s": r.wall_time_s})
            print(f"  k={k:4d} eps={eps:4.1f}  HR@10 {m['mean']:.4f} ± {m['std']:.4f}  "
                  f"({r.wall_time_s:.1f} s)", flush=True)

    check = random_check(ds, args) if 1 in args.ks else []
    k1_random = [c["at_random_level"] for c in check]
    verdict = (f"k = 1 re-run with {args.random_check_seeds} seeds: " + "; ".join(
        f"eps {c['epsilon']:g}: HR@10 {c['mean']:.4f} ± {c['se']:.4f} (SE)" for c in check)
        + " -> " + ("all at random level (0.10 within 2 SE)" if check and all(k1_random)
                    else f"{sum(k1_random)} of {len(check)} at random level"))
    print("\nHR@10 (sampled), rows k, columns eps")
    print("k \\ eps " + " ".join(f"{e:>15g}" for e in args.epsilons))
    for a, k in enumerate(args.ks):
        print(f"{k:7d} " + " ".join(f"{hr[a, b]:8.4f}±{sd[a, b]:.4f}"
                                    for b in range(len(args.epsilons))))
    print(verdict)

    args.out.mkdir(parents=True, exist_ok=True)
    doc = {
        "experiment": "fmf_ldp_sweep (paper Figure 2 analogue)",
        "dataset": {**ds.summary(), "synthetic": ds.name.startswith("synthetic")},
        "protocol": exp.protocol(), "epochs": args.epochs, "lr": args.lr, "seeds": exp.seeds,
        "metric": "HR@10 sampled (99 negatives)", "dprec_version": dprec.__version__,
        "fcf_HR@10": fcf.metrics["sampled"]["HR@10"], "cells": cells,
        "random_level": {"HR@10": RANDOM_HR10, "k1_check": check, "verdict": verdict},
    }
    (args.out / "fmf_ldp_sweep.json").write_text(json.dumps(doc, indent=2))
    plot(hr, sd, args, ds.name, fcf.metrics["sampled"]["HR@10"]["mean"],
         args.out / "fmf_ldp_sweep.png")
    print(f"saved {args.out}")


def random_check(ds: Dataset, args: argparse.Namespace) -> list[dict[str, object]]:
    """k = 1 at every eps over --random-check-seeds seeds: mean, SE, within 2 SE of 0.10?"""
    exp = Experiment(ds, range(args.random_check_seeds), LeaveOneOutSplit(args.split))
    out = []
    for eps in args.epsilons:
        r = exp.run(lambda eps=eps: FederatedMF(
            "FMF-LDP-1", FMFConfig(k=1, epsilon=eps, epochs=args.epochs, lr=args.lr)))
        hr = np.array([s["sampled"]["HR@10"] for s in r.per_seed])
        se = float(hr.std(ddof=1) / math.sqrt(len(hr))) if len(hr) > 1 else float("nan")
        out.append({"epsilon": eps, "seeds": len(hr), "mean": float(hr.mean()), "se": se,
                    "at_random_level": bool(abs(hr.mean() - RANDOM_HR10) <= 2 * se)})
    return out


def plot(hr: np.ndarray, sd: np.ndarray, args: argparse.Namespace, name: str, fcf: float,
         path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    im = ax.imshow(hr, cmap="viridis", vmin=0.0, vmax=max(fcf, float(hr.max())), origin="lower")
    for a in range(hr.shape[0]):
        for b in range(hr.shape[1]):
            ax.text(b, a, f"{hr[a, b]:.3f}\n±{sd[a, b]:.3f}", ha="center", va="center",
                    fontsize=8, color="white" if hr[a, b] < 0.6 * hr.max() else "black")
    ax.set_xticks(range(len(args.epsilons)), [f"{e:g}" for e in args.epsilons])
    ax.set_yticks(range(len(args.ks)), [str(k) for k in args.ks])
    ax.set_xlabel("ε per report")
    ax.set_ylabel("k (reports per user per epoch)")
    label = f"{name} (synthetic data)" if name.startswith("synthetic") else name
    ax.set_title(f"FMF-LDP HR@10, {label}, {args.split} LOO\n"
                 f"{args.epochs} epochs, lr {args.lr:g}, {args.seeds} seed(s); "
                 f"FCF (no DP) {fcf:.3f}, random 0.10", fontsize=9)
    fig.colorbar(im, ax=ax, label="HR@10 (sampled)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
