"""MF-NP (implicit ALS) speed and quality: dprec's ImplicitALS against the `implicit` library.

Same data, factors, regularization, alpha and iterations, in the same run:
  dprec-cg        : dprec.models.ImplicitALS(solver="cg", cg_steps=3) (float64, numba);
  dprec-cholesky  : dprec.models.ImplicitALS(solver="cholesky"), exact per-user solves;
  implicit-exact  : implicit.cpu.als.AlternatingLeastSquares(use_cg=False, dtype=float64),
                    the same exact per-user solves, started from dprec's initial item factors
                    (V0 = init_scale * N(0, 1) from the same seed), so its factors must agree
                    with dprec-cholesky's to rounding: reported as max_abs_diff_item_factors;
  implicit-cg     : the library's default (conjugate gradient, 3 steps, float32).
Confidence: dprec uses c_ui = 1 + alpha r_ui; `implicit` 0.7.x uses c_ui = alpha * data with
the "-1" folded into its solver, so it is fed data = r_ui + 1/alpha to optimise the same
objective (checked below: both final losses are computed by dprec.models.implicit_mf_loss).

Threads: both libraries run their solvers on --threads threads (numba.set_num_threads and
implicit's num_threads); BLAS is limited to 1 thread during the fits (threadpoolctl), as
`implicit` recommends.

Quality: a MINIMAL held-out check written inline for this benchmark only (the package's
evaluation lives in dprec.evaluation): leave-one-out by latest interaction (largest
(timestamp, item id)), the test item ranked against 99 uniformly drawn never-interacted
items, ties broken at random; HR@10 and NDCG@10.

Timing: --repeats rounds, each fitting every model once in turn (paired runs: a round's
ratios compare fits made seconds apart, so load on a shared machine hits both sides); the
table shows the median wall time per iteration (fit time / iterations), the process CPU
time per iteration (all threads, including OpenMP spin-waiting), and the median over rounds
of each model's time ratio to implicit-cg. Peak memory: the largest resident-set growth over
the pre-fit RSS, sampled every 5 ms.
Writes benchmarks/results/bench_mf_np-<dataset>-F<factors>.json. Usage:
  .venv/bin/python benchmarks/bench_mf_np.py [--dataset ml-100k] [--factors 32] [--threads 2]
  .venv/bin/python benchmarks/bench_mf_np.py --dataset synthetic-75000x10000-17000000 \
      --factors 5 --iterations 3 --no-eval
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp


class PeakRSS:
    """Context manager: peak resident-set growth (MiB) above the RSS at entry."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.peak_mib = 0.0

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def __enter__(self) -> PeakRSS:
        self._base = self._rss()
        self._max = self._base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._max = max(self._max, self._rss())
            time.sleep(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._max = max(self._max, self._rss())
        self.peak_mib = (self._max - self._base) / 2**20


# ---------------------------------------------------------------- minimal inline evaluation


def leave_latest_out(m: sp.csr_matrix, timestamps: np.ndarray | None):
    """Train matrix and the held-out latest item per user (users with >= 2 interactions)."""
    m = m.tocsr()
    counts = np.diff(m.indptr)
    users = np.repeat(np.arange(m.shape[0]), counts)
    ts = np.zeros(m.nnz, np.int64) if timestamps is None else np.asarray(timestamps)
    order = np.lexsort((m.indices, ts, users))  # by user, then timestamp, then item id
    last = np.zeros(m.nnz, bool)
    ends = np.cumsum(counts)[counts >= 2] - 1
    last[order[ends]] = True
    test_users = users[last]
    test_items = m.indices[last]
    keep = ~last
    train = sp.csr_matrix((m.data[keep], (users[keep], m.indices[keep])), shape=m.shape)
    return train, test_users, test_items


def draw_negatives(train, test_users, test_items, n_neg, rng, batch=2048):
    """n_neg distinct never-interacted items per test user (smallest random keys)."""
    n_items = train.shape[1]
    out = np.empty((len(test_users), n_neg), np.int64)
    for s in range(0, len(test_users), batch):
        u = test_users[s:s + batch]
        keys = rng.random((len(u), n_items))
        rows = train[u]
        keys[np.repeat(np.arange(len(u)), np.diff(rows.indptr)), rows.indices] = np.inf
        keys[np.arange(len(u)), test_items[s:s + batch]] = np.inf
        out[s:s + len(u)] = np.argpartition(keys, n_neg - 1, axis=1)[:, :n_neg]
    return out


def hr_ndcg_at_10(U, V, test_users, test_items, negatives, rng):
    """HR@10 and NDCG@10 of the test item among itself and its negatives."""
    Uu = U[test_users]
    target = np.einsum("uf,uf->u", Uu, V[test_items])
    cand = np.einsum("uf,ucf->uc", Uu, V[negatives])
    greater = np.sum(cand > target[:, None], axis=1)
    ties = np.sum(cand == target[:, None], axis=1)
    rank = greater + np.floor(rng.random(len(target)) * (ties + 1)).astype(np.int64)
    hit = rank < 10
    return float(hit.mean()), float(np.mean(np.where(hit, 1.0 / np.log2(rank + 2.0), 0.0)))


# ---------------------------------------------------------------- data


def load(name: str, seed: int):
    """(matrix, timestamps, note) for ``name``; falls back to synthetic data of ML-100K's shape."""
    try:
        from dprec.data.registry import load_dataset

        d = load_dataset(name, seed=seed)
        return d.matrix, d.timestamps, f"{name} via dprec.data.registry"
    except Exception as e:  # the benchmark must still run offline without the data module
        if name != "ml-100k":
            raise
        rng = np.random.default_rng(seed)
        m = sp.random(943, 1682, density=100_000 / (943 * 1682), format="csr", random_state=rng)
        m.data[:] = 1.0
        return m, None, f"SYNTHETIC 943x1682 uniform matrix (ml-100k unavailable: {e})"


# ---------------------------------------------------------------- runs


def timed(fit):
    """Run ``fit()`` under the RSS sampler; (result, wall s, process CPU s, peak MiB)."""
    with PeakRSS() as mem:
        t, c = time.perf_counter(), time.process_time()
        out = fit()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    return out, wall, cpu, mem.peak_mib


def run_dprec(train, args, seed, solver):
    from dprec.models import ALSConfig, ImplicitALS

    cfg = ALSConfig(factors=args.factors, regularization=args.regularization, alpha=args.alpha,
                    iterations=args.iterations, solver=solver, cg_steps=args.cg_steps)
    # warm-up: numba compiles (or loads its cache) outside the timed fit
    ImplicitALS(ALSConfig(factors=args.factors, iterations=1, solver=solver)).fit(
        train[: min(50, train.shape[0])], np.random.default_rng(0))
    model, wall, cpu, peak = timed(lambda: ImplicitALS(cfg).fit(train, np.random.default_rng(seed)))
    return model.user_factors, model.item_factors, wall, cpu, peak


def dprec_initial_items(n_items, args, seed):
    """ImplicitALS's initial V: its first draw from the fit's rng, times init_scale."""
    from dprec.models import ALSConfig

    return ALSConfig().init_scale * np.random.default_rng(seed).standard_normal(
        (n_items, args.factors))


def run_implicit(train, args, seed, use_cg):
    from implicit.cpu.als import AlternatingLeastSquares

    dtype = np.float32 if use_cg else np.float64
    # implicit: c_ui = alpha * data; data = r + 1/alpha gives c_ui = 1 + alpha r
    data = train.copy().astype(dtype)
    data.data += 1.0 / args.alpha

    def fit():
        model = AlternatingLeastSquares(
            factors=args.factors, regularization=args.regularization, alpha=args.alpha,
            iterations=args.iterations, use_cg=use_cg, dtype=dtype, num_threads=args.threads,
            random_state=seed)
        if not use_cg:  # same start as dprec (users are solved first, so only V0 matters)
            model.item_factors = dprec_initial_items(train.shape[1], args, seed)
            model.user_factors = np.zeros((train.shape[0], args.factors))
        model.fit(data, show_progress=False)
        return model

    model, wall, cpu, peak = timed(fit)
    return (np.asarray(model.user_factors, np.float64), np.asarray(model.item_factors, np.float64),
            wall, cpu, peak)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="ml-100k")
    p.add_argument("--factors", type=int, default=32)
    p.add_argument("--regularization", type=float, default=0.01)
    p.add_argument("--alpha", type=float, default=40.0)
    p.add_argument("--iterations", type=int, default=15)
    p.add_argument("--cg-steps", type=int, default=3, help="CG steps of dprec-cg")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3, help="fits per library (median reported)")
    p.add_argument("--ratings", action="store_true",
                   help="use the raw ratings as r_ui (default: binary r_ui = 1)")
    p.add_argument("--no-eval", action="store_true", help="skip the held-out HR@10 check")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = p.parse_args()

    import numba
    from threadpoolctl import threadpool_limits

    from dprec.models import implicit_mf_loss

    numba.set_num_threads(args.threads)
    t = time.perf_counter()
    matrix, timestamps, note = load(args.dataset, args.seed)
    load_s = time.perf_counter() - t
    matrix = matrix.tocsr().astype(np.float64)
    if not args.ratings:
        matrix.data[:] = 1.0
    if args.no_eval:
        train, test_users = matrix, np.empty(0, np.int64)
    else:
        train, test_users, test_items = leave_latest_out(matrix, timestamps)
        negatives = draw_negatives(train, test_users, test_items, 99,
                                   np.random.default_rng([args.seed, 1]))
    print(f"data: {note}; {matrix.shape[0]} x {matrix.shape[1]}, nnz {matrix.nnz} "
          f"(train nnz {train.nnz}), loaded in {load_s:.1f}s; threads={args.threads}")

    runs = {
        "dprec-cg": lambda: run_dprec(train, args, args.seed, "cg"),
        "dprec-cholesky": lambda: run_dprec(train, args, args.seed, "cholesky"),
        "implicit-exact": lambda: run_implicit(train, args, args.seed, use_cg=False),
        "implicit-cg": lambda: run_implicit(train, args, args.seed, use_cg=True),
    }
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    peaks: dict[str, list[float]] = {name: [] for name in runs}
    last = {}
    for _ in range(args.repeats):  # paired rounds: every model once per round
        for name, fn in runs.items():
            with threadpool_limits(limits=1, user_api="blas"):
                U, V, wall, cpu, peak = fn()
            walls[name].append(wall)
            cpus[name].append(cpu)
            peaks[name].append(peak)
            last[name] = (U, V)
    results = {}
    for name in runs:
        U, V = last[name]
        row = {"fit_s_all": walls[name],
               "s_per_iteration": float(np.median(walls[name])) / args.iterations,
               "cpu_s_per_iteration": float(np.median(cpus[name])) / args.iterations,
               "peak_rss_mib": max(peaks[name]),
               "final_loss": implicit_mf_loss(U, V, train, args.alpha, args.regularization),
               "time_ratios_vs_implicit_cg": [a / b for a, b in zip(
                   walls[name], walls["implicit-cg"], strict=True)]}
        row["time_ratio_vs_implicit_cg"] = float(np.median(row["time_ratios_vs_implicit_cg"]))
        if not args.no_eval:
            hr, nd = hr_ndcg_at_10(U, V, test_users, test_items, negatives,
                                   np.random.default_rng([args.seed, 2]))
            row.update({"HR@10": hr, "NDCG@10": nd})
        results[name] = row
    agreement = float(np.max(np.abs(last["dprec-cholesky"][1] - last["implicit-exact"][1])))
    results["implicit-exact"]["max_abs_diff_item_factors"] = agreement

    cols = ["s_per_iteration", "cpu_s_per_iteration", "time_ratio_vs_implicit_cg",
            "peak_rss_mib", "final_loss"]
    if not args.no_eval:
        cols += ["HR@10", "NDCG@10"]
    print(f"{'model':<16}" + "".join(f"{c:>20}" for c in cols))
    for name, row in results.items():
        print(f"{name:<16}" + "".join(f"{row[c]:>20.4g}" for c in cols))
    print(f"dprec-cholesky vs implicit-exact from the same V0: max |V diff| = {agreement:.2e} "
          f"(max |V| = {np.max(np.abs(last['dprec-cholesky'][1])):.2e})")
    print(f"dprec-cg / implicit-cg per iteration, median of {args.repeats} paired rounds: "
          f"{results['dprec-cg']['time_ratio_vs_implicit_cg']:.3f}")
    if not args.no_eval:
        print(f"(HR@10/NDCG@10: minimal inline leave-latest-out check, {len(test_users)} users, "
              "99 sampled negatives; not the package's evaluation)")

    import implicit

    record = {
        "benchmark": "bench_mf_np", "dataset": args.dataset, "data_note": note,
        "shape": list(matrix.shape), "nnz": int(matrix.nnz), "train_nnz": int(train.nnz),
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "versions": {"numpy": np.__version__, "numba": numba.__version__,
                     "implicit": implicit.__version__, "python": platform.python_version()},
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor()},
        "threads_note": f"numba and implicit solvers on {args.threads} threads; BLAS 1 thread",
        "results": results,
        "time_per_iteration_note": "fit wall time / iterations (includes transpose and init)",
        "ratio_note": ("time_ratio_vs_implicit_cg: median over the --repeats paired rounds of "
                       "(this model's fit time) / (implicit-cg's fit time in the same round)"),
        "mf_np_vs_implicit_cg": results["dprec-cg"]["time_ratio_vs_implicit_cg"],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.dataset.replace(":", "_").replace("/", "_")
    path = args.out / f"bench_mf_np-{stem}-F{args.factors}.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
