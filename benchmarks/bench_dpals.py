"""dpals round speed against one `implicit` ALS iteration at the same factors (issue 24).

Target: a dpals round at synthetic-75000x10000, in process, <= 2x one implicit ALS iteration
at the same factors, measured in the same run.

  dpals round      : the second ALS round of ``Dpals.fit(steps=2)`` in process (the time
                     between the two ``on_iteration`` calls): the clients' exact user
                     solves, clipping, quantised per-item statistics and Gramian terms, the
                     summed Skellam noise (secure: the clients' summed shares; trusted: the
                     curator's draw), the PSD projections and the item solve. The first
                     round also holds the one-off selection and plan (reported apart).
  implicit         : implicit.cpu.als.AlternatingLeastSquares, the library's default solver
                     (conjugate gradient, float32), on the same binary matrix; one iteration
                     is its user and item half-steps (the time its fit callback reports,
                     median over --implicit-iterations, setup excluded).
  implicit-exact   : the same with use_cg=False, float64 (exact solves, as dpals' user step).

Both on --threads threads (numba and implicit's num_threads), BLAS limited to 1 thread
(threadpoolctl). --repeats paired rounds (every side once per round, so load on a shared
machine hits both); the ratio is the median over rounds of dpals round / implicit iteration.
The phases of a round (each function of the round timed alone, in process) are recorded too.

Writes benchmarks/results/bench_dpals-<dataset>.json; with --summary PATH also a short
Markdown summary (command, date, machine, ratios). Usage:
  .venv/bin/python benchmarks/bench_dpals.py [--dataset synthetic-75000x10000] \
      [--factors 4 8 16] [--aggregation secure trusted] [--summary docs/results/dpals_speed.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def load(name: str, seed: int) -> sp.csr_matrix:
    """The data set's binary user x item matrix (float64, canonical CSR)."""
    from dprec.data.registry import load_dataset

    m = sp.csr_matrix(load_dataset(name, seed=seed).binary(), dtype=np.float64)
    m.sum_duplicates()
    m.sort_indices()
    m.data[:] = 1.0
    return m


def dpals_config(factors: int, aggregation: str, args: argparse.Namespace):
    from dprec.systems.dpals.system import DpalsConfig

    return DpalsConfig(epsilon=args.epsilon, delta=1e-6, k=args.k, steps=2, factors=factors,
                       aggregation=aggregation)


def dpals_round(train: sp.csr_matrix, factors: int, aggregation: str,
                args: argparse.Namespace) -> dict[str, float]:
    """Seconds of the fit, of its first round (with the selection) and of its second."""
    from dprec.systems.dpals.system import Dpals

    stamps: list[float] = []
    t = time.perf_counter()
    Dpals("dpals", dpals_config(factors, aggregation, args)).fit(
        train, np.random.default_rng(args.seed),
        on_iteration=lambda step, model: stamps.append(time.perf_counter()))
    end = time.perf_counter()
    return {"fit_s": end - t, "first_round_s": stamps[0] - t, "round_s": stamps[1] - stamps[0]}


def phases(train: sp.csr_matrix, factors: int, args: argparse.Namespace) -> dict[str, float]:
    """Each step of one round, timed alone (trusted noise and the secure summed shares)."""
    from dprec.protocol.secure_sum.curator import Curator
    from dprec.protocol.secure_sum.noise_shares import ShareNoise
    from dprec.systems.dpals import client
    from dprec.systems.dpals.server import solve_items
    from dprec.systems.dpals.statistics import stats_width

    out: dict[str, float] = {}

    def timed(name, fn):
        t = time.perf_counter()
        value = fn()
        out[name] = time.perf_counter() - t
        return value

    n, d = train.shape
    cfg = dpals_config(factors, "secure", args)
    gamma = 1000.0
    V = cfg.init_scale * np.random.default_rng(0).standard_normal((d, factors))
    w = timed("select_items (once per run)",
              lambda: client.select_items(train, "uniform", cfg.k, args.seed))
    U = timed("solve_users", lambda: client.solve_users(V, train, cfg.reg,
                                                        cfg.unobserved_weight))
    U = timed("clip_users", lambda: client.clip_users(U, cfg.clip))
    stats = timed("item_statistics", lambda: client.item_statistics(U, w, gamma, args.seed, 1))
    gram = timed("gram_statistics", lambda: client.gram_statistics(U, gamma, args.seed, 1))
    curator = Curator(1e6)
    curator.start(np.random.default_rng(args.seed))
    timed("noise trusted (curator draw)", lambda: curator.noisy(stats.ravel(), 1))
    timed("noise secure (summed shares)",
          lambda: ShareNoise(1e6 / n, d * stats_width(factors), n, args.seed, "s",
                             1).range_sum(0, n))
    timed("psd projection + item solve",
          lambda: solve_items(stats, gram, gamma, factors, cfg.reg, cfg.unobserved_weight,
                              cfg.clip))
    return out


def implicit_iteration(train: sp.csr_matrix, factors: int, use_cg: bool,
                       args: argparse.Namespace) -> float:
    """Median seconds of one implicit ALS iteration (its fit callback's timing)."""
    from implicit.cpu.als import AlternatingLeastSquares

    dtype = np.float32 if use_cg else np.float64
    times: list[float] = []
    model = AlternatingLeastSquares(factors=factors, regularization=0.01, alpha=1.0,
                                    iterations=args.implicit_iterations, use_cg=use_cg,
                                    dtype=dtype, num_threads=args.threads,
                                    random_state=args.seed)
    model.fit(train.astype(dtype), show_progress=False,
              callback=lambda it, elapsed, loss: times.append(elapsed))
    return float(np.median(times))


