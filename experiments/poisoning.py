"""Poisoning (issue 11): HR@10 against the share of clients sending worst-case valid reports.

For each protocol (the DPLCF family, FMF-LDP) and each attack strategy of
:mod:`dprec.protocol.poisoning` (``untargeted``: all-ones DPLCF vectors / FMF-LDP preference
reversal; ``promote``: target items pushed into everyone's lists), a fraction of the users
(--fractions, default 0, 1, 5, 10%) send the attack's reports instead of their own: every
report is one the local mechanism could output, so the services accept it. Attackers and
targets are drawn from the stream (seed, "poison"), independent of the simulation's, and
the attackers of a smaller fraction are among those of a larger one; honest clients send
exactly the reports of the unpoisoned run (0% is that run, bit for bit, and is run once).
The server aggregates with the plain mean (the robust-aggregation hook's first aggregator).

Configs: --configs DIR (default configs/ml-100k) supplies ``<system>.toml`` for a system
when it exists (tuned configs), plus every ``dplcf*.toml`` there; otherwise the registry
defaults are used, and the JSON records which. Leave-one-out by the latest interaction,
HR@10 sampled (99 negatives) and full ranking, mean and std over --seeds. The "worst" line
of each system is, per fraction, the strategy with the lower sampled HR@10.
Writes results/poisoning/poisoning.json, poisoning.png (sampled HR@10) and
poisoning_full.png (full ranking). About a minute on ML-100K with 1 seed. Usage:
  .venv/bin/python experiments/poisoning.py [--dataset ml-100k] [--seeds 1]
      [--systems dplcf-sp dplcf-eb fmf-ldp] [--fractions 0 0.01 0.05 0.1]
      [--strategies untargeted promote] [--fmf-epochs N] [--out results/poisoning]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import dprec
from dprec.data.registry import load_dataset
from dprec.evaluation.plots import plot_metric_vs_eps
from dprec.evaluation.runner import Experiment, RunResult
from dprec.protocol.poisoning import STRATEGIES, Poisoning, poison
from dprec.random import derive_generator
from dprec.systems.registry import make_config, make_system, read_config

RANDOM_HR10 = 0.10


def configs_for(systems: list[str], folder: Path) -> dict[str, dict[str, Any]]:
    """{system: {"config": dataclass, "source": path or "defaults", "provenance": ...}}."""
    names = list(systems)
    if folder.is_dir():
        names += [p.stem for p in sorted(folder.glob("dplcf*.toml")) if p.stem not in names]
    out = {}
    for name in names:
        path = folder / f"{name}.toml"
        if path.is_file():
            cf = read_config(path)
            out[name] = {"config": make_config(cf.system, cf.params), "source": str(path),
                         "provenance": cf.provenance, "system": cf.system}
        else:
            out[name] = {"config": make_config(name), "source": "defaults (no tuned config)",
                         "provenance": None, "system": name}
    return out


def run_point(exp: Experiment, system: str, config: Any, poisoning: Poisoning
              ) -> tuple[RunResult, list[int]]:
    """One (system, poisoning) run over the experiment's seeds; the attackers per fold."""
    seeds = iter(exp.seeds)
    hooks = []

    def make() -> Any:
        model = make_system(system, None, config)
        hooks.append(poison(model, poisoning, derive_generator(next(seeds), "poison")))
        return model

    res = exp.run(make)
    attackers = [len(h.clients.attackers) if h.clients is not None else 0 for h in hooks]
    return res, attackers


