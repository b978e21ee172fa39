"""docs/REPRODUCTION.md's full-ranking block, regenerated from the stored step results.

The block between :data:`BEGIN` and :data:`END` is rewritten from the ``ranking-table``
step's ``results.csv`` (docs/results/003/ranking-table/, written by ``make reproduce``):
one row per system, full ranking first (issue 33 §1: HR@10, Recall@20, NDCG@10, MRR and
Coverage@10 of each test user's top 10 over every unseen item, where the step recorded them;
else full HR@10 and NDCG@10 with random ties), then the paper's protocol, HR@10 sampled
(99 negatives), with the paper's ML-20M number beside it. Every cell is the mean ± 95%
interval over the step's seeds (Student's t; the half-width from the stored std where the
file predates the interval columns). No experiment runs here. Usage:
  .venv/bin/python scripts/reproduction_tables.py [--doc docs/REPRODUCTION.md]
      [--results docs/results/003/ranking-table] [--check]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shlex
import sys
from pathlib import Path

from dprec.errors import DprecError
from dprec.evaluation.intervals import format_interval

__all__ = ["BEGIN", "END", "block", "main", "replace_block"]

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- full-ranking table: scripts/reproduction_tables.py writes this block -->"
END = "<!-- end of the full-ranking table -->"
FULL_TOPK = ("HR@10", "Recall@20", "NDCG@10", "MRR", "Coverage@10")
RANDOM_TIES = ("HR@10", "NDCG@10")


def _seeds(command: str) -> int | None:
    """The ``--seeds N`` of the step's command (None when it does not say)."""
    argv = shlex.split(command)
    return int(argv[argv.index("--seeds") + 1]) if "--seeds" in argv else None


def _cell(row: dict[str, str], column: str, n: int | None) -> str:
    """mean ± 95% interval of ``column`` (its ``ci95`` column, else from its std and n)."""
    raw = row.get(column, "")
    if raw in ("", "nan"):
        return "—"
    summary: dict[str, object] = {"mean": float(raw)}
    ci = row.get(f"{column} ci95", "")
    if ci not in ("", "nan"):
        summary["ci95"] = float(ci)
    elif row.get(f"{column} std", "") not in ("", "nan"):
        summary["std"] = float(row[f"{column} std"])
    return format_interval(summary, n)


def block(results: Path) -> list[str]:
    """The Markdown lines of the block, read from ``results``/results.csv and
    command.json."""
    meta = json.loads((results / "command.json").read_text())
    with (results / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise DprecError(f"{results}/results.csv has no rows: rerun `make reproduce --only "
                         "ranking-table`")
    n = _seeds(meta["command"])
    topk = all(f"full-topk {m}" in rows[0] for m in FULL_TOPK)
    full = [f"full-topk {m}" for m in FULL_TOPK] if topk else [f"full {m}"
                                                                 for m in RANDOM_TIES]
    heads = ([f"{m} (full ranking)" for m in FULL_TOPK] if topk else
             [f"{m} (full ranking, random ties)" for m in RANDOM_TIES])
    lines = [BEGIN, "",
             f"From `docs/results/003/ranking-table/results.csv` (`{meta['command']}`, "
             f"{meta['date']}, commit {meta['commit']}): ML-100K, leave-one-out by the latest "
             f"interaction, {n or '?'} seeds, mean ± 95% interval (Student's t). Full ranking "
             "first: each test user's top 10 over every item they never interacted with"
             + ("" if topk else " (this run predates the top-K list metrics: HR@10 and "
                "NDCG@10 with random ties)")
             + "; then the papers' protocol, the held-out item against 99 sampled "
             "negatives, with the published ML-20M number beside it.", "",
             "| system | " + " | ".join(heads) + " | HR@10 sampled (99 negatives) | "
             "paper, ML-20M, sampled | ε per user (δ) |",
             "|---|" + "---|" * (len(heads) + 3)]
    for row in rows:
        paper = row.get("paper ML-20M HR@10", "")
        eps = row.get("eps user", "")
        lines.append(
            f"| {row['system']} | " + " | ".join(_cell(row, c, n) for c in full)
            + f" | {_cell(row, 'sampled HR@10', n)} | "
            + ("—" if paper in ("", "nan") else f"{float(paper):.4f}") + " | "
            + ("non-private" if eps in ("", "nan") else
               f"{float(eps):.4g} ({float(row.get('delta user') or 0):g})"
               if math.isfinite(float(eps)) else "∞") + " |")
    return lines + ["", END]


def replace_block(text: str, lines: list[str]) -> str:
    """``text`` with its block (from :data:`BEGIN` to :data:`END`) replaced by ``lines``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise DprecError(f"the document must hold the block's markers once each, in order: "
                         f"{BEGIN!r} ... {END!r}")
    head, rest = text.split(BEGIN, 1)
    return head + "\n".join(lines) + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "REPRODUCTION.md")
    ap.add_argument("--results", type=Path,
                    default=ROOT / "docs" / "results" / "003" / "ranking-table")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the document's block differs from the stored results")
    args = ap.parse_args(argv)
    text = args.doc.read_text()
    new = replace_block(text, block(args.results))
    if args.check:
        if new != text:
            print(f"{args.doc}: the full-ranking block is out of date; run "
                  "scripts/reproduction_tables.py", file=sys.stderr)
            return 1
        return 0
    args.doc.write_text(new)
    print(f"rewrote the full-ranking block of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
