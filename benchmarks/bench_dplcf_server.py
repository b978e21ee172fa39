"""DPLCF server step at the papers' MovieLens-20M size, against the dense X^T X floor.

Measures, each in its own subprocess (so peak memory is its own):
  floor  : a dense float32 X^T X of the same shape (users x items), numpy BLAS;
  clients: simulated obfuscation of every user's bit vector (runs on devices in deployment);
  server : accumulate m11 = X^T X from the obfuscated messages (syrk), estimate n_hat = A^-1 m,
           Jaccard, top-K neighbour lists (the whole untrusted-server step);
  device : on-device scoring, microseconds per user.
Writes benchmarks/results/dplcf_server.json. Usage:
  .venv/bin/python benchmarks/bench_dplcf_server.py [--users 75000 --items 10000 --nnz 17000000]
"""

from __future__ import annotations

import argparse
import json
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
    from dprec.mechanisms.bitflip import BitFlip
    from dprec.systems.dplcf import client, server

    x = _data(args.users, args.items, args.nnz, args.seed)
    mech = BitFlip.symmetric(args.epsilon)
    rng = np.random.default_rng(args.seed)
    base = peak_gib()
    t_clients = 0.0
    t_server = 0.0
    counts = server.PairCounts(x.shape[1])
    for s in range(0, x.shape[0], args.batch):
        t = time.perf_counter()
        msg = client.obfuscate(x[s:s + args.batch], mech, rng)
        t_clients += time.perf_counter() - t
        t = time.perf_counter()
        counts.add(msg)
        t_server += time.perf_counter() - t
    t = time.perf_counter()
    est = server.estimate_similarity(counts, mech, "unbiased")
    t_estimate = time.perf_counter() - t
    t = time.perf_counter()
    nl = server.publish(est.sim, args.neighbours, include_full=False)
    t_topk = time.perf_counter() - t
    users = np.arange(min(10_000, x.shape[0]))
    t = time.perf_counter()
    for s in range(0, len(users), 1000):
        client.local_scores(x[users[s:s + 1000]], nl, "item", args.neighbours)
    t_score = time.perf_counter() - t
    q.put({
        "clients_obfuscation_s": t_clients,
        "server_accumulate_s": t_server,
        "server_estimate_s": t_estimate,
        "server_topk_s": t_topk,
        "server_total_s": t_server + t_estimate + t_topk,
        "server_peak_gib": peak_gib(),
        "server_data_peak_gib": base,
        "clipped_fraction": est.clipped / float(x.shape[1] ** 2),
        "device_scoring_us_per_user": 1e6 * t_score / len(users),
    })



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--users", type=int, default=75_000)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--nnz", type=int, default=17_000_000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--neighbours", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    floor = in_child(_floor, args)
    ours = in_child(_server, args)
    res = {"shape": [args.users, args.items], "nnz": args.nnz, "epsilon": args.epsilon,
           **floor, **ours,
           "ratio_server_to_floor": ours["server_total_s"] / floor["floor_s"],
           "ratio_server_plus_clients_to_floor":
               (ours["server_total_s"] + ours["clients_obfuscation_s"]) / floor["floor_s"]}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "dplcf_server.json"
    path.write_text(json.dumps(res, indent=2))
    for k, v in res.items():
        print(f"{k:38s} {v:.4g}" if isinstance(v, float) else f"{k:38s} {v}")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
