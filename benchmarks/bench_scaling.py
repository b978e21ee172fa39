"""Scaling curves of the server steps: time and peak memory against users and against items.

Steps, each point in its own spawned subprocess (so its peak memory is its own):
  dplcf_counts      : DPLCF pair counts m11 from ObfuscatedBits uploads (4,096 users each),
                      AND + popcount on bit-packed columns (PairCounts(method="bits"));
  dplcf_counts_syrk : the same counts by float32 BLAS syrk (PairCounts(method="syrk"));
  dplcf_estimate    : the unbiased estimate n_hat = A^-1 m, Jaccard and the top-20 lists
                      (estimate_similarity + publish), after dplcf_counts in the same process;
  fmf_ldp_epoch     : one FMF-LDP epoch (FederatedMF, F = 5, k = 100, eps = 2.5): every
                      client's solve and reports, the shuffling proxy, the server's descent.
Data: synthetic. DPLCF uploads are uniformly random bits (the counting cost does not depend
on the bits); FMF users each rate about --fmf-per-user random items (ratings 1..5).
Sweeps: users 10K .. 500K at --items-fixed items, and items 1K .. 20K at --users-fixed users.
Each point is bounded: it is skipped when the log-log fit of the points before it (slope 2
from a single point) predicts more than --limit-s seconds, a run is killed after
3 x --limit-s, and points left when the --budget-s for the whole run is spent are skipped;
every skip is recorded with its reason.
Peak memory: ru_maxrss of the subprocess ("peak_gib"), and the step's own peak, the largest
resident-set growth over the RSS at its start, sampled every 5 ms ("step_peak_gib", plotted;
the memory slopes are fitted on the points where it is at least 20 MiB).
Writes benchmarks/results/scaling.json and scaling_users.png / scaling_items.png (log-log,
fitted slope in the legend). Usage:
  .venv/bin/python benchmarks/bench_scaling.py [--limit-s 60 --budget-s 840]
  .venv/bin/python benchmarks/bench_scaling.py --steps dplcf_counts --users 10000 20000 ...
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import time
from pathlib import Path

import numpy as np
from bench_mf_np import PeakRSS
from harness import peak_gib

USERS = [10_000, 20_000, 50_000, 100_000, 200_000, 500_000]
ITEMS = [1_000, 2_000, 5_000, 10_000, 20_000]
STEPS = ["dplcf_counts", "dplcf_counts_syrk", "dplcf_estimate", "fmf_ldp_epoch"]
_BATCH = 4096
_MEMORY_FLOOR_GIB = 20 / 1024  # memory slopes use the points whose step peak reaches this


# ---------------------------------------------------------------- children


def _uploads(users: int, items: int, seed: int):
    from dprec.systems.dplcf.messages import ObfuscatedBits

    rng = np.random.default_rng(seed)
    width = (items + 7) // 8
    pad = np.uint8((0xFF << (8 - items % 8)) & 0xFF) if items % 8 else np.uint8(0xFF)
    for s in range(0, users, _BATCH):
        packed = rng.integers(0, 256, (min(_BATCH, users - s), width), dtype=np.uint8)
        packed[:, -1] &= pad
        yield ObfuscatedBits(packed, items)


def _dplcf(p: dict, q: mp.Queue) -> None:
    from dprec.mechanisms.bitflip import BitFlip
    from dprec.systems.dplcf.server import PairCounts, estimate_similarity, publish

    method = p["method"]
    mech = BitFlip.symmetric(1.0)
    for users, items in ((300, 40), (600, 1100)):  # load serial and parallel kernels
        c = PairCounts(items, method)
        for msg in _uploads(users, items, 1):
            c.add(msg)
        if p["estimate"]:
            publish(estimate_similarity(c, mech, "unbiased").sim, 20, False)
    messages = _uploads(p["users"], p["items"], 0)
    spent = 0.0
    with PeakRSS() as mem:
        counts = PairCounts(p["items"], method)
        for msg in messages:  # generating the uploads is not timed (a batch is 1-80 MiB)
            t = time.perf_counter()
            counts.add(msg)
            spent += time.perf_counter() - t
        t = time.perf_counter()
        _ = counts.m11
        spent += time.perf_counter() - t
    out = {"dplcf_counts" if method == "bits" else "dplcf_counts_syrk":
           {"seconds": spent, "peak_gib": peak_gib(), "step_peak_gib": mem.peak_mib / 1024}}
    if p["estimate"]:
        with PeakRSS() as mem:
            t = time.perf_counter()
            est = estimate_similarity(counts, mech, "unbiased")
            estimate_s = time.perf_counter() - t
            t = time.perf_counter()
            publish(est.sim, 20, False)
            topk_s = time.perf_counter() - t
        out["dplcf_estimate"] = {"seconds": estimate_s + topk_s, "estimate_s": estimate_s,
                                 "topk_s": topk_s, "peak_gib": peak_gib(),
                                 "step_peak_gib": mem.peak_mib / 1024}
    q.put(out)


def _ratings(users: int, items: int, per_user: int, seed: int):
    """About per_user random items per user (draws with replacement, duplicates merged),
    ratings 1..5."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(users, dtype=np.int32), per_user)
    cols = rng.integers(0, items, users * per_user, dtype=np.int32)
    R = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(users, items))
    R.sum_duplicates()
    R.data = rng.integers(1, 6, R.nnz).astype(np.float64)
    return R


