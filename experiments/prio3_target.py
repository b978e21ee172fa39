"""Issue 31's target for malicious clients: one malicious client among n clients, for each
strategy of :mod:`dprec.protocol.sum_poisoning` (``out-of-range``: q/2 - 1 on every
coordinate, the issue's probe), with the Prio3 validity check on (``validity=prio3``: the
in-process proxy refuses what the proof would refuse) and off (``validity=none``).

Per seed, a run without an attacker and one per strategy (the attacker and targets drawn
from (seed, "poison"), the simulation's draws those of the clean run). Reported: how far the
published counts move from the same seed's clean run (max and mean |change| over items),
against the spread over seeds of the clean counts (per item, the standard deviation over
the seeds; its median over items), HR@10 (sampled and full) against the clean mean +- std,
the targets in a user's top-10, and every upload's outcome (summed / refused, with reason).
``min_honest = n - 1`` in both arms: the default ``min_honest = n`` cannot release a round
once one upload is refused (issue 31 §2's rule), and n - 1 is the honest count with one
attacker.

  nice .venv/bin/python experiments/prio3_target.py --dataset synthetic-1000x1682 --seeds 3
      --out results/prio3_target --table docs/results/prio3_target.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import dprec
from dprec.data.registry import load_dataset
from dprec.evaluation.provenance import PYTHON, run_command, utc_date
from dprec.evaluation.runner import Experiment
from dprec.protocol.sum_poisoning import SUM_STRATEGIES, SumPoisoning, poison_sum
from dprec.random import derive_generator
from dprec.systems.registry import make_config, make_system

sys.path.insert(0, str(Path(__file__).resolve().parent))
from poisoning import targets_in_top10  # noqa: E402

VALIDITY = ("prio3", "none")


def arm(exp: Experiment, system: str, config: Any, poisoning: SumPoisoning
        ) -> dict[str, Any]:
    """One (config, poisoning) over the seeds: per seed the published counts, outcomes and
    the targets' reach; HR@10 over the seeds."""
    seeds = iter(exp.seeds)
    fitted: list[tuple[int, Any, Any]] = []

    def make() -> Any:
        seed = next(seeds)
        model = make_system(system, None, config)
        fitted.append((seed, model, poison_sum(model, poisoning,
                                               derive_generator(seed, "poison"))))
        return model

    res = exp.run(make)
    per_seed = []
    for seed, model, hook in fitted:
        clients = hook.clients
        targets = None if clients is None else clients.targets
        fold = exp.folds(seed)[0][0]
        diag = model.diagnostics()
        pop = system == "dp-pop"
        per_seed.append({"seed": seed, "outcomes": diag["upload_outcomes"],
                         "counts": np.asarray(model.noisy_counts, np.int64) if pop else None,
                         "refused_reasons": diag["refused_reasons"],
                         "attackers": 0 if clients is None else len(clients.attackers),
                         "reach": targets_in_top10(model, exp.evaluator.train_matrix(fold, model),
                                                   targets) if pop else {"mean": 0.0}})
    return {"sampled": res.metrics["sampled"]["HR@10"], "full": res.metrics["full"]["HR@10"],
            "per_seed": per_seed, "q": (res.privacy or {}).get("secure_sum", {}).get("q"),
            "validity": fitted[0][1].diagnostics().get("validity", {"check": "per round"})}


