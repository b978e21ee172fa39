"""Issue 33's closing table: the non-private baselines tuned for full-ranking HR@10 (ALS /
mf-np, EASE, item-kNN), popularity and, on ``synthetic-*`` data, the generator's oracle, on
the test split, with the one evaluator (:class:`dprec.evaluation.runner.Experiment`).

Each cell is a system's full-ranking metrics (top-K lists over all unseen items, ties: larger
score, then smaller item id): HR@10, Recall@20, NDCG@10, MRR and Coverage@10, each the mean
± 95% t-interval over the seeds. A system runs at ``configs/<dataset>/<system>.toml`` (what
``dprec tune`` chose on validation, or, a file without ``tuned_on`` in its provenance, a config
transferred from another data set) where that file exists, else at its defaults (said in the
cell). Cells are merged into ``--out`` (one JSON for every data set) and kept unless
``--force``; the Markdown table is written from the whole file. dpals rows are read, never
run, from ``--dpals-from`` (issue 33 §3's targets file: full HR@10 only).

  nice -n 10 .venv/bin/python experiments/baselines_full_ranking.py --dataset ml-100k
      --seeds 3 --out docs/results/baselines_full_ranking.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import dprec
from dprec.data.registry import load_dataset
from dprec.evaluation.metrics import FULL_LIST, HEADLINE
from dprec.evaluation.oracle import OracleConfig, OracleRanker
from dprec.evaluation.runner import Experiment
from dprec.systems.registry import make_config, make_system, read_config

SYSTEMS = ("mf-np", "ease", "item-knn", "popularity", "oracle")
LABELS = {"mf-np": "ALS (mf-np)", "ease": "EASE", "item-knn": "item-kNN",
          "popularity": "popularity", "oracle": "oracle (generator's scores, ceiling)"}
CONFIGS = Path("configs")


def tuned_config(dataset: str, system: str) -> tuple[Any, str]:
    """(config, where it came from) of ``system`` on ``dataset``."""
    if system == "oracle":
        return OracleConfig(dataset), "the generator's own scores (no fit)"
    path = CONFIGS / dataset / f"{system}.toml"
    if path.exists():
        cf = read_config(path)
        return make_config(system, cf.params, typed=True), f"{cf.origin} ({path})"
    return make_config(system, {}), "no settings" if system == "popularity" else "defaults"


def cell(exp: Experiment, dataset: str, system: str) -> dict[str, Any]:
    """One system's run over the seeds: the headline metrics per seed and summarised."""
    config, source = tuned_config(dataset, system)
    ds = exp.dataset
    make = ((lambda: OracleRanker(config, ds.user_ids, ds.item_ids)) if system == "oracle"
            else (lambda: make_system(system, None, config)))
    res = exp.run(make)
    return {"config": source, "seeds": list(exp.seeds), "wall_s": round(res.wall_time_s, 1),
            "per_seed": {m: [float(s[FULL_LIST][m]) for s in res.per_seed] for m in HEADLINE},
            "summary": {m: res.metrics[FULL_LIST][m] for m in HEADLINE}}


def fmt(summary: dict[str, Any]) -> str:
    ci = summary.get("ci95")
    return f"{summary['mean']:.4f}" + ("" if ci is None else f" ± {ci:.4f}")


def ratio(c: dict[str, Any], als: dict[str, Any] | None) -> str:
    """Mean HR@10 of a dpals cell over this table's ALS mean HR@10."""
    return "" if als is None else f"{c['summary']['mean'] / als['summary']['HR@10']['mean']:.3f}"


def dpals_rows(path: Path, als: dict[str, Any] | None) -> list[str]:
    """The tuned dpals cells of a dpals targets file, full HR@10 only."""
    if not path.exists():
        return [f"| dpals (tuned) | not yet in `{path}` | — | — | — | — | — | — | — |"]
    doc = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for label, c in doc["cells"].items():
        if label.startswith("dpals tuned"):
            rows.append(f"| {label} (from `{path}`) | {c['config']} | {fmt(c['summary'])} "
                        f"| — | — | — | — | {ratio(c, als)} | {len(c['per_seed'])} |")
    return rows


