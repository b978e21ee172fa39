"""FMF-LDP over a users x items grid (the paper's Figure 4 analogue), synthetic or real data.

The paper takes subsets of MovieLens-20M (>= 60 interactions per user); here every cell is a
fresh MovieLens-like synthetic set (dprec.data.registry ``synthetic-<U>x<I>-<n>``, labelled
synthetic everywhere) with ML-20M's filtered density, n = density x U x I (17M / (75K x 10K)
= 2.3%), raised where needed to 2 x min-per-user x U so that the registry gives every user
at least min-per-user (20) interactions. FMF-LDP (binary mechanism, k = 100, eps = 2.5, 20
epochs) is evaluated on a LATEST leave-one-out split, the held-out item ranked against 99
sampled never-seen items. The paper's grid numbers (docs/architecture.md §2) are put beside ours.
Cells with more than --max-interactions interactions are skipped and listed as not run.

Real data (``--data ml-100k``, any registry name): each cell is the paper's kind of subset,
users and items by activity. The top --items items by interaction count on the whole data
set are kept, then the top --users users by their number of interactions on those items,
among the users with at least 2 of them (a leave-one-out split needs a held-out item and a
training item) and at least 99 never-interacted items among them (the sampled evaluation's
negatives; this drops the heaviest users from small item sets); a cell has fewer users where
fewer qualify, and the JSON records the real size. Both selections use
dprec.selection.top_k: larger count first, then the smaller index.
Writes results/fmf_ldp_grid/fmf_ldp_grid.{json,png} (the JSON after every cell). Usage:
  .venv/bin/python experiments/fmf_ldp_grid.py [--users 1000 10000 50000]
      [--items 1000 5000 10000] [--k 100] [--epsilon 2.5] [--seeds 1] [--lr 1e-3] [--with-fcf]
      [--data ml-100k --users 100 300 943 --items 300 800 1682]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np
import scipy.sparse as sp

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.dataset import Dataset  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import LeaveOneOutSplit  # noqa: E402
from dprec.selection import top_k  # noqa: E402
from dprec.systems.fmf.system import FederatedMF, FMFConfig  # noqa: E402

# FMF-LDP paper, HR@10 on ML-20M subsets, k = 100, eps = 2.5 (the paper's table;
# docs/architecture.md §2).
PAPER_GRID: dict[int, dict[int, float]] = {
    1000: {1000: 0.1160, 5000: 0.1010, 10000: 0.1090},
    10000: {1000: 0.6325, 5000: 0.1988, 10000: 0.1216},
    50000: {1000: 0.6972, 5000: 0.6801, 10000: 0.5654},
}


NEGATIVES = 99
"""The sampled evaluation's never-interacted items per held-out item."""


def interactions(users: int, items: int, density: float, min_per_user: int) -> int:
    """density x U x I, at least 2 x min_per_user x U (so the registry's minimum is met)."""
    return max(round(density * users * items), 2 * min_per_user * users)


