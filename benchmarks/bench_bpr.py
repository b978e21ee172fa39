"""BPR-MF: Hogwild threads against the serial loop, speed and quality at equal epochs.

Speed: synthetic obfuscated-like data (each bit 1 with probability --density, as after bit
flipping: DPLCF's "BPR-MF trained on obfuscated data" baseline), --speed-epochs epochs per
fit (the whole fit: sampler set-up, which is serial, and the epochs). --repeats paired rounds,
each fitting with threads=1 (the serial, bit-reproducible loop) and threads=--threads
(Hogwild) back to back; the speed-up is the median over rounds of serial time / parallel
time within a round.
Each round also times a pure-arithmetic kernel on 1 and --threads threads ("headroom"): on
a shared machine other processes' load caps every parallel speed-up at that figure.
Quality: ML-100K, leave-latest-out with 99 sampled negatives (the minimal inline protocol of
bench_mf_np.py), HR@10 and NDCG@10 after --epochs epochs with each thread count.
Writes benchmarks/results/bench_bpr.json ("bpr_parallel_speedup"). Usage:
  .venv/bin/python benchmarks/bench_bpr.py [--users 8000 --items 2500 --density 0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from bench_mf_np import draw_negatives, hr_ndcg_at_10, leave_latest_out, load


def obfuscated_like(users: int, items: int, density: float, seed: int) -> sp.csr_matrix:
    """Each bit 1 with probability ``density``, built row block by row block."""
    rng = np.random.default_rng(seed)
    blocks = [sp.csr_matrix(rng.random((min(2048, users - s), items)) < density,
                            dtype=np.float32) for s in range(0, users, 2048)]
    return sp.vstack(blocks).tocsr()


def _probe_kernel():
    import numba

    @numba.njit(parallel=True, cache=False)
    def spin(n, threads):  # independent arithmetic per thread: ideal parallel speed-up
        out = np.zeros(threads)
        for t in numba.prange(threads):
            x = 1.0 + t
            for _ in range(n // threads):
                x = x * 1.0000001 + 1e-9
            out[t] = x
        return out.sum()

    return spin


def headroom(spin, threads: int, n: int = 200_000_000) -> float:
    """Speed-up of ``threads`` threads over one on pure arithmetic, now: what the machine's
    other load leaves for any parallel code (``threads`` on an idle machine)."""
    import numba

    times = {}
    for k in (1, threads):
        numba.set_num_threads(k)
        t = time.perf_counter()
        spin(n, k)
        times[k] = time.perf_counter() - t
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return times[1] / times[threads]


def fit_seconds(R: sp.csr_matrix, threads: int, epochs: int, seed: int):
    from dprec.models import BPRMF, BPRConfig

    t = time.perf_counter()
    model = BPRMF(BPRConfig(epochs=epochs, threads=threads)).fit(R, np.random.default_rng(seed))
    return time.perf_counter() - t, model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--users", type=int, default=8_000)
    p.add_argument("--items", type=int, default=2_500)
    p.add_argument("--density", type=float, default=0.3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--speed-epochs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=50, help="epochs of the ML-100K quality fits")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = p.parse_args()

    import numba

    R = obfuscated_like(args.users, args.items, args.density, args.seed)
    for threads in (1, args.threads):  # compile / load the kernels outside the timing
        fit_seconds(R[:200], threads, 1, 0)
    spin = _probe_kernel()
    spin(1000, 1)
    rounds = []
    for r in range(args.repeats):
        serial, _ = fit_seconds(R, 1, args.speed_epochs, args.seed + r)
        parallel, _ = fit_seconds(R, args.threads, args.speed_epochs, args.seed + r)
        rounds.append({"serial_s": serial, "parallel_s": parallel,
                       "speedup": serial / parallel, "load_average_1min": os.getloadavg()[0],
                       "headroom": headroom(spin, args.threads)})
        print(f"round {r + 1}: 1 thread {serial:.2f} s, {args.threads} threads "
              f"{parallel:.2f} s ({args.speed_epochs} epochs), speed-up {serial / parallel:.2f} "
              f"(load {rounds[-1]['load_average_1min']:.1f}; pure-arithmetic speed-up now "
              f"{rounds[-1]['headroom']:.2f})", flush=True)
    speedup = float(np.median([r["speedup"] for r in rounds]))

    matrix, timestamps, note = load("ml-100k", args.seed)
    matrix = matrix.tocsr().astype(np.float64)
    matrix.data[:] = 1.0
    train, test_users, test_items = leave_latest_out(matrix, timestamps)
    negatives = draw_negatives(train, test_users, test_items, 99,
                               np.random.default_rng([args.seed, 1]))
    quality = {}
    for threads in (1, args.threads):
        seconds, model = fit_seconds(train, threads, args.epochs, args.seed)
        hr, nd = hr_ndcg_at_10(model.user_factors, model.item_factors, test_users, test_items,
                               negatives, np.random.default_rng([args.seed, 2]))
        quality[f"threads={threads}"] = {"HR@10": hr, "NDCG@10": nd, "fit_s": seconds,
                                         "epochs": args.epochs}
        print(f"ML-100K, {args.epochs} epochs, {threads} thread(s): HR@10 {hr:.4f}, "
              f"NDCG@10 {nd:.4f}, {seconds:.1f} s")

    record = {
        "benchmark": "bench_bpr",
        "speed_data": f"{args.users} x {args.items}, each bit 1 with p = {args.density} "
                      f"({R.nnz} positives = SGD steps per epoch)",
        "quality_data": note,
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "numba_threads_available": numba.config.NUMBA_NUM_THREADS,
        "rounds": rounds,
        "bpr_parallel_speedup": speedup,
        "headroom": float(np.median([r["headroom"] for r in rounds])),
        "headroom_note": (f"speed-up of {args.threads} threads on independent arithmetic, "
                          "measured in each round: the most any parallel code could reach "
                          "under the machine's load at the time"),
        "speedup_note": (f"median over {args.repeats} paired rounds of (1-thread fit time) / "
                         f"({args.threads}-thread Hogwild fit time), {args.speed_epochs} "
                         "epochs per fit, sampler set-up included"),
        "quality": quality,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_bpr.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"speed-up on {args.threads} threads: {speedup:.2f} (median of {args.repeats}); "
          f"wrote {path}")


if __name__ == "__main__":
    main()
