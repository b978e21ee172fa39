"""The Ray backend (issue 13): overhead against one process, million-client runs, projection.

Parts (each writes benchmarks/results/ray_<part>.json):

  overhead  : DPLCF (dplcf-sp) and FMF-LDP (default settings: 20 epochs; --epochs for
              fewer) on synthetic 75K x 10K data: fit time of the
              local sharded backend (one process, numba on both cores) against the Ray
              backend (one local Ray, 2 shard actors of 1 CPU each), the same model bit for
              bit (checked); ratio = Ray / local with the actors prestarted (as `dprec run`
              does) and cold (their start-up inside the fit); ray.init not counted;
              the engine without a backend beside them (a different random draw).
  dplcf-1m  : DPLCF at --users x --items (default 1M x 20K) on Ray; histories and
              obfuscated bits generated inside the shards (no process holds all users);
              wall time, per-shard client seconds, peak RSS of the largest worker and of
              the driver. Before it, a calibration on a few blocks in this process gives
              the per-block cost used by the projection (and by the record if the run is
              cut by --timeout-s).
  fmf-1m    : FMF-LDP with --users clients (default 1M x 20K items, F = 5, k = 100,
              --epochs) on Ray, same records.
  project   : 10M users x 100K items from the measured per-block costs.

Usage: nice -n 10 .venv/bin/python benchmarks/bench_ray.py overhead|dplcf-1m|fmf-1m|project
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import sys
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np

from dprec.distributed import LocalBackend
from dprec.distributed.ray_backend import RayBackend
from dprec.distributed.synthetic import SyntheticPopulation
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.privacy.events import EventLog
from dprec.protocol.engine import ShufflingProxy
from dprec.systems.dplcf.client import ObfuscatingClients
from dprec.systems.dplcf.server import SimilarityServer
from dprec.systems.fmf.client import FederatedClients
from dprec.systems.fmf.server import FactorServer

OUT = Path(__file__).parent / "results"
GIB = 2**30
RAY_INIT = {"num_cpus": 2, "object_store_memory": 4 * GIB}
SUMMARY_KEYS = {"dplcf-sp": "ray_dplcf_overhead", "fmf-ldp": "ray_fmf_ldp_overhead"}


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _write(part: str, doc: dict) -> None:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"ray_{part}.json"
    path.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def overhead(args: argparse.Namespace) -> dict:
    import ray

    from dprec.data.synthetic import synthetic
    from dprec.systems.registry import make_system
    t = time.perf_counter()
    train = synthetic(75_000, 10_000, args.interactions, rng=0).matrix.tocsr()
    doc: dict = {"data": {"users": 75_000, "items": 10_000, "interactions": train.nnz,
                          "seconds": time.perf_counter() - t}, "systems": {}}
    ray.init(include_dashboard=False, log_to_driver=False, **RAY_INIT)
    fmf = {} if args.epochs is None else {"epochs": args.epochs}
    for name, params in (("dplcf-sp", {}), ("fmf-ldp", fmf)):
        if name not in args.systems:
            continue
        row: dict = {"params": params}
        times: dict[str, list[float]] = {}
        clients: dict[str, list[float]] = {}
        same = True
        labels = ("engine",) + ("local", "ray_cold", "ray") * args.repeats
        ref = None
        for label in labels:
            m = make_system(name, params)
            warm = None
            if label == "ray":  # after ray_cold has released its actors' CPUs
                warm = RayBackend(shards=2, keep_warm=True)
                warm.prestart()  # as `dprec run` does: the workers boot while the data load
                ray.get([a.peak_rss_bytes.remote() for a in warm._actors])
            backend = {"engine": None, "local": LocalBackend(1),
                       "ray_cold": RayBackend(shards=2), "ray": warm}[label]
            m.transport = backend
            t = time.perf_counter()
            m.fit(train, np.random.default_rng(1))
            times.setdefault(label, []).append(time.perf_counter() - t)
            clients.setdefault(label, []).append(
                m.diagnostics()["seconds_by_role"]["clients"])
            if warm is not None:
                warm.close()
            model = m.broadcast.sims if name.startswith("dplcf") else m.V
            if label == "local" and ref is None:
                ref = model
            elif label != "engine":
                same = same and bool(np.array_equal(model, ref))
            print(name, label, times[label][-1], file=sys.stderr)
        for label in times:
            row[f"{label}_s"] = statistics.median(times[label])
            row[f"{label}_clients_s"] = statistics.median(clients[label])
            row[f"{label}_s_runs"] = times[label]
        row["ray_equals_local"] = same
        # each ratio pairs the runs of one repeat (same machine state), then the median
        row["ratios"] = [r / lo for r, lo in zip(times["ray"], times["local"], strict=True)]
        row["ratios_cold"] = [r / lo for r, lo in zip(times["ray_cold"], times["local"],
                                                      strict=True)]
        row["ratio"] = statistics.median(row["ratios"])
        row["ratio_cold"] = statistics.median(row["ratios_cold"])
        doc["systems"][name] = row
        doc[SUMMARY_KEYS[name]] = row["ratio"]  # read by benchmarks/summary.py
    ray.shutdown()
    doc["note"] = ("ratio = Ray fit time / local-backend fit time, same model, with the 2 shard "
                   "actors started before the fit (RayBackend.prestart, as dprec run starts "
                   "them while the data load); ratio_cold: actors started inside the fit "
                   "(about 2 s of worker imports); neither counts ray.init; each is the median "
                   "of --repeats paired ratios (local, cold, warm in turn); *_s are medians, "
                   "*_clients_s the clients-and-reduction phase alone")
    return doc


def _worker_peaks_gib() -> list[float]:
    """Peak RSS (VmHWM, GiB) of this run's shard workers, read from /proc while they are
    busy: the processes named ray::ShardWorker whose parent (the raylet) is our child."""
    peaks = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "cmdline").read_bytes().startswith(b"ray::ShardWorker"):
                continue
            raylet = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            parent = int(Path(f"/proc/{raylet}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent != os.getpid():
                continue
            status = (entry / "status").read_text().splitlines()
            hwm = next(line for line in status if line.startswith("VmHWM"))
            peaks.append(int(hwm.split()[1]) / 2**20)
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return peaks


def _calibrate(make, server_fn, rounds: int, blocks: int, block_size: int) -> dict:
    """Per-block client cost and server cost from a few blocks, in this process."""
    pop = make(blocks * block_size)
    backend = LocalBackend(1, block_size=block_size)
    srv, proxy = server_fn(pop)
    t = time.perf_counter()
    backend.run_population(srv, pop, rounds, np.random.default_rng(0), EventLog(),
                           proxy)
    wall = time.perf_counter() - t
    last = backend.last_round
    assert last is not None
    return {"users": blocks * block_size, "rounds": rounds, "wall_s": wall,
            "client_s_per_block_round": last.seconds / blocks,
            "other_s_per_round": (wall - last.seconds * rounds) / rounds}


def scale(args: argparse.Namespace, system: str) -> dict:
    import ray
    bs = args.block_size
    if system == "dplcf":
        mech = BitFlip.symmetric(1.0)

        def make(n: int):
            return SyntheticPopulation(n, args.items, args.activity, 7,
                                       partial(ObfuscatingClients, mechanism=mech,
                                               batch_size=bs), bs)

        def server_fn(pop):
            return SimilarityServer(args.items, mech, "unbiased", 20, False), None
        rounds = 1
    else:
        mech = BinaryMechanism(2.5)
        fmf = {"factors": 5, "alpha": 1.0, "reg": 1e-6, "k": 100, "clip": 1.0,
               "exact": False, "mechanism": mech}

        def make(n: int):
            return SyntheticPopulation(n, args.items, args.activity, 7,
                                       partial(FederatedClients, ledger=None, batch_size=bs,
                                               **fmf), bs, k=100)

        def server_fn(pop):
            return (FactorServer(args.items, 5, 1e-3, 1e-6, 20, 1.0, 0.1, mech),
                    ShufflingProxy(100))
        rounds = 2 if args.epochs is None else args.epochs
    doc: dict = {"system": system, "users": args.users, "items": args.items,
                 "mean_activity": args.activity, "rounds": rounds, "block_size": bs,
                 "shards": args.shards}
    doc["calibration"] = _calibrate(make, server_fn, rounds, args.calib_blocks, bs)
    print("calibration", doc["calibration"], file=sys.stderr)
    ray.init(include_dashboard=False, log_to_driver=False, **RAY_INIT)
    backend = RayBackend(shards=args.shards, block_size=bs)
    pop = make(args.users)
    srv, proxy = server_fn(pop)
    t = time.perf_counter()
    box: dict = {}

    def target() -> None:
        box["run"] = backend.run_population(srv, pop, rounds, np.random.default_rng(0),
                                            EventLog(), proxy)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(args.timeout_s)
    doc["wall_s"] = time.perf_counter() - t
    if "run" in box:
        run = box["run"]
        doc["finished"] = True
        doc["seconds_by_role"] = dict(run.seconds)
        doc["rounds_updated"] = sum(r.updated for r in run.rounds)
        last = backend.last_round
        assert last is not None
        doc["client_cpu_s_last_round"] = last.seconds
        doc["senders_last_round"] = last.senders
        doc["worker_peak_gib"] = [p / GIB for p in backend.peaks]
        doc["largest_worker_peak_gib"] = max(backend.peaks) / GIB
    else:
        doc["finished"] = False
        doc["worker_peak_gib_at_stop"] = _worker_peaks_gib()
        doc["note"] = (f"stopped at the --timeout-s {args.timeout_s} limit (the shards were "
                       "still counting); the calibration gives the per-block cost")
    doc["driver_peak_gib"] = _peak_gib()
    return doc  # main() writes it, then shuts Ray down


def project(args: argparse.Namespace) -> dict:
    """10M users x 100K items on N nodes of 16 cores, from the measured per-block costs.

    DPLCF: a block's client cost (flip 100K bits per client, add the block to the pair
    counts) is dominated by the pair counts, users x items^2 (bench_scaling.py), so the
    cost measured at --items is scaled by (100K / items)^2. One shard per node with 16
    numba threads (``cpus_per_shard=16``): one m11 per node. FMF-LDP: a block's cost (x_u
    solves with the F x F Gram, k sampled gradient entries, reports) does not grow with
    the items. Perfect balance (blocks are hashed) and perfect parallel speed-up within a
    node are assumed: these are lower bounds on the time.
    """
    d = json.loads((OUT / "ray_dplcf-1m.json").read_text())
    f = json.loads((OUT / "ray_fmf-1m.json").read_text())
    U, N, F, cores, bs = 10_000_000, 100_000, 5, 16, d["block_size"]
    blocks = U / bs
    # the calibration ran in one process on 2 cores (numba threads): CPU-seconds = 2 x wall
    dplcf_block = 2 * d["calibration"]["client_s_per_block_round"] * (N / d["items"]) ** 2
    fmf_block = 2 * f["calibration"]["client_s_per_block_round"]
    m11 = 4 * N * N
    hist = lambda users, act: users * act * 8  # noqa: E731 - CSR index + value per rating
    out: dict = {"users": U, "items": N, "cores_per_node": cores, "block_size": bs,
                 "measured_on": "2 shared Zen 3 cores (other jobs running)",
                 "dplcf_s_per_block_measured": d["calibration"]["client_s_per_block_round"],
                 "dplcf_cpu_s_per_block_at_100k_items": dplcf_block,
                 "fmf_s_per_block_round_measured": f["calibration"]["client_s_per_block_round"],
                 "fmf_cpu_s_per_block_round": fmf_block,
                 "dplcf": {}, "fmf_ldp": {}}
    for nodes in (1, 4, 16, 64):
        out["dplcf"][str(nodes)] = {
            "client_phase_s": blocks * dplcf_block / (cores * nodes),
            "memory_per_node_gib": (m11 + 16 * 2**20 + hist(U / nodes, d["mean_activity"])
                                    ) / GIB,
            "network_bytes_per_round": nodes * m11,  # each node's partial sent up once
            "reduction_depth": max(0, math.ceil(math.log2(nodes))),
        }
        out["fmf_ldp"][str(nodes)] = {
            "client_phase_s_per_round": blocks * fmf_block / (cores * nodes),
            "memory_per_node_gib": (hist(U / nodes, f["mean_activity"]) + N * F * 8
                                    + 2 * N * F * 8) / GIB,
            "network_bytes_per_round": nodes * (N * F * 8 + 2 * N * F * 8),
        }
    out["dplcf_server"] = {
        "m11_gib": m11 / GIB,
        "note": ("one m11 is 37 GiB of int32 at 100K items: it fits one node of 64+ GiB "
                 "(one shard per node), but the driver's reduced m11 plus the float32 "
                 "similarity matrix (another 37 GiB) need a big server node, or the estimate "
                 "split by item-row tiles over the nodes (it is row-separable, except the "
                 "eb estimator's global phi: two sums); not implemented. Each hop of the "
                 "reduction moves 37 GiB: about 30 s on 10 Gbit/s"),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["overhead", "dplcf-1m", "fmf-1m", "project"])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--items", type=int, default=20_000)
    ap.add_argument("--activity", type=float, default=100.0)
    ap.add_argument("--interactions", type=int, default=5_000_000)
    ap.add_argument("--epochs", type=int, default=None,
                    help="FMF-LDP epochs (overhead: the system's default, 20; fmf-1m: 2)")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--block-size", type=int, default=4096)
    ap.add_argument("--calib-blocks", type=int, default=4)
    ap.add_argument("--timeout-s", type=int, default=900)
    ap.add_argument("--repeats", type=int, default=3, help="overhead: paired runs per system")
    ap.add_argument("--systems", nargs="+", default=["dplcf-sp", "fmf-ldp"],
                    help="overhead: which systems")
    ap.add_argument("--tag", default="", help="appended to the result file name")
    args = ap.parse_args()
    if args.part == "overhead":
        doc = overhead(args)
    elif args.part == "project":
        doc = project(args)
    else:
        doc = scale(args, "dplcf" if args.part == "dplcf-1m" else "fmf")
    doc["part"] = args.part
    doc["peak_gib_driver"] = _peak_gib()
    _write(args.part + args.tag, doc)
    print(json.dumps(doc, indent=1, default=float))
    if doc.get("finished") is False:  # the run's thread is still inside ray: stop hard
        import ray
        stop = threading.Thread(target=ray.shutdown, daemon=True)
        stop.start()
        stop.join(60)
        sys.stdout.flush()
        os._exit(0)
    import ray
    if ray.is_initialized():
        ray.shutdown()


if __name__ == "__main__":
    main()