def _fmf(p: dict, q: mp.Queue) -> None:
    from threadpoolctl import threadpool_limits

    from dprec.systems.fmf.system import FederatedMF, FMFConfig

    R = _ratings(p["users"], p["items"], p["per_user"], 0)
    FederatedMF("warm", FMFConfig(epochs=1, k=2)).fit(R[: min(R.shape[0], 2000)],
                                                       np.random.default_rng(0))
    cfg = FMFConfig(factors=5, epochs=1, k=100, epsilon=2.5)
    with threadpool_limits(1, user_api="blas"), PeakRSS() as mem:
        t = time.perf_counter()
        model = FederatedMF("fmf-ldp", cfg).fit(R, np.random.default_rng(1))
        seconds = time.perf_counter() - t
    q.put({"fmf_ldp_epoch": {"seconds": seconds, "peak_gib": peak_gib(),
                             "step_peak_gib": mem.peak_mib / 1024,
                             "seconds_by_role": model.diagnostics()["seconds_by_role"]}})


def _run_child(fn, params: dict, timeout: float) -> dict | str:
    """``fn(params, queue)`` in a spawned process; its result, or why there is none."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=fn, args=(params, q))
    proc.start()
    try:
        out = q.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        proc.join()
        return f"killed after {timeout:.0f} s"
    proc.join()
    return out


# ---------------------------------------------------------------- fit and plot


def fit_slope(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """(slope, intercept) of log y = intercept + slope log x; None with fewer than 2 points."""
    if len(xs) < 2:
        return None
    slope, intercept = np.polyfit(np.log(xs), np.log(ys), 1)
    return float(slope), float(intercept)


def predict(xs: list[float], ys: list[float], x: float) -> float | None:
    if not xs:
        return None
    fit = fit_slope(xs, ys)
    if fit is None:  # one point: assume quadratic growth (conservative for these steps)
        return ys[0] * (x / xs[0]) ** 2
    return float(np.exp(fit[1] + fit[0] * np.log(x)))


def plot(points: list[dict], axis: str, fixed: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 4.8))
    for step in STEPS:
        rows = sorted((r for r in points if r["axis"] == axis and r["step"] == step),
                      key=lambda r: r[axis])
        if not rows:
            continue
        xs = [r[axis] for r in rows]
        for ax, key, unit in ((ax_t, "seconds", "s"), (ax_m, "step_peak_gib", "GiB")):
            ys = [max(r[key], 1e-3) for r in rows]
            keep = [k for k, r in enumerate(rows)
                    if key == "seconds" or r[key] >= _MEMORY_FLOOR_GIB]
            fit = fit_slope([xs[k] for k in keep], [ys[k] for k in keep])
            label = f"{step} (slope {fit[0]:.2f})" if fit else f"{step} (no slope)"
            line, = ax.loglog(xs, ys, "o-", label=label)
            if fit:
                grid = np.geomspace(xs[keep[0]], xs[keep[-1]], 20)
                ax.loglog(grid, np.exp(fit[1]) * grid ** fit[0], ":", color=line.get_color())
            ax.set_xlabel(f"{axis} ({fixed})")
            ax.set_ylabel(f"{'time' if key == 'seconds' else 'peak memory growth'} ({unit})")
    ax_t.set_title(f"time against {axis}")
    ax_m.set_title(f"peak memory of the step against {axis}")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--users", type=int, nargs="+", default=USERS)
    ap.add_argument("--items", type=int, nargs="+", default=ITEMS)
    ap.add_argument("--users-fixed", type=int, default=20_000, help="users of the items sweep")
    ap.add_argument("--items-fixed", type=int, default=2_000, help="items of the users sweep")
    ap.add_argument("--fmf-per-user", type=int, default=50)
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=STEPS)
    ap.add_argument("--limit-s", type=float, default=60.0)
    ap.add_argument("--budget-s", type=float, default=840.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()

    start = time.perf_counter()
    points: list[dict] = []
    skipped: list[dict] = []
    # one child can serve several steps: (child, steps it reports, params)
    jobs = []
    if "dplcf_counts" in args.steps or "dplcf_estimate" in args.steps:
        jobs.append((_dplcf, ["dplcf_counts", "dplcf_estimate"],
                     {"method": "bits", "estimate": "dplcf_estimate" in args.steps}))
    if "dplcf_counts_syrk" in args.steps:
        jobs.append((_dplcf, ["dplcf_counts_syrk"], {"method": "syrk", "estimate": False}))
    if "fmf_ldp_epoch" in args.steps:
        jobs.append((_fmf, ["fmf_ldp_epoch"], {"per_user": args.fmf_per_user}))
    sweeps = [("users", sorted(args.users), {"items": args.items_fixed}),
              ("items", sorted(args.items), {"users": args.users_fixed})]
    for fn, steps, params in jobs:
        steps = [s for s in steps if s in args.steps]
        for axis, values, fixed in sweeps:
            for x in values:
                point = {**fixed, axis: x}
                done = [r for r in points if r["axis"] == axis and r["step"] in steps]
                worst = max((predict([r[axis] for r in done if r["step"] == s],
                                     [r["seconds"] for r in done if r["step"] == s], x) or 0.0)
                            for s in steps)
                reason = None
                if worst > args.limit_s:
                    reason = f"predicted {worst:.0f} s > limit {args.limit_s:.0f} s"
                elif time.perf_counter() - start > args.budget_s:
                    reason = f"run budget of {args.budget_s:.0f} s spent"
                if reason is None:
                    out = _run_child(fn, {**params, **point}, 3 * args.limit_s)
                    if isinstance(out, str):
                        reason = out
                if reason is not None:
                    for s in steps:
                        skipped.append({"step": s, "axis": axis, **point, "reason": reason})
                    print(f"skip {'/'.join(steps)} {point}: {reason}", flush=True)
                    continue
                assert isinstance(out, dict)
                for s, row in out.items():
                    points.append({"step": s, "axis": axis, **point, **row})
                    print(f"{s:18s} {point}: {row['seconds']:8.2f} s, peak "
                          f"{row['peak_gib']:.2f} GiB (step {row['step_peak_gib']:.2f})",
                          flush=True)

    slopes: dict[str, dict[str, dict[str, float | None]]] = {}
    for s in args.steps:
        slopes[s] = {}
        for axis, _, _ in sweeps:
            rows = sorted((r for r in points if r["step"] == s and r["axis"] == axis),
                          key=lambda r: r[axis])
            xs = [r[axis] for r in rows]
            t = fit_slope(xs, [r["seconds"] for r in rows])
            big = [r for r in rows if r["step_peak_gib"] >= _MEMORY_FLOOR_GIB]
            m = fit_slope([r[axis] for r in big], [r["step_peak_gib"] for r in big])
            slopes[s][axis] = {"time": t[0] if t else None, "memory": m[0] if m else None}
    args.out.mkdir(parents=True, exist_ok=True)
    for axis, _, fixed in sweeps:
        other, value = next(iter(fixed.items()))
        plot(points, axis, f"{value:,} {other}", args.out / f"scaling_{axis}.png")
    record = {
        "benchmark": "bench_scaling",
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "cpu_count": os.cpu_count(), "load_average_at_end": os.getloadavg(),
        "wall_s": time.perf_counter() - start,
        "slopes": slopes,
        "slopes_note": ("least-squares slope of log(time) on log(size), and of log(step peak) "
                        "on log(size) over the points whose step peak is >= 20 MiB"),
        "points": points, "skipped": skipped,
    }
    (args.out / "scaling.json").write_text(json.dumps(record, indent=2))
    print("fitted log-log slopes (time; memory):")
    for s, by_axis in slopes.items():
        cells = [f"{axis}: " + "; ".join("n/a" if v[k] is None else f"{v[k]:.2f}"
                                         for k in ("time", "memory"))
                 for axis, v in by_axis.items()]
        print(f"  {s:18s} " + "   ".join(cells))
    print(f"wrote {args.out / 'scaling.json'} and scaling_users.png / scaling_items.png "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
