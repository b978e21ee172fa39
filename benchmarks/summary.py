"""Assemble benchmarks/results/summary.json from the benchmark outputs of `make bench`.

  dplcf_server_vs_syrk   : dplcf_server.json, "dplcf_server_vs_syrk" (DPLCF's whole server
                           step / the dense float32 X^T X floor, median of its paired runs);
  fmf_ldp_vs_implicit_cg : "ratio_fmf_to_implicit" of bench_fmf_ldp.json and of each
                           fmf_ldp_runs/*/bench_fmf_ldp.json (FMF-LDP fit / implicit's CG ALS,
                           one paired run per file), their median;
  mf_np_vs_implicit_cg   : bench_mf_np-ml-100k-F32.json, "mf_np_vs_implicit_cg" (dprec's CG
                           ALS / implicit's CG per iteration, median of paired rounds);
  bpr_parallel_speedup   : bench_bpr.json, "bpr_parallel_speedup" (serial / Hogwild fit time,
                           median of paired rounds);
  ray_dplcf_overhead,    : ray_overhead.json (bench_ray.py overhead): Ray / local backend fit
  ray_fmf_ldp_overhead     time at 75K x 10K, actors prestarted, median of paired runs.
Each ratio is a median of the paired runs its benchmark made (3 by default). A missing input
is an error naming the benchmark that writes it. Usage:
  .venv/bin/python benchmarks/summary.py [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def _read(path: Path, key: str, writer: str) -> float:
    if not path.exists():
        sys.exit(f"summary: {path} is missing; run {writer} first")
    record = json.loads(path.read_text())
    if key not in record:
        sys.exit(f"summary: {path} has no {key!r}; rerun {writer}")
    return float(record[key])


def summarise(results: Path) -> tuple[dict[str, float], dict[str, object]]:
    fmf_files = [results / "bench_fmf_ldp.json",
                 *sorted(results.glob("fmf_ldp_runs/*/bench_fmf_ldp.json"))]
    fmf = [_read(p, "ratio_fmf_to_implicit", "benchmarks/bench_fmf_ldp.py") for p in fmf_files]
    summary = {
        "dplcf_server_vs_syrk": _read(results / "dplcf_server.json", "dplcf_server_vs_syrk",
                                      "benchmarks/bench_dplcf_server.py"),
        "fmf_ldp_vs_implicit_cg": statistics.median(fmf),
        "mf_np_vs_implicit_cg": _read(results / "bench_mf_np-ml-100k-F32.json",
                                      "mf_np_vs_implicit_cg", "benchmarks/bench_mf_np.py"),
        "bpr_parallel_speedup": _read(results / "bench_bpr.json", "bpr_parallel_speedup",
                                      "benchmarks/bench_bpr.py"),
        "ray_dplcf_overhead": _read(results / "ray_overhead.json", "ray_dplcf_overhead",
                                    "benchmarks/bench_ray.py overhead"),
        "ray_fmf_ldp_overhead": _read(results / "ray_overhead.json", "ray_fmf_ldp_overhead",
                                      "benchmarks/bench_ray.py overhead"),
    }
    provenance = {"fmf_ldp_vs_implicit_cg": {"runs": fmf,
                                             "files": [str(p) for p in fmf_files]}}
    return summary, provenance


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    summary, provenance = summarise(args.results)
    path = args.results / "summary.json"
    path.write_text(json.dumps(summary, indent=2) + "\n")
    for key, value in summary.items():
        print(f"{key:24s} {value:.3f}")
    fmf = provenance["fmf_ldp_vs_implicit_cg"]
    print(f"(fmf_ldp_vs_implicit_cg: median of {fmf['runs']})")  # type: ignore[index]
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