def summary(record: dict, command: str) -> str:
    lines = [
        "# dpals round speed against implicit ALS (issue 24)",
        "",
        f"Command: `{command}`",
        f"Date: {record['date']} (UTC). Machine: {record['machine']['cpu_count']} cores "
        f"({record['machine']['processor'] or platform.machine()}), load average at the "
        f"start {record['machine']['load_average_start']}, {record['threads']} threads, BLAS "
        "1 thread. Data: "
        f"{record['dataset']} ({record['shape'][0]:,} x {record['shape'][1]:,}, "
        f"{record['nnz']:,} interactions). implicit {record['versions']['implicit']}.",
        "",
        "Target: one dpals round, in process, <= 2x one implicit ALS iteration at the same "
        "factors (implicit's default: CG, float32). Seconds: medians over "
        f"{record['repeats']} paired round(s).",
        "",
        "| factors | aggregation | dpals round s | implicit iteration s | ratio | "
        "implicit-exact s | ratio to exact |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in record["rows"]:
        lines.append(
            f"| {row['factors']} | {row['aggregation']} | {row['round_s']:.2f} | "
            f"{row['implicit_s']:.2f} | **{row['ratio']:.2f}** | {row['implicit_exact_s']:.2f} | "
            f"{row['ratio_exact']:.2f} |")
    lines += ["", "Phases of one round (each timed alone, seconds):", "",
              "| factors | " + " | ".join(record["phase_names"]) + " |",
              "|---|" + "---|" * len(record["phase_names"])]
    for f, ph in record["phases"].items():
        lines.append(f"| {f} | " + " | ".join(f"{ph[k]:.2f}" for k in record["phase_names"])
                     + " |")
    lines += ["", "The first round of a fit also selects each user's items once "
              "(`select_items`, above) and plans the run; it is not part of a round.", ""]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="synthetic-75000x10000")
    p.add_argument("--factors", type=int, nargs="+", default=[4, 8, 16])
    p.add_argument("--aggregation", nargs="+", default=["secure", "trusted"],
                   choices=["secure", "trusted"])
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--implicit-iterations", type=int, default=3)
    p.add_argument("--repeats", type=int, default=1, help="paired rounds (median reported)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    p.add_argument("--summary", type=Path, default=None, help="also write a Markdown summary")
    args = p.parse_args()

    import implicit
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(args.threads)
    load_average = os.getloadavg()
    t = time.perf_counter()
    train = load(args.dataset, args.seed)
    print(f"data: {args.dataset} {train.shape[0]} x {train.shape[1]}, nnz {train.nnz}, "
          f"loaded in {time.perf_counter() - t:.1f}s; threads={args.threads}", flush=True)
    small = train[:300]
    for f in args.factors:  # warm-up: numba compiles (or loads its cache) outside the timing
        for agg in args.aggregation:
            dpals_round(small, f, agg, args)
        phases(small, f, args)
    rows, phase_rows = [], {}
    with threadpool_limits(limits=1, user_api="blas"):
        for f in args.factors:
            phase_rows[str(f)] = phases(train, f, args)
            print(f"F={f} phases: " + ", ".join(f"{k} {v:.2f}s"
                                                for k, v in phase_rows[str(f)].items()),
                  flush=True)
            for agg in args.aggregation:
                rounds, imp, exact, fits = [], [], [], []
                for _ in range(args.repeats):
                    r = dpals_round(train, f, agg, args)
                    rounds.append(r["round_s"])
                    fits.append(r)
                    imp.append(implicit_iteration(train, f, True, args))
                    exact.append(implicit_iteration(train, f, False, args))
                row = {"factors": f, "aggregation": agg, "round_s": float(np.median(rounds)),
                       "implicit_s": float(np.median(imp)),
                       "implicit_exact_s": float(np.median(exact)),
                       "ratio": float(np.median(np.divide(rounds, imp))),
                       "ratio_exact": float(np.median(np.divide(rounds, exact))),
                       "fits": fits, "implicit_all_s": imp, "implicit_exact_all_s": exact}
                rows.append(row)
                print(f"F={f} {agg}: dpals round {row['round_s']:.2f}s, implicit iteration "
                      f"{row['implicit_s']:.2f}s (exact {row['implicit_exact_s']:.2f}s), "
                      f"ratio {row['ratio']:.2f} (to exact {row['ratio_exact']:.2f})",
                      flush=True)
    from dprec.evaluation.provenance import git_commit, run_command, utc_date

    record = {
        "benchmark": "bench_dpals", "dataset": args.dataset, "shape": list(train.shape),
        "nnz": int(train.nnz), "date": utc_date(), "commit": git_commit(),
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "threads": args.threads, "repeats": args.repeats,
        "versions": {"numpy": np.__version__, "numba": numba.__version__,
                     "implicit": implicit.__version__, "python": platform.python_version()},
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor(),
                    "load_average_start": [round(x, 1) for x in load_average]},
        "rows": rows, "phases": phase_rows,
        "phase_names": list(next(iter(phase_rows.values()))),
        "target": "dpals round <= 2x one implicit ALS iteration (default CG) at the same factors",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.dataset.replace(":", "_").replace("/", "_")
    path = args.out / f"bench_dpals-{stem}.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")
    if args.summary is not None:
        command = run_command("benchmarks/bench_dpals.py")
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(summary(record, command))
        print(f"wrote {args.summary}")


if __name__ == "__main__":
    main()
