"""FMF-LDP training at the paper's MovieLens-20M size, against `implicit`'s ALS in the same run.

Data: synthetic MovieLens-like interactions (dprec.data.synthetic), by default 75,000 users x
10,000 items with 17,000,000 interactions (the size of the paper's filtered ML-20M), ratings
1..5 as r_ui. Each side runs in its own spawned subprocess, so its peak memory (ru_maxrss,
which includes generating the data) is its own:

  fmf      : FederatedMF("fmf-ldp", FMFConfig(k, epsilon, factors, epochs)).fit(R, rng), the
             whole simulated protocol (every client's solve, gradient entries and LDP reports,
             the shuffling proxy, the server's estimate and descent);
  implicit : implicit.cpu.als.AlternatingLeastSquares(factors, iterations=epochs,
             regularization, alpha=1.0).fit(C) with C = 1 + alpha r_ui on the observed
             entries (implicit 0.7 takes c_ui = data, so both minimise the same objective);
             the library's default conjugate-gradient solver, float32 (``--implicit-exact``
             adds a second run with exact Cholesky solves, float64);
  phases   : the same fit, with the round engine's time per role (each exclusive of the
             roles it pulls from): clients (user solve, slot sampling, gradient entries,
             mechanism), proxy (the shuffler) and server (estimate and descent); with BLAS on
             one thread, so its total is printed beside the timed fit's.

Threads: numba and implicit use all cores (2 here); BLAS is limited to 1 thread in both
children (OPENBLAS_NUM_THREADS=1 and threadpoolctl), as `implicit` recommends.
Writes benchmarks/results/bench_fmf_ldp.json. Usage:
  .venv/bin/python benchmarks/bench_fmf_ldp.py [--users 75000 --items 10000 --nnz 17000000]
  .venv/bin/python benchmarks/bench_fmf_ldp.py --users 5000 --items 2000 --nnz 300000  # quick
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from multiprocessing import Queue
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from harness import in_child, peak_gib

if TYPE_CHECKING:
    from dprec.systems.fmf.system import FMFConfig

TARGET_RATIO = 0.8
"""FMF-LDP's 20 epochs against implicit's CG ALS, same data, same run (issue 12, part 2)."""
TARGET_PEAK_GIB = 8.0


def _data(args: argparse.Namespace) -> sp.csr_matrix:
    from dprec.data.synthetic import synthetic
    return synthetic(args.users, args.items, args.nnz, rng=args.seed).matrix.tocsr()


def _config(args: argparse.Namespace) -> FMFConfig:
    from dprec.systems.fmf.system import FMFConfig
    return FMFConfig(factors=args.factors, epochs=args.epochs, k=args.k, epsilon=args.epsilon,
                     regularization=args.regularization, alpha=args.alpha)


def _fmf(args: argparse.Namespace, q: Queue) -> None:
    from threadpoolctl import threadpool_limits

    from dprec.systems.fmf.system import FederatedMF, FMFConfig

    R = _data(args)
    data_peak = peak_gib()
    model = FederatedMF("fmf-ldp", _config(args))
    warm = R[: min(R.shape[0], 2000)]  # compile the numba kernels outside the timed fit
    FederatedMF("warm", FMFConfig(epochs=1, k=2)).fit(warm, np.random.default_rng(0))
    with threadpool_limits(1, user_api="blas"):
        t = time.perf_counter()
        c = time.process_time()
        model.fit(R, np.random.default_rng(args.seed))
        wall = time.perf_counter() - t
        cpu = time.process_time() - c
    assert model.V is not None
    q.put({"fmf_fit_s": wall, "fmf_cpu_s": cpu, "fmf_peak_gib": peak_gib(),
           "fmf_data_peak_gib": data_peak, "fmf_V_finite": bool(np.isfinite(model.V).all()),
           "fmf_diagnostics": model.diagnostics()})


def _implicit(args: argparse.Namespace, q: Queue) -> None:
    from implicit.cpu.als import AlternatingLeastSquares
    from threadpoolctl import threadpool_limits

    R = _data(args)
    C = R.astype(np.float32)
    C.data = 1.0 + args.alpha * C.data
    data_peak = peak_gib()
    out: dict[str, object] = {}
    variants = [("implicit", {})]
    if args.implicit_exact:
        variants.append(("implicit_exact", {"use_cg": False, "dtype": np.float64}))
    for name, extra in variants:
        model = AlternatingLeastSquares(factors=args.factors, iterations=args.epochs,
                                        regularization=args.regularization, alpha=1.0,
                                        random_state=args.seed, **extra)
        with threadpool_limits(1, user_api="blas"):
            t = time.perf_counter()
            c = time.process_time()
            model.fit(C, show_progress=False)
            out[f"{name}_fit_s"] = time.perf_counter() - t
            out[f"{name}_cpu_s"] = time.process_time() - c
    out["implicit_peak_gib"] = peak_gib()
    out["implicit_data_peak_gib"] = data_peak
    q.put(out)


def _phases(args: argparse.Namespace, q: Queue) -> None:
    """FederatedMF.fit on the round engine, its time split by role (exclusive of each other):
    clients (user solve, slot sampling, gradient entries, mechanism), proxy (shuffler),
    server (estimate and descent)."""
    from threadpoolctl import threadpool_limits

    from dprec.systems.fmf.system import FederatedMF, FMFConfig

    R = _data(args)
    c = _config(args)
    FederatedMF("warm", FMFConfig(epochs=1, k=2)).fit(R[: min(R.shape[0], 2000)],
                                                       np.random.default_rng(0))
    with threadpool_limits(1, user_api="blas"):
        start = time.perf_counter()
        model = FederatedMF("fmf-ldp", c).fit(R, np.random.default_rng(args.seed))
        total = time.perf_counter() - start
    q.put({"phases_s": model.diagnostics()["seconds_by_role"], "phases_total_s": total})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--users", type=int, default=75_000)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--nnz", type=int, default=17_000_000)
    ap.add_argument("--factors", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=20, help="FMF epochs = implicit iterations")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=2.5)
    ap.add_argument("--regularization", type=float, default=1e-6)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--implicit-exact", action="store_true",
                    help="also time implicit with exact Cholesky solves (float64)")
    ap.add_argument("--no-phases", action="store_true", help="skip the per-phase breakdown")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()

    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read by the spawned children at import
    ref = in_child(_implicit, args)
    ours = in_child(_fmf, args)
    phases = {} if args.no_phases else in_child(_phases, args)
    import implicit
    import numba

    res: dict[str, object] = {
        "benchmark": "bench_fmf_ldp",
        "data": f"synthetic MovieLens-like (dprec.data.synthetic, seed {args.seed})",
        "shape": [args.users, args.items], "nnz": args.nnz,
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "versions": {"numpy": np.__version__, "numba": numba.__version__,
                     "implicit": implicit.__version__, "python": platform.python_version()},
        "threads": ("numba/implicit on all cores; BLAS 1 thread "
                    "(OPENBLAS_NUM_THREADS, threadpoolctl)"),
        **ref, **ours, **phases,
        "ratio_fmf_to_implicit": ours["fmf_fit_s"] / ref["implicit_fit_s"],
        # CPU seconds: less swayed than wall time when other jobs share the cores
        "ratio_fmf_to_implicit_cpu": ours["fmf_cpu_s"] / ref["implicit_cpu_s"],
    }
    if "implicit_exact_fit_s" in ref:
        res["ratio_fmf_to_implicit_exact"] = ours["fmf_fit_s"] / ref["implicit_exact_fit_s"]
    res["target"] = f"ratio <= {TARGET_RATIO} (issue 12) and peak < {TARGET_PEAK_GIB} GiB"
    res["target_met"] = bool(res["ratio_fmf_to_implicit"] <= TARGET_RATIO
                             and ours["fmf_peak_gib"] < TARGET_PEAK_GIB)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_fmf_ldp.json"
    path.write_text(json.dumps(res, indent=2))

    print(f"synthetic {args.users} x {args.items}, {args.nnz} interactions; F={args.factors}, "
          f"k={args.k}, eps={args.epsilon}, {args.epochs} epochs / iterations")
    print(f"{'side':28s} {'wall s':>9s} {'cpu s':>9s} {'peak GiB':>9s}")
    print(f"{'FMF-LDP (dprec)':28s} {ours['fmf_fit_s']:9.2f} {ours['fmf_cpu_s']:9.2f} "
          f"{ours['fmf_peak_gib']:9.2f}")
    print(f"{'implicit ALS (cg, f32)':28s} {ref['implicit_fit_s']:9.2f} "
          f"{ref['implicit_cpu_s']:9.2f} {ref['implicit_peak_gib']:9.2f}")
    if "implicit_exact_fit_s" in ref:
        print(f"{'implicit ALS (exact, f64)':28s} {ref['implicit_exact_fit_s']:9.2f} "
              f"{ref['implicit_exact_cpu_s']:9.2f} {'':>9s}")
    print(f"ratio FMF-LDP / implicit: {res['ratio_fmf_to_implicit']:.3f}  "
          f"(target {res['target']}: {'met' if res['target_met'] else 'MISSED'}); "
          f"CPU time ratio {res['ratio_fmf_to_implicit_cpu']:.3f}")
    if phases:
        total = phases["phases_total_s"]
        print(f"time by role (engine, BLAS on 1 thread, total {total:.2f} s; "
              f"fit {ours['fmf_fit_s']:.2f} s):")
        for name, s in phases["phases_s"].items():
            print(f"  {name:18s} {s:8.2f} s  {100 * s / total:5.1f}%")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
