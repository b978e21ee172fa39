"""Rating prediction on the same 5 folds: dprec's nondp-svd / pcc-knn / cos-knn against Surprise.

Data: ML-100K (``dprec.data.registry.load_dataset``), split by
``KFoldSplit(5).folds(ds, np.random.default_rng(--seed))``; every side trains on each fold's
``train`` and predicts its test pairs. Pairs compared (same hyper-parameters):

  nondp-svd : dprec FunkSVD (registered system ``nondp-svd``) vs surprise.SVD, both with
              factors 100, lr 0.005, reg 0.02, 20 epochs, biases on, N(0, 0.1^2) init;
  pcc-knn   : dprec ItemKNN (``pcc-knn``) vs surprise.KNNWithMeans(k=40,
              sim_options={"name": "pearson", "user_based": False});
  cos-knn   : the same with cosine.

Surprise gets each fold's training ratings in CSR order (user, then item), so its neighbour
ties are broken like ours (by item index). Metrics: dprec's RatingEvaluator on our systems
(predictions clipped to the observed 1..5); Surprise's raw estimates clipped to the same
range, scored by the same dprec.evaluation.rating.rmse / mae.

Timing: each (side, model) runs in its own spawned process (benchmarks/harness.py); numba
kernels are compiled (or loaded from cache) before the timed fits. fit s = wall time of
``fit`` per fold (Surprise: ``algo.fit(trainset)``, excluding building the trainset, which is
reported as ``data_s``); SVD's s/epoch = fit s / epochs. Ratios are ours / Surprise's, from the
mean over folds, in the same run. Threads: numba on --threads (default 1, like Surprise).
Writes benchmarks/results/bench_rating-<dataset>.json. Usage:
  .venv/bin/python benchmarks/bench_rating.py [--dataset ml-100k] [--seed 0] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from multiprocessing import Queue
from pathlib import Path

import numpy as np
from harness import in_child, peak_gib

MODELS = ("nondp-svd", "pcc-knn", "cos-knn")
SVD = {"factors": 100, "lr": 0.005, "reg": 0.02, "epochs": 20, "biases": True,
       "init_mean": 0.0, "init_std": 0.1}
KNN_K = 40


def _folds(args: argparse.Namespace):
    from dprec.data.registry import load_dataset
    from dprec.evaluation.rating import RatingEvaluator
    from dprec.evaluation.split import KFoldSplit

    ds = load_dataset(args.dataset)
    folds = KFoldSplit(args.k).folds(ds, np.random.default_rng(args.seed))
    ev = RatingEvaluator()
    return ds, folds, ev, ev.prepare(ds, folds[0], args.seed, "k-fold")


def _ours(args: argparse.Namespace, q: Queue) -> None:
    import numba

    from dprec.systems.registry import make_system

    numba.set_num_threads(args.threads)
    ds, folds, ev, clip = _folds(args)
    params = dict(SVD) if args.model == "nondp-svd" else {"k": KNN_K}
    warm = folds[0].train[:50]  # compile / load the numba kernels outside the timed fits
    make_system(args.model, {**params, "epochs": 1} if args.model == "nondp-svd"
                else params).fit(warm, np.random.default_rng(0)).predict(
        np.arange(3), np.arange(3))
    rows = []
    for f in folds:
        model = make_system(args.model, params)
        t = time.perf_counter()
        model.fit(f.train, np.random.default_rng([args.seed, f.index]))
        fit_s = time.perf_counter() - t
        t = time.perf_counter()
        model.predict(f.test_users, f.test_items)
        predict_s = time.perf_counter() - t
        m = ev.evaluate(model, f, clip, np.random.default_rng(0))["rating"]
        rows.append({"fold": f.index, "RMSE": m["RMSE"], "MAE": m["MAE"], "fit_s": fit_s,
                     "predict_s": predict_s})
    q.put({"folds": rows, "peak_gib": peak_gib(), "config": model.parameters(),
           "dataset": ds.summary()})


def _surprise(args: argparse.Namespace, q: Queue) -> None:
    import pandas as pd
    import surprise

    from dprec.evaluation.rating import mae, rmse

    _, folds, _, (lo, hi) = _folds(args)
    rows = []
    for f in folds:
        t = time.perf_counter()
        coo = f.train.tocoo()  # CSR order: by user, then item
        df = pd.DataFrame({"u": coo.row.tolist(), "i": coo.col.tolist(),
                           "r": coo.data.astype(np.float64)})
        trainset = surprise.Dataset.load_from_df(
            df, surprise.Reader(rating_scale=(lo, hi))).build_full_trainset()
        data_s = time.perf_counter() - t
        if args.model == "nondp-svd":
            algo = surprise.SVD(n_factors=SVD["factors"], n_epochs=SVD["epochs"],
                                biased=SVD["biases"], init_mean=SVD["init_mean"],
                                init_std_dev=SVD["init_std"], lr_all=SVD["lr"],
                                reg_all=SVD["reg"], random_state=args.seed * 100 + f.index)
        else:
            name = "pearson" if args.model == "pcc-knn" else "cosine"
            algo = surprise.KNNWithMeans(k=KNN_K, sim_options={"name": name,
                                                                "user_based": False},
                                         verbose=False)
        t = time.perf_counter()
        algo.fit(trainset)
        fit_s = time.perf_counter() - t
        t = time.perf_counter()
        est = np.array([algo.predict(u, i, clip=False).est for u, i in
                        zip(f.test_users.tolist(), f.test_items.tolist(), strict=True)])
        predict_s = time.perf_counter() - t
        est = np.clip(est, lo, hi)
        rows.append({"fold": f.index, "RMSE": rmse(est, f.test_ratings),
                     "MAE": mae(est, f.test_ratings), "fit_s": fit_s, "predict_s": predict_s,
                     "data_s": data_s})
    q.put({"folds": rows, "peak_gib": peak_gib()})


def _summary(side: dict) -> dict[str, float]:
    folds = side["folds"]
    return {k: float(np.mean([r[k] for r in folds])) for k in ("RMSE", "MAE", "fit_s",
                                                                "predict_s")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--k", type=int, default=5, help="folds")
    ap.add_argument("--seed", type=int, default=0, help="fold seed (and model seeds)")
    ap.add_argument("--threads", type=int, default=1, help="numba threads for dprec")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()

    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read by the spawned children at import
    results: dict[str, dict] = {}
    for model in args.models:
        sub = argparse.Namespace(**{**vars(args), "model": model})
        theirs = in_child(_surprise, sub)
        ours = in_child(_ours, sub)
        a, b = _summary(ours), _summary(theirs)
        row = {"ours": ours, "surprise": theirs, "ours_mean": a, "surprise_mean": b,
               "delta_RMSE": a["RMSE"] - b["RMSE"], "delta_MAE": a["MAE"] - b["MAE"],
               "fit_ratio": a["fit_s"] / b["fit_s"],
               "predict_ratio": a["predict_s"] / b["predict_s"]}
        if model == "nondp-svd":
            row["ours_s_per_epoch"] = a["fit_s"] / SVD["epochs"]
            row["surprise_s_per_epoch"] = b["fit_s"] / SVD["epochs"]
            row["target_met"] = bool(abs(row["delta_RMSE"]) <= 0.01 and row["fit_ratio"] <= 1.0)
        results[model] = row

    import numba
    import surprise

    record = {
        "benchmark": "bench_rating", "dataset": args.dataset,
        "split": f"KFoldSplit({args.k}).folds(ds, np.random.default_rng({args.seed}))",
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "svd": SVD, "knn_k": KNN_K,
        "versions": {"numpy": np.__version__, "numba": numba.__version__,
                     "surprise": surprise.__version__, "python": platform.python_version()},
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor()},
        "threads": f"dprec numba on {args.threads} thread(s); Surprise single-threaded; "
                   "BLAS 1 thread",
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench_rating-{args.dataset.replace(':', '_').replace('/', '_')}.json"
    path.write_text(json.dumps(record, indent=2))

    print(f"{args.dataset}, {args.k} folds (seed {args.seed}); numba threads {args.threads}")
    head = (f"{'model':10s} {'side':9s} {'RMSE':>7s} {'MAE':>7s} {'fit s':>8s} "
            f"{'s/epoch':>8s} {'pred s':>8s}")
    print(head)
    for model, row in results.items():
        for side in ("ours", "surprise"):
            m = row[f"{side}_mean"]
            per_epoch = f"{row[f'{side}_s_per_epoch']:8.4f}" if model == "nondp-svd" \
                else f"{'':>8s}"
            print(f"{model:10s} {side:9s} {m['RMSE']:7.4f} {m['MAE']:7.4f} {m['fit_s']:8.3f} "
                  f"{per_epoch} {m['predict_s']:8.3f}")
        print(f"{'':10s} {'ours-them':9s} {row['delta_RMSE']:+7.4f} {row['delta_MAE']:+7.4f} "
              f"fit ratio {row['fit_ratio']:.3f}, predict ratio {row['predict_ratio']:.3f}")
    if "nondp-svd" in results:
        r = results["nondp-svd"]
        print(f"nondp-svd target (|dRMSE| <= 0.01, s/epoch ratio <= 1): "
              f"{'met' if r['target_met'] else 'MISSED'}")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