def summary(res: RunResult) -> dict[str, Any]:
    return {"sampled": res.metrics["sampled"]["HR@10"], "full": res.metrics["full"]["HR@10"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--configs", type=Path, default=Path("configs/ml-100k"))
    ap.add_argument("--systems", nargs="+", default=["dplcf-sp", "dplcf-eb", "fmf-ldp"])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.01, 0.05, 0.1])
    ap.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    ap.add_argument("--targets", type=int, default=10, help="promoted items")
    ap.add_argument("--fillers", type=int, default=10,
                    help="DPLCF promote: popular items set beside the targets")
    ap.add_argument("--fmf-epochs", type=int, default=None,
                    help="override FMF-LDP's epochs (to bound the wall time)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("results/poisoning"))
    args = ap.parse_args()
    if 0.0 not in args.fractions:
        args.fractions = [0.0, *args.fractions]
    args.fractions = sorted(set(args.fractions))

    start = time.perf_counter()
    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    exp = Experiment(ds, range(args.seeds))
    popularity = exp.run(lambda: make_system("popularity"))
    systems = configs_for(args.systems, args.configs)
    doc: dict[str, Any] = {
        "experiment": "poisoning (issue 11): HR@10 vs the fraction of poisoned clients",
        "dataset": ds.summary(), "protocol": exp.protocol(), "seeds": list(exp.seeds),
        "fractions": args.fractions, "strategies": args.strategies,
        "attack": {"targets": args.targets, "fillers": args.fillers,
                   "aggregator": "mean", "generator": "(seed, 'poison')"},
        "metric": "HR@10, sampled (99 negatives) and full ranking",
        "references": {"random (sampled)": RANDOM_HR10,
                       "popularity (non-private, sampled)": summary(popularity)["sampled"],
                       "popularity (non-private, full)": summary(popularity)["full"]},
        "dprec_version": dprec.__version__, "systems": {},
    }
    for name, sc in systems.items():
        config = sc["config"]
        if args.fmf_epochs is not None and hasattr(config, "epochs"):
            config = replace(config, epochs=args.fmf_epochs)
        entry: dict[str, Any] = {"system": sc["system"], "config_source": sc["source"],
                                 "provenance": sc["provenance"], "strategies": {}}
        clean, _ = run_point(exp, sc["system"], config, Poisoning(0.0))
        entry["parameters"] = clean.parameters
        entry["privacy"] = clean.privacy
        for strategy in args.strategies:
            points = []
            for f in args.fractions:
                if f == 0.0:
                    res, attackers = clean, [0] * len(exp.seeds)
                else:
                    res, attackers = run_point(exp, sc["system"], config, Poisoning(
                        f, strategy, targets=args.targets, fillers=args.fillers))
                points.append({"fraction": f, "attackers": attackers, **summary(res),
                               "wall_time_s": res.wall_time_s})
                print(f"{name:10s} {strategy:10s} {100 * f:5.1f}%  HR@10 sampled "
                      f"{points[-1]['sampled']['mean']:.4f}  full "
                      f"{points[-1]['full']['mean']:.4f}  ({res.wall_time_s:.1f} s)",
                      flush=True)
            entry["strategies"][strategy] = points
        entry["worst"] = [
            {"fraction": f, **min(
                ({"strategy": s, **entry["strategies"][s][i]} for s in args.strategies),
                key=lambda p: p["sampled"]["mean"])}
            for i, f in enumerate(args.fractions)]
        doc["systems"][name] = entry
    doc["wall_time_s"] = time.perf_counter() - start

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "poisoning.json").write_text(json.dumps(doc, indent=2, default=float))
    for protocol, png in (("sampled", "poisoning.png"), ("full", "poisoning_full.png")):
        sweep = {f"{name} ({s})": [{"fraction": 100 * p["fraction"],
                                    "mean": p[protocol]["mean"], "std": p[protocol]["std"]}
                                   for p in e["strategies"][s]]
                 for name, e in doc["systems"].items() for s in args.strategies}
        refs = {"popularity (non-private)": summary(popularity)[protocol]["mean"]}
        if protocol == "sampled":
            refs["random"] = RANDOM_HR10
        plot_metric_vs_eps(sweep, args.out / png,
                           f"{ds.name}: HR@10 under poisoning ({len(exp.seeds)} seed(s))",
                           ylabel=f"HR@10 ({protocol})", references=refs,
                           xlabel="poisoned clients (%)", x="fraction")
    print_table(doc)
    print(f"saved {args.out} ({doc['wall_time_s']:.0f} s)")


def print_table(doc: dict[str, Any]) -> None:
    fr = doc["fractions"]
    print("\nHR@10 sampled (full) vs poisoned fraction")
    print(f"{'system':10s} {'strategy':10s} " + " ".join(f"{100 * f:>15.0f}%" for f in fr))
    for name, e in doc["systems"].items():
        for s, pts in e["strategies"].items():
            print(f"{name:10s} {s:10s} " + " ".join(
                f"{p['sampled']['mean']:8.4f} ({p['full']['mean']:.4f})" for p in pts))


if __name__ == "__main__":
    main()
