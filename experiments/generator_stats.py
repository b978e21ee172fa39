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
import datetime
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from dprec.data.registry import load_dataset
from dprec.data.stats import DRIFT_WINDOW, dataset_stats

DATASETS = ("ml-100k", "synthetic-943x1682", "synth-943x1682", "synthetic-10000x2000",
            "synth-10000x2000", "synthetic-75000x10000", "synth-75000x10000")
ML20M = {"name": "ml-20m (published)", "users": 138_493, "items": 26_744,
         "interactions": 20_000_263, "density": 0.0054, "popularity_gini": 0.903,
         "user_q0": 20, "user_mean": 144.4, "user_max": 9_254, "item_mean": 747.8,
         "item_max": 67_310}
"""ML-20M: GroupLens README (sizes, >= 20 ratings per user); Gini from LensKit's description
(codex.lenskit.org/movielens/ML20M); means and maxima from the ratings file as published."""
ROWS = ("users", "items", "interactions", "density", "popularity_gini", "top1pct_share",
        "items_under_10", "user_q10", "user_q50", "user_q90", "user_max", "item_q10",
        "item_q25", "item_q50", "item_q75", "item_q90", "item_max", "drift_lift", "drift_auc",
        "newer_auc", "seconds", "peak_gib")


def _cell(v: object) -> str:
    if v is None or v == "":
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    args = ap.parse_args()
    command = " ".join([".venv/bin/python", *sys.argv])
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or None
    columns = []
    for name in args.datasets:
        start = time.perf_counter()
        ds = load_dataset(name)
        seconds = time.perf_counter() - start
        stats = dataset_stats(ds)
        stats["seconds"] = round(seconds, 1)
        stats["peak_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
        columns.append(stats)
        print(json.dumps(stats), flush=True)
        del ds
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
        f"{DRIFT_WINDOW:.0%} of interactions before it. `seconds`: loading or generating "
        "(niced, on a shared 2-core machine); `peak_gib`: the process's peak resident memory "
        "so far (cumulative down the table).", "",
        "| statistic | " + " | ".join(str(c["name"]) for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in ROWS:
        lines.append(f"| {row} | " + " | ".join(_cell(c.get(row)) for c in columns) + " |")
    (args.out / "generator_stats.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
