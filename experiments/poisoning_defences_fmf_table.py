"""The FMF-LDP rows of a poisoning run with --defences as Markdown (issue 26 §3).

Reads ``poisoning.json`` of ``experiments/poisoning.py --systems fmf-ldp --defences ...``
and prints, per defence (the server's aggregator) and attack, sampled HR@10 (full ranking in
brackets, mean over seeds) at each fraction, then each defence's cost at 0% and its HR@10 at
5% relative to the clean run of the plain mean (the targets: cost <= 2%, within 10%).

  .venv/bin/python experiments/poisoning_defences_fmf_table.py \
      results/poisoning_defences_fmf/poisoning.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def rows(doc: dict[str, Any]) -> list[str]:
    """The Markdown tables."""
    fmf = {n: e for n, e in doc["systems"].items() if e["system"] == "fmf-ldp"}
    fr = doc["fractions"]
    seeds = len(doc["seeds"])
    out = ["Sampled HR@10 (full-ranking HR@10), mean over " f"{seeds} seeds:", "",
           "| defence | attack | " + " | ".join(f"{100 * f:g}%" for f in fr) + " |",
           "|---|---|" + "---|" * len(fr)]
    for e in fmf.values():
        for s, pts in e["strategies"].items():
            out.append(f"| {e.get('defence') or 'mean'} | {s} | " + " | ".join(
                f"{p['sampled']['mean']:.4f} ({p['full']['mean']:.4f})" for p in pts) + " |")
    clean = next((e for e in fmf.values() if (e.get("defence") or "mean") == "mean"), None)
    if clean is None:
        return out
    base = clean["strategies"][next(iter(clean["strategies"]))][0]["sampled"]["mean"]
    out += ["", f"Against the clean run of the plain mean (sampled HR@10 {base:.4f}): cost at "
            "0% (target <= 2%) and the change at 5% (target: within -10%), with the std over "
            "seeds at 5%:", "", "| defence | attack | cost at 0% | change at 5% (std) |",
            "|---|---|---|---|"]
    for e in fmf.values():
        for s, pts in e["strategies"].items():
            at = {p["fraction"]: p for p in pts}
            zero = at.get(0.0)
            five = at.get(0.05)
            if zero is None or five is None:
                continue
            out.append(f"| {e.get('defence') or 'mean'} | {s} | "
                       f"{100 * (zero['sampled']['mean'] / base - 1):+.1f}% | "
                       f"{100 * (five['sampled']['mean'] / base - 1):+.1f}% "
                       f"({five['sampled']['std']:.4f}) |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=Path)
    args = ap.parse_args()
    print("\n".join(rows(json.loads(args.json.read_text()))))


if __name__ == "__main__":
    main()
