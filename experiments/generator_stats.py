"""Issue 33 §2: the synthetic generators' shape beside ML-100K's, written as Markdown and JSON
(the command and date at the top) to docs/results/generator_stats.{md,json}.

Each data set is loaded by name (seed 0) and described by :func:`dprec.data.stats.dataset_stats`
(popularity Gini, the top 1% of items' share, the share of items with fewer than 10 users,
activity quantiles, drift at the latest item), with the generation time and the process's
peak memory after it. ML-20M's published statistics (LensKit's data description, and the
GroupLens README) stand beside them for scale; ML-20M itself is not on this machine.

Usage: .venv/bin/python experiments/generator_stats.py [--datasets ml-100k synth-943x1682 ...]
       [--out docs/results]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from dprec.data.registry import load_dataset
from dprec.data.stats import DRIFT_WINDOW, dataset_stats
from dprec.evaluation.provenance import Provenance

DATASETS = ("ml-100k", "synthetic-943x1682", "synth-943x1682", "synthetic-10000x2000",
            "synth-10000x2000", "synthetic-75000x10000", "synth-75000x10000",
            "synth-75000x10000-47250000", "synth-136677x20108-10000000",
            "synth-138493x26744-20000263")
"""ML-100K; both generators at 943 x 1682, 10K x 2K and 75K x 10K; the new one also at the
old one's density at 75K (like for like), at the ML-20M stand-in of issue 33 §4 (ML-20M
after the DPALS preprocessing: 136,677 x 20,108, 10M) and at ML-20M's published size."""
ML20M = {"name": "ml-20m (published)", "users": 138_493, "items": 26_744,
         "interactions": 20_000_263, "density": 0.0054, "popularity_gini": 0.903,
         "user_q0": 20, "user_mean": 144.4, "user_max": 9_254, "item_mean": 747.8,
         "item_max": 67_310}
"""ML-20M: GroupLens README (sizes, >= 20 ratings per user); Gini from LensKit's description
(codex.lenskit.org/movielens/ML20M); the means are the published sizes divided; the maxima
(9,254 ratings by one user, 67,310 on one item) come from a third-party summary page, not from
GroupLens, and were not checked against the ratings file here (no network)."""
ROWS = ("users", "items", "interactions", "density", "popularity_gini", "top1pct_share",
        "items_under_10", "user_q10", "user_q50", "user_mean", "user_q90", "user_max",
        "item_q10", "item_q25", "item_q50", "item_mean", "item_q75", "item_q90", "item_max",
        "drift_lift", "drift_auc", "newer_auc", "seconds", "cpu_seconds", "peak_gib")


def _cell(v: object) -> str:
    if v is None or v == "":
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def _describe(name: str) -> dict[str, object]:
    """The statistics of ``name`` (seed 0), with the seconds to load or generate it and this
    process's peak resident memory (GiB) after the statistics."""
    start = time.perf_counter()
    cpu = time.process_time()
    ds = load_dataset(name)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    stats: dict[str, object] = dict(dataset_stats(ds))
    stats["user_mean"] = ds.n_interactions / max(1, ds.n_users)
    stats["item_mean"] = ds.n_interactions / max(1, ds.n_items)
    stats["seconds"] = round(seconds, 1)
    stats["cpu_seconds"] = round(cpu, 1)
    stats["peak_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--note", action="append", default=[], help="a line under the header")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    prov = Provenance.start()
    command, date, commit = prov.command, prov.date, prov.commit
    if args.one:
        print(json.dumps(_describe(args.one)))
        return
    columns = []
    for name in args.datasets:  # one process each, so that peak_gib is the data set's own
        done = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True,
                              text=True, check=True)
        columns.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(done.stdout.strip(), flush=True)
    columns.append(ML20M)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "generator_stats.json").write_text(json.dumps(
        {"command": command, "date": date, "commit": commit, "datasets": columns}, indent=1))
    lines = [
        "# The synthetic generators beside ML-100K (issue 33 §2)", "",
        f"Command: `{command}`  ",
        f"Date: {date}, commit {commit} (plus uncommitted changes, if any)  ",
        "Seed 0; `synthetic-*` is the original generator (kept so that earlier results "
        "reproduce), `synth-*` the one with a cold tail and drift in time "
        "(`dprec.data.synthetic_drift`). Statistics: `dprec.data.stats` (the same rows as "
        f"`dprec data info NAME`); drift is measured at each user's latest item over the "
        f"{DRIFT_WINDOW:.0%} of interactions before it. `seconds`: loading or generating, "
        "wall clock (niced, on a 2-core machine shared with other jobs), `cpu_seconds` the "
        "same in CPU time (both threads); `peak_gib`: the peak resident memory of the "
        "process that generated the data set and computed its statistics (one per column).", "",
        *[f"- {n}" for n in args.note], *([""] if args.note else []),
        "| statistic | " + " | ".join(str(c["name"]) for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in ROWS:
        lines.append(f"| {row} | " + " | ".join(_cell(c.get(row)) for c in columns) + " |")
    (args.out / "generator_stats.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
