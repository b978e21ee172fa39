"""PNBM / DPSGD-PNBM time per SGD epoch against one Funk SVD epoch over the same ratings.

Data: ML-100K (``load_dataset``) and a synthetic rating set with 10x its ratings
(``dprec.data.synthetic.synthetic``: 10x the users, 2x the items, 1,000,000 ratings).
Epoch = one pass over the training ratings. PNBM and DPSGD-PNBM run full batches
(batch_fraction = 1: one iteration is one epoch) for --epochs iterations; the time per
epoch is the median gap between consecutive ``on_iteration`` calls (setup excluded: the
co-rating neighbour lists and the initial S are timed apart as ``setup_s``). DPSGD-PNBM adds
the clamps and one Laplace draw per entry of S per iteration. The floor is Funk SVD
(``dprec.models.funk_svd.FunkSVD``, epochs = 1, F = 10 and 100) on the same matrix in the
same run. Cost growth: Nk is swept on ML-100K (PNBM), ratings by the two data sets.

All numba kernels are compiled (or loaded from cache) before timing, by a fit on a tiny set.
Threads: numba's default (the machine's cores; 2 here, shared). Writes
benchmarks/results/bench_pnbm.json. Usage:
  .venv/bin/python benchmarks/bench_pnbm.py [--epochs 3] [--nk 50 100 200 500 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numba
import numpy as np
import scipy.sparse as sp

from dprec.data.registry import load_dataset
from dprec.data.synthetic import synthetic
from dprec.models.funk_svd import FunkSVD, FunkSVDConfig
from dprec.models.pnbm import DPSGDPNBM, PNBM
from dprec.models.pnbm_config import DPSGDPNBMConfig, PNBMConfig


def epoch_times(model: PNBM | DPSGDPNBM, R: sp.csr_matrix) -> dict[str, float]:
    """Setup time and the median time per full-batch iteration (= epoch) of one fit."""
    stamps: list[float] = []
    start = time.perf_counter()
    model.fit(R, np.random.default_rng(0), on_iteration=lambda t, _: stamps.append(
        time.perf_counter()))
    gaps = np.diff([start, *stamps])
    # the first gap holds the setup (neighbour lists, S(1)) plus the first epoch
    per_epoch = float(np.median(gaps[1:])) if len(gaps) > 1 else float(gaps[0])
    return {"setup_s": float(gaps[0] - per_epoch), "epoch_s": per_epoch,
            "epochs": len(stamps)}


def funk_epoch(R: sp.csr_matrix, factors: int) -> float:
    model = FunkSVD(FunkSVDConfig(factors=factors, epochs=1))
    start = time.perf_counter()
    model.fit(R, np.random.default_rng(0))
    return time.perf_counter() - start


def warm_up() -> None:
    R = sp.random(60, 30, density=0.5, random_state=0, format="csr")
    R.data = np.ceil(R.data * 5)
    PNBM(PNBMConfig(iterations=1, batch_fraction=1.0)).fit(R, np.random.default_rng(0))
    PNBM(PNBMConfig(iterations=1, init="random")).fit(R, np.random.default_rng(0))
    DPSGDPNBM(DPSGDPNBMConfig(iterations=1, min_ratings=1)).fit(R, np.random.default_rng(0))
    FunkSVD(FunkSVDConfig(factors=4, epochs=1)).fit(R, np.random.default_rng(0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--nk", type=int, nargs="+", default=[50, 100, 200, 500, 1000])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/bench_pnbm.json"))
    args = ap.parse_args()
    warm_up()
    ml = load_dataset("ml-100k")
    big = synthetic(ml.n_users * 10, ml.n_items * 2, 1_000_000, rng=0)
    rows = []
    for ds in (ml, big):
        R = ds.matrix.tocsr()
        floor = {f"funk_svd_F{f}_epoch_s": funk_epoch(R, f) for f in (10, 100)}
        for name, model in (
                ("pnbm", PNBM(PNBMConfig(iterations=args.epochs, batch_fraction=1.0))),
                ("dpsgd-pnbm", DPSGDPNBM(DPSGDPNBMConfig(iterations=args.epochs)))):
            t = epoch_times(model, R)
            row = {"dataset": ds.name, "users": ds.n_users, "items": ds.n_items,
                   "ratings": int(R.nnz), "system": name, "neighbours": 500, **t, **floor,
                   "x_funk_F10": t["epoch_s"] / floor["funk_svd_F10_epoch_s"],
                   "x_funk_F100": t["epoch_s"] / floor["funk_svd_F100_epoch_s"]}
            rows.append(row)
            print(f"{ds.name:>24} {name:>11} Nk=500: {t['epoch_s']:.3f} s/epoch "
                  f"(setup {t['setup_s']:.2f} s); Funk SVD F=10 "
                  f"{floor['funk_svd_F10_epoch_s']:.3f} s, F=100 "
                  f"{floor['funk_svd_F100_epoch_s']:.3f} s -> x{row['x_funk_F10']:.1f}, "
                  f"x{row['x_funk_F100']:.1f}", flush=True)
    R = ml.matrix.tocsr()
    nk_rows = []
    for nk in args.nk:
        t = epoch_times(PNBM(PNBMConfig(neighbours=nk, iterations=args.epochs,
                                        batch_fraction=1.0)), R)
        nk_rows.append({"neighbours": min(nk, ml.n_items - 1), **t})
        print(f"ml-100k pnbm Nk={nk:5d}: {t['epoch_s']:.3f} s/epoch", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "bench_pnbm", "rows": rows, "nk_sweep_ml100k": nk_rows,
        "machine": {"cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(),
                    "python": platform.python_version(), "numba": numba.__version__},
    }, indent=2))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