def compare(point: dict[str, Any], clean: dict[str, Any]) -> dict[str, Any]:
    """How far ``point``'s published counts moved from the same seeds' clean counts (dp-pop;
    NaN for dpals, whose release is item factors)."""
    moved = [np.abs(p["counts"] - c["counts"]) for p, c in
             zip(point["per_seed"], clean["per_seed"], strict=True) if p["counts"] is not None]
    return {"max_abs_change": float(np.mean([m.max() for m in moved])) if moved else np.nan,
            "mean_abs_change": float(np.mean([m.mean() for m in moved])) if moved else np.nan,
            "targets_in_top10": float(np.mean([p["reach"]["mean"] for p in point["per_seed"]])),
            "outcomes": [p["outcomes"] for p in point["per_seed"]],
            "refused_reasons": [p["refused_reasons"] for p in point["per_seed"]],
            "attackers": [p["attackers"] for p in point["per_seed"]],
            "sampled": point["sampled"], "full": point["full"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", choices=("dp-pop", "dpals"), default="dp-pop")
    ap.add_argument("--dataset", default="synthetic-1000x1682")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--strategies", nargs="+", choices=SUM_STRATEGIES,
                    default=list(SUM_STRATEGIES))
    ap.add_argument("--out", type=Path, default=Path("results/prio3_target"))
    ap.add_argument("--table", type=Path, default=None)
    args = ap.parse_args()
    start = time.perf_counter()
    ds = load_dataset(args.dataset)
    exp = Experiment(ds, range(args.seeds))
    n = ds.n_users
    doc: dict[str, Any] = {"system": args.system, "experiment": "issue 31 target: one "
                           "malicious client, Prio3 check on and off",
                           "dataset": ds.summary(), "seeds": list(exp.seeds),
                           "min_honest": n - 1, "dprec_version": dprec.__version__, "arms": {}}
    for validity in VALIDITY:
        config = make_config(args.system, {"min_honest": n - 1, "validity": validity})
        clean = arm(exp, args.system, config, SumPoisoning(0.0))
        counts = np.stack([p["counts"] if p["counts"] is not None else np.zeros(1)
                           for p in clean["per_seed"]])
        spread = counts.std(axis=0, ddof=1) if len(counts) > 1 else np.zeros(counts.shape[1])
        entry = {"clean": {"sampled": clean["sampled"], "full": clean["full"],
                           "outcomes": [p["outcomes"] for p in clean["per_seed"]]},
                 "spread": {"median_item_std": float(np.median(spread)),
                            "mean_item_std": float(spread.mean())},
                 "validity": clean["validity"], "q": clean["q"], "strategies": {}}
        for s in args.strategies:
            point = compare(arm(exp, args.system, config, SumPoisoning(1 / n, s)), clean)
            entry["strategies"][s] = point
            print(f"{validity:5s} {s:12s} max|dcount| {point['max_abs_change']:8.1f} mean "
                  f"{point['mean_abs_change']:7.2f} (spread {np.median(spread):.1f})  HR@10 "
                  f"{point['sampled']['mean']:.4f} / {point['full']['mean']:.4f}  outcomes "
                  f"{point['outcomes'][0]}", flush=True)
        doc["arms"][validity] = entry
    doc["wall_time_s"] = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "prio3_target.json").write_text(json.dumps(doc, indent=2, default=float))
    if args.table is not None:
        command = run_command("experiments/prio3_target.py", prefix=("nice", PYTHON))
        args.table.write_text(markdown(doc, command))
    print(f"saved {args.out} ({doc['wall_time_s']:.0f} s)")


def markdown(doc: dict[str, Any], command: str) -> str:
    """The measurement as Markdown, with the command and the date."""
    date = utc_date()
    ds = doc["dataset"]
    on, off = doc["arms"]["prio3"], doc["arms"]["none"]
    v = on["validity"]
    pop = doc.get("system", "dp-pop") == "dp-pop"
    bounds = (f"The check (dp_pop_check): every count in {v['coordinate_range']}, the sum in "
              f"{v['sum_range']}, ||y||^2 <= {v['l2_bound_sq']} (T = {v['T']}, S = {v['S']})."
              if pop else "The check (dpals.plan.round_check, per round): every coordinate "
              "within C + T, ||y||^2 <= B^2.")
    spread = (f"Spread over seeds of the clean published counts (per item, std over the "
              f"seeds; median over items): {on['spread']['median_item_std']:.1f}. "
              if pop else "")
    lines = [f"# One malicious client of {doc.get('system', 'dp-pop')}, Prio3 check on and "
             f"off: {ds.get('name')}, {len(doc['seeds'])} seeds", "", f"Command: `{command}`  ",
             f"Date: {date}, dprec {doc['dprec_version']}", "",
             f"n = {ds.get('users')} clients, {ds.get('items')} items, one attacker "
             f"(fraction 1/n), min_honest = {doc['min_honest']}, q = {on['q']}. {bounds}",
             "", f"{spread}Clean "
             f"HR@10 sampled {on['clean']['sampled']['mean']:.4f} ± "
             f"{on['clean']['sampled']['std']:.4f}, full {on['clean']['full']['mean']:.4f} ± "
             f"{on['clean']['full']['std']:.4f} (check on and off give the same clean run: "
             f"{on['clean']['sampled']['mean'] == off['clean']['sampled']['mean']}).", "",
             "| strategy | check | " + ("max / mean \\|Δ count\\| | " if pop else "")
             + "HR@10 sampled | HR@10 full | " + ("targets in top-10 | " if pop else "")
             + "uploads (seed 0, all rounds) |", "|---|---|---|---|---|" + "---|---|" * pop]
    for s in on["strategies"]:
        for name, e in (("prio3", on), ("none", off)):
            p = e["strategies"][s]
            o = p["outcomes"][0]
            why = p["refused_reasons"][0]
            moved = f"{p['max_abs_change']:.0f} / {p['mean_abs_change']:.2f} | " if pop else ""
            reach = f"{p['targets_in_top10']:.2f} | " if pop else ""
            lines.append(
                f"| {s} | {name} | {moved}{p['sampled']['mean']:.4f} ± "
                f"{p['sampled']['std']:.4f} | {p['full']['mean']:.4f} ± {p['full']['std']:.4f}"
                f" | {reach}summed {o['summed']}, refused {o['refused']}"
                f"{' (' + ', '.join(why) + ')' if why else ''} |")
    if pop:
        lines += ["", "Δ count: the published count minus the same seed's clean count, max and "
                  "mean over items, mean over seeds. With the check on, a refused attacker's "
                  "Δ is its own honest row left out (each entry within [-T, 1 + T]).", ""]
    else:
        lines += ["", "Each client uploads once per round (the counts of all rounds together). "
                  "The release is item factors, so the table compares HR@10 with its std over "
                  "the seeds.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