def table(doc: dict[str, Any], dpals_from: dict[str, Path]) -> str:
    out = []
    for name, part in doc["datasets"].items():
        d = part["dataset"]
        out += [f"## {name} ({d['users']:,} users × {d['items']:,} items, "
                f"{d['interactions']:,} interactions)", "",
                "| system | config | " + " | ".join(HEADLINE) + " | HR@10 / ALS | seeds |",
                "|---|---|" + "---|" * len(HEADLINE) + "---|---|"]
        als = part["cells"].get("mf-np")
        for system in SYSTEMS:
            c = part["cells"].get(system)
            if c is None:
                continue
            rel = ("" if als is None else
                   f"{c['summary']['HR@10']['mean'] / als['summary']['HR@10']['mean']:.3f}")
            out.append(f"| {LABELS[system]} | {c['config']} | "
                       + " | ".join(fmt(c["summary"][m]) for m in HEADLINE)
                       + f" | {rel} | {len(c['seeds'])} |")
        if name in dpals_from:
            out += dpals_rows(dpals_from[name], als)
        out += [""] + [f"- {n}" for n in doc.get("notes", {}).get(name, [])]
        out += ["", "Commands: " + "; ".join(f"`{c}`" for c in part["commands"]), ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--out", type=Path, default=Path("docs/results/baselines_full_ranking.json"))
    ap.add_argument("--force", action="store_true", help="rerun cells already in --out")
    ap.add_argument("--dpals-from", action="append", default=[], metavar="DATASET=FILE",
                    help="a dpals targets JSON whose tuned dpals rows join DATASET's table "
                    "(kept in --out)")
    ap.add_argument("--table-only", action="store_true", help="only rewrite the Markdown")
    ap.add_argument("--note", action="append", default=[], metavar="DATASET=TEXT",
                    help="a line under DATASET's table (kept in --out; '-' clears them)")
    args = ap.parse_args()
    doc: dict[str, Any] = (json.loads(args.out.read_text(encoding="utf-8"))
                           if args.out.exists() else {"datasets": {}})
    if not args.table_only:
        run(doc, args)
    doc.setdefault("dpals_from", {}).update(s.split("=", 1) for s in args.dpals_from)
    for name, text in (n.split("=", 1) for n in args.note):
        notes = doc.setdefault("notes", {}).setdefault(name, [])
        notes[:] = [] if text == "-" else [*notes, text]
    args.out.write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")
    md = ("# Baselines on full ranking (issue 33 §2): the closing table\n\n"
          "Test split (latest-item leave-one-out); every metric over the full top-K lists of "
          "all unseen items (ties: larger score, then smaller item id), mean ± 95% t-interval "
          "over the seeds (no interval for one seed). Configs: tuned on validation for full "
          "HR@10 by `dprec tune` (`docs/results/tuning_<dataset>/`). A ± 0.0000 is exact: "
          "the latest-item split, EASE, item-kNN, popularity and the oracle do not depend on "
          "the seed, so the interval covers the seed's randomness (ALS's initialisation) "
          "only, not the sampling of users; one HR@10's standard error over the n test users "
          "is about sqrt(p (1 - p) / n) (.009 at ML-100K, .005 at 10K, .0016 at 75K users). "
          "HR@10 / ALS: mean over the ALS row's mean. Written by "
          "`experiments/baselines_full_ranking.py` from `" + str(args.out) + "`.\n\n"
          + table(doc, {k: Path(v) for k, v in doc["dpals_from"].items()}) + "\n")
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)


def run(doc: dict[str, Any], args: argparse.Namespace) -> None:
    """Run the asked cells that are missing (all with ``--force``), saving after each."""
    systems = [s for s in args.systems.split(",") if s]
    if not args.dataset.startswith("synthetic-") and "oracle" in systems:
        systems.remove("oracle")
    ds = load_dataset(args.dataset)
    exp = Experiment(ds, range(args.seeds))
    command = "python " + shlex.join(sys.argv)
    for system in systems:
        if system in doc["datasets"].get(args.dataset, {}).get("cells", {}) and not args.force:
            continue
        start = time.perf_counter()
        new = {**cell(exp, args.dataset, system),
               "date": datetime.datetime.now(datetime.UTC).isoformat()[:16],
               "dprec_version": dprec.__version__}
        print(f"{args.dataset} {system}: {fmt(new['summary']['HR@10'])} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
        save_cell(args.out, doc, ds.summary(), args.dataset, command, system, new)


def save_cell(out: Path, doc: dict[str, Any], summary: dict[str, Any], dataset: str,
              command: str, system: str, new: dict[str, Any]) -> None:
    """Add one cell to ``out`` as it is on disk now (another run may have added cells since
    this one read it) and write it; ``doc`` becomes that file's content."""
    if out.exists():
        doc.clear()
        doc.update(json.loads(out.read_text(encoding="utf-8")))
    part = doc.setdefault("datasets", {}).setdefault(dataset, {"cells": {}, "commands": []})
    part["dataset"] = summary
    part["cells"][system] = new
    if command not in part["commands"]:
        part["commands"].append(command)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