def activity_subset(ds: Dataset, users: int, items: int, min_per_user: int = 2,
                    min_unseen: int = 0) -> Dataset:
    """The top ``items`` items by interaction count, then the top ``users`` users by their
    interactions on those items among those with at least ``min_per_user`` of them and at
    least ``min_unseen`` of them never interacted with (ties: :func:`dprec.selection.top_k`,
    the smaller index). Rows and columns keep their order;
    timestamps, ids and side features follow; the history records the step."""
    m = ds.matrix
    entry_user = np.repeat(np.arange(ds.n_users, dtype=np.int64), np.diff(m.indptr))
    keep_item = np.zeros(ds.n_items, bool)
    keep_item[top_k(np.bincount(m.indices, minlength=ds.n_items)[None, :], items)[0]] = True
    on_items = keep_item[m.indices]
    count = np.bincount(entry_user[on_items], minlength=ds.n_users)
    eligible = (count >= min_per_user) & (int(keep_item.sum()) - count >= min_unseen)
    keep_user = np.zeros(ds.n_users, bool)
    ranked = np.where(eligible, count, -1)[None, :]
    keep_user[top_k(ranked, min(users, int(eligible.sum())))[0]] = True
    keep = on_items & keep_user[entry_user]
    new_user, new_item = np.cumsum(keep_user) - 1, np.cumsum(keep_item) - 1
    n_users, n_items = int(keep_user.sum()), int(keep_item.sum())
    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(np.bincount(new_user[entry_user[keep]], minlength=n_users), out=indptr[1:])
    matrix = sp.csr_matrix((m.data[keep], new_item[m.indices[keep]].astype(np.int32), indptr),
                           shape=(n_users, n_items))
    ui, ii = np.flatnonzero(keep_user), np.flatnonzero(keep_item)
    return ds.with_history(
        f"activity_subset(users={users},items={items},min_per_user={min_per_user},"
        f"min_unseen={min_unseen})",
        matrix=matrix,
        timestamps=None if ds.timestamps is None else ds.timestamps[keep],
        user_ids=None if ds.user_ids is None else ds.user_ids[ui],
        item_ids=None if ds.item_ids is None else ds.item_ids[ii],
        user_features=None if ds.user_features is None else ds.user_features.iloc[ui],
        item_features=None if ds.item_features is None else ds.item_features.iloc[ii],
    )


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
    ap.add_argument("--data", default=None, metavar="NAME",
                    help="real data set (registry name, e.g. ml-100k): cells are its top "
                         "users x top items by activity; default: synthetic cells")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", type=Path, default=Path("results/fmf_ldp_grid"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    full = None if args.data is None else load_dataset(args.data, data_dir=args.data_dir)
    label = "synthetic" if full is None else args.data

    doc: dict[str, object] = {
        "experiment": "fmf_ldp_grid (paper Figure 4 analogue), "
                      + ("SYNTHETIC data" if full is None else f"{args.data} subsets"),
        "data": "dprec synthetic MovieLens-like generator via the registry, seed 0"
                if full is None else f"{args.data} ({full.n_users} users x {full.n_items} "
                f"items, {full.n_interactions} interactions): top --items items by count, "
                "then top --users users by their count on those items (>= 2, and >= 99 of "
                "them unseen), ties by "
                "dprec.selection.top_k (smaller index)",
        "density_target": args.density if full is None else None,
        "min_per_user": args.min_per_user if full is None else 2,
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
            if full is None:
                n = interactions(u, i, args.density, args.min_per_user)
            else:
                ds = activity_subset(full, u, i, min_unseen=NEGATIVES)
                n = ds.n_interactions
            if args.max_interactions is not None and n > args.max_interactions:
                doc["not_run"].append({"users": u, "items": i, "interactions": n})
                print(f"{label} {u:>6d} users x {i:>6d} items: {n} interactions, NOT RUN "
                      f"(> --max-interactions)", flush=True)
                continue
            if full is None:
                ds = load_dataset(f"synthetic-{u}x{i}-{n}")
            exp = Experiment(ds, range(args.seeds), LeaveOneOutSplit(args.split))
            r = exp.run(lambda: FederatedMF(f"FMF-LDP-{args.k}", FMFConfig(
                k=args.k, epsilon=args.epsilon, epochs=args.epochs, lr=args.lr)))
            m = r.metrics["sampled"]["HR@10"]
            ours[a, b] = m["mean"]
            cell: dict[str, object] = {
                "users": u, "items": i, "interactions": n,
                "density": n / (ds.n_users * ds.n_items),
                "real_users": ds.n_users, "real_items": ds.n_items,
                "min_user_interactions": int(np.diff(ds.matrix.indptr).min()),
                "HR@10": m, "full_HR@10": r.metrics["full"]["HR@10"],
                "paper_HR@10": PAPER_GRID.get(u, {}).get(i), "wall_time_s": r.wall_time_s,
                "privacy": r.privacy,
            }
            spread = f" ± {m['std']:.4f}" if args.seeds > 1 else ""
            paper = cell["paper_HR@10"]
            line = (f"{label} {ds.n_users:>6d} users x {ds.n_items:>6d} items "
                    f"({cell['density']:.2%}): FMF-LDP "
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

    print(f"\nHR@10 (sampled), {label} data [paper, ML-20M subsets], k={args.k}, "
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
    plot(ours, args, args.out / "fmf_ldp_grid.png", label)
    print(f"saved {args.out}")


def plot(ours: np.ndarray, args: argparse.Namespace, path: Path, label: str) -> None:
    if label == "synthetic":  # the same cells as ours
        p_users, p_items = list(args.users), list(args.items)
    else:  # real subsets are smaller than the paper's: show the paper's own grid
        p_users = sorted(PAPER_GRID)
        p_items = sorted({i for row in PAPER_GRID.values() for i in row})
    paper = np.array([[PAPER_GRID.get(u, {}).get(i, np.nan) for i in p_items]
                      for u in p_users], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    ours_title = ("ours: synthetic MovieLens-like data" if label == "synthetic"
                  else f"ours: {label}, top users x top items by activity")
    panels = ((axes[0], ours, ours_title, args.users, args.items),
              (axes[1], paper, "paper: ML-20M subsets", p_users, p_items))
    for ax, grid, title, users, items in panels:
        im = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0.0, vmax=1.0,
                       origin="lower")
        for a in range(grid.shape[0]):
            for b in range(grid.shape[1]):
                v = grid[a, b]
                ax.text(b, a, "not run" if np.isnan(v) else f"{v:.3f}", ha="center",
                        va="center", fontsize=9, color="white" if np.isnan(v) or v < 0.6
                        else "black")
        ax.set_xticks(range(len(items)), [str(i) for i in items])
        ax.set_yticks(range(len(users)), [str(u) for u in users])
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
