"""DPLCF server step at the papers' MovieLens-20M size, against the dense X^T X floor.

Measures, each in its own subprocess (so peak memory is its own):
  floor  : a dense float32 X^T X of the same shape (users x items), numpy BLAS (syrk);
  clients: simulated obfuscation of every user's bit vector (runs on devices in deployment);
  server : accumulate m11 = X^T X from the obfuscated messages (--count-method: "bits", AND +
           popcount on bit-packed item columns, or "syrk", float32 BLAS on unpacked batches),
           estimate n_hat = A^-1 m, Jaccard, top-K neighbour lists (the whole untrusted-server
           step);
  device : on-device scoring, microseconds per user.
--repeats paired runs (floor, then server, seconds apart); every ratio is the median over the
runs of (server / floor) within a run, so load on a shared machine hits both sides of it.
Writes benchmarks/results/dplcf_server.json ("dplcf_server_vs_syrk": the median ratio of the
whole server step to the floor). Usage:
  .venv/bin/python benchmarks/bench_dplcf_server.py [--users 75000 --items 10000 --nnz 17000000]
  .venv/bin/python benchmarks/bench_dplcf_server.py --count-method syrk   # today's path
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from harness import in_child, peak_gib


def _data(users: int, items: int, nnz: int, seed: int) -> sp.csr_matrix:
    from dprec.data.synthetic import synthetic
    return synthetic(users, items, nnz, rng=seed).binary()


def _floor(args, q) -> None:
    x = _data(args.users, args.items, args.nnz, args.seed)
    base = peak_gib()
    t = time.perf_counter()
    dense = x.toarray().astype(np.float32)
    g = dense.T @ dense
    q.put({"floor_s": time.perf_counter() - t, "floor_peak_gib": peak_gib(),
           "floor_data_peak_gib": base, "checksum": float(g[0, 0])})


def _server(args, q) -> None:
    """The protocol on the round engine: clients obfuscate, the server estimates and publishes."""
    from dprec.mechanisms.bitflip import BitFlip
    from dprec.privacy.events import EventLog
    from dprec.protocol.engine import run_protocol
    from dprec.systems.dplcf import client, server

    x = _data(args.users, args.items, args.nnz, args.seed)
    mech = BitFlip.symmetric(args.epsilon)
    rng = np.random.default_rng(args.seed)
    for n in (40, min(1100, x.shape[1])):  # load the compiled kernels (serial and parallel)
        warm = server.SimilarityServer(n, mech, "unbiased", 5, False,  # outside the timing
                                       count_method=args.count_method)
        warm.aggregate(iter([client.obfuscate(x[:600, :n], mech, np.random.default_rng(1))]), 0)
    base = peak_gib()
    srv = server.SimilarityServer(x.shape[1], mech, "unbiased", args.neighbours, False,
                                  count_method=args.count_method)
    run = run_protocol(srv, client.ObfuscatingClients(x, mech, args.batch), 1, rng,
                       EventLog(x.shape[0]))
    nl = run.broadcast
    users = np.arange(min(10_000, x.shape[0]))
    t = time.perf_counter()
    for s in range(0, len(users), 1000):
        client.local_scores(x[users[s:s + 1000]], nl, "item", args.neighbours)
    t_score = time.perf_counter() - t
    assert srv.estimate is not None
    q.put({
        "clients_obfuscation_s": run.seconds["clients"],
        "server_accumulate_s": srv.seconds["accumulate"],
        "server_estimate_s": srv.seconds["estimate"],
        "server_topk_s": srv.seconds["publish"],
        "server_total_s": run.seconds["server"],
        "server_peak_gib": peak_gib(),
        "server_data_peak_gib": base,
        "clipped_fraction": srv.estimate.clipped / float(x.shape[1] ** 2),
        "device_scoring_us_per_user": 1e6 * t_score / len(users),
    })



def _median(rows: list[dict], key: str) -> float:
    return float(np.median([r[key] for r in rows]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--users", type=int, default=75_000)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--nnz", type=int, default=17_000_000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--neighbours", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count-method", choices=["bits", "syrk"], default="bits")
    ap.add_argument("--repeats", type=int, default=3, help="paired (floor, server) runs")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    runs = []
    for r in range(args.repeats):
        floor = in_child(_floor, args)
        ours = in_child(_server, args)
        run = {**floor, **ours,
               "ratio_server_to_floor": ours["server_total_s"] / floor["floor_s"],
               "ratio_counts_to_floor": ours["server_accumulate_s"] / floor["floor_s"],
               "ratio_server_plus_clients_to_floor":
                   (ours["server_total_s"] + ours["clients_obfuscation_s"]) / floor["floor_s"],
               "load_average_1min": os.getloadavg()[0]}
        runs.append(run)
        print(f"run {r + 1}/{args.repeats}: floor {floor['floor_s']:.2f} s, server "
              f"{ours['server_total_s']:.2f} s (counts {ours['server_accumulate_s']:.2f} s), "
              f"ratio {run['ratio_server_to_floor']:.3f}, load {run['load_average_1min']:.1f}",
              flush=True)
    res: dict[str, object] = {
        "shape": [args.users, args.items], "nnz": args.nnz, "epsilon": args.epsilon,
        "count_method": args.count_method, "repeats": args.repeats,
        "note": "each number is the median over the paired runs; ratios are taken within a run",
        **{k: _median(runs, k) for k, v in runs[0].items() if isinstance(v, float)},
        "checksum": runs[0]["checksum"],
        "runs": runs,
    }
    res["dplcf_server_vs_syrk"] = res["ratio_server_to_floor"]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "dplcf_server.json"
    path.write_text(json.dumps(res, indent=2))
    for k, v in res.items():
        if k != "runs":
            print(f"{k:38s} {v:.4g}" if isinstance(v, float) else f"{k:38s} {v}")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
