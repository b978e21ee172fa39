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
poisoning_full.png (full ranking). About a minute on ML-100K with 1 seed.

Secure sum (issue 23 §2; --secure-systems, default dp-pop with aggregation=secure): a
malicious client sends ANY element of Z_q^d (:mod:`dprec.protocol.sum_poisoning`: promote,
k-hot, huge, reverse, random), which neither the proxy nor the server can check. Fractions
--secure-fractions (default 0.1%, 1%, 5%, 10%; 0.1% of ML-100K's 943 users is one client).
Besides HR@10 each point reports how the targets fare in every user's own top-10 (the
published list minus the user's training items): the mean number of targets in it and the
targets that are in the top-10 of every user who does not hold them. --systems with no name
runs the secure sum alone; --table writes its Markdown table (command and date on top):
  .venv/bin/python experiments/poisoning.py --systems --seeds 3 --out results/poisoning_secure
      --table docs/results/secure_sum_poisoning.md
Usage:
  .venv/bin/python experiments/poisoning.py [--dataset ml-100k] [--seeds 1]
      [--systems dplcf-sp dplcf-eb fmf-ldp] [--fractions 0 0.01 0.05 0.1]
      [--strategies untargeted promote] [--fmf-epochs N] [--fmf-cells assigned]
      [--out results/poisoning]
      [--secure-systems dp-pop] [--secure-fractions 0.001 0.01 0.05 0.1]
      [--secure-strategies promote k-hot huge reverse random out-of-range]
      [--secure-validity none]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import dprec
from dprec.data.registry import load_dataset
from dprec.evaluation.plots import plot_metric_vs_eps
from dprec.evaluation.provenance import run_command, utc_date
from dprec.evaluation.runner import Experiment, RunResult
from dprec.protocol.aggregation import make_aggregator
from dprec.protocol.poisoning import STRATEGIES, Poisoning, poison
from dprec.protocol.sum_poisoning import SUM_STRATEGIES, SumPoisoning, poison_sum
from dprec.random import derive_generator
from dprec.selection import top_k
from dprec.systems.dplcf.bit_screens import BitLaw, ones_range, screen_threshold
from dprec.systems.dplcf.defences import DPLCF_AGGREGATORS
from dprec.systems.fmf.defences import FMF_AGGREGATORS
from dprec.systems.registry import make_config, make_system, read_config

RANDOM_HR10 = 0.10

AGGREGATORS = {**DPLCF_AGGREGATORS, **FMF_AGGREGATORS}
"""The aggregators of the attacked systems, by name (each system's own table)."""


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


def with_defences(systems: dict[str, dict[str, Any]], defences: list[str] | None
                  ) -> dict[str, dict[str, Any]]:
    """Each system once per ``defences`` entry that applies to it (issue 26), named
    ``system [defence]``; all of them as they are when ``defences`` is None. FMF-LDP
    (a config with ``aggregator``): every entry :func:`make_aggregator` reads sets the
    server's aggregator."""
    if defences is None:
        return systems
    out: dict[str, dict[str, Any]] = {}
    for name, sc in systems.items():
        config = sc["config"]
        if hasattr(config, "aggregator"):
            for d in defences:
                if d.partition(":")[0] in AGGREGATORS and defence_applies(config, d):
                    out[f"{name} [{d}]"] = {**sc, "config": replace(config, aggregator=d),
                                            "defence": d}
    return out


def defence_applies(config: Any, defence: str) -> bool:
    """DPLCF (a config with ``flip``) takes mean and the ``dplcf-*`` upload screens; the
    other protocols every aggregator but those."""
    dplcf = defence.startswith("dplcf-")
    return defence.partition(":")[0] == "mean" or dplcf == hasattr(config, "flip")


def dplcf_adaptive(config: Any, n_users: int, n_items: int) -> dict[str, Any] | None:
    """The attack shape that passes DPLCF's defence ``config.aggregator`` (issue 26,
    adaptive attacks; :class:`Poisoning`'s ``ones_range`` and ``screen``), from the public
    parameters the server uses; None for an aggregator that is not a DPLCF screen."""
    spec = str(getattr(config, "aggregator", "mean"))
    if not hasattr(config, "flip") or not spec.startswith("dplcf-"):
        return None
    agg = make_aggregator(spec, AGGREGATORS)
    mech = config.mechanism()
    p, q = (1.0, 0.0) if mech is None else (mech.p, mech.q)
    cap = n_items if config.history_cap is None else min(config.history_cap, n_items)
    law = BitLaw(n_items, p, q, cap)
    shape: dict[str, Any] = {}
    if spec.startswith(("dplcf-range",)):
        bounds = ones_range(law, agg.rate)  # type: ignore[attr-defined]
        shape["ones_range"] = (bounds.low, bounds.high)
    if "screen" in spec:
        z = agg.z  # type: ignore[attr-defined]
        shape["screen"] = (z, screen_threshold(n_users, n_items, p, z, agg.rate))  # type: ignore[attr-defined]
    return shape


def removed_uploads(res: RunResult) -> list[int]:
    """Uploads the DPLCF screens removed in each fit (refused + dropped)."""
    return [int(d.get("uploads_refused", 0)) + int(d.get("uploads_dropped", 0))  # type: ignore[call-overload]
            for d in res.diagnostics]


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


def run_adaptive(exp: Experiment, name: str, system: str, config: Any, entry: dict[str, Any],
                 args: argparse.Namespace, n_users: int, n_items: int, clean: RunResult
                 ) -> None:
    """DPLCF under a ``dplcf-*`` defence: the uploads it removes with no attacker (its false
    positives), and every strategy again shaped to pass it (``entry["adaptive"]``)."""
    shape = dplcf_adaptive(config, n_users, n_items)
    if shape is None:
        return
    entry["removed_at_0"] = removed_uploads(clean)
    entry["adaptive_shape"] = {k: list(v) for k, v in shape.items()}
    entry["adaptive"] = {}
    for strategy in args.strategies:
        points = []
        for f in args.fractions:
            if f == 0.0:
                res, attackers = clean, [0] * len(exp.seeds)
            else:
                res, attackers = run_point(exp, system, config, Poisoning(
                    f, strategy, targets=args.targets, fillers=args.fillers, **shape))
            points.append({"fraction": f, "attackers": attackers, **summary(res),
                           "removed": removed_uploads(res), "wall_time_s": res.wall_time_s})
            print(f"{name:10s} {strategy:10s} {100 * f:5.1f}%  adaptive  HR@10 sampled "
                  f"{points[-1]['sampled']['mean']:.4f}  removed {points[-1]['removed']}",
                  flush=True)
        entry["adaptive"][strategy] = points


def summary(res: RunResult) -> dict[str, Any]:
    return {"sampled": res.metrics["sampled"]["HR@10"], "full": res.metrics["full"]["HR@10"]}


def targets_in_top10(model: Any, train: sp.csr_matrix, targets: np.ndarray | None
                     ) -> dict[str, float]:
    """How the promoted items fare in each user's top-10 (the model's scores, the user's
    training items removed, ties by :func:`top_k`): ``mean`` targets per user's top-10 and
    ``everyone``, the targets in the top-10 of every user who does not hold them."""
    if targets is None or not len(targets):
        return {"mean": 0.0, "everyone": 0}
    train = sp.csr_matrix(train)
    scores = np.array(model.score(train), np.float64)
    rows, cols = train.nonzero()
    scores[rows, cols] = -np.inf
    top = top_k(scores, 10)
    hit = top[:, :, None] == np.asarray(targets)[None, None, :]  # users x 10 x targets
    in_top = hit.any(axis=1)
    eligible = np.asarray(train[:, targets].todense()) == 0
    everyone = int((in_top | ~eligible).all(axis=0).sum())
    return {"mean": float(hit.any(axis=2).sum(axis=1).mean()), "everyone": everyone}


def secure_point(exp: Experiment, system: str, config: Any, poisoning: SumPoisoning
                 ) -> tuple[dict[str, Any], RunResult]:
    """One (secure-sum system, poisoning) run over the experiment's seeds: HR@10 and the
    targets' reach (:func:`targets_in_top10`, mean over seeds)."""
    seeds = iter(exp.seeds)
    fitted: list[tuple[int, Any, Any]] = []

    def make() -> Any:
        seed = next(seeds)
        model = make_system(system, None, config)
        fitted.append((seed, model, poison_sum(model, poisoning, derive_generator(seed,
                                                                                 "poison"))))
        return model

    res = exp.run(make)
    reach = []
    for seed, model, hook in fitted:
        fold = exp.folds(seed)[0][0]
        clients = hook.clients
        reach.append(targets_in_top10(model, exp.evaluator.train_matrix(fold, model),
                                      None if clients is None else clients.targets))
    return {"fraction": poisoning.fraction,
            "attackers": [len(h.clients.attackers) if h.clients is not None else 0
                          for _, _, h in fitted],
            **summary(res),
            "targets_in_top10": float(np.mean([r["mean"] for r in reach])),
            "targets_in_everyones_top10": float(np.mean([r["everyone"] for r in reach])),
            "wall_time_s": res.wall_time_s}, res


def run_secure(exp: Experiment, args: argparse.Namespace) -> dict[str, Any]:
    """The secure-sum systems under each malicious-client strategy (module docstring)."""
    out: dict[str, Any] = {}
    for name, sc in configs_for(args.secure_systems, args.configs).items():
        if name not in args.secure_systems:
            continue
        config = replace(sc["config"], aggregation="secure", validity=args.secure_validity)
        clean, res = secure_point(exp, sc["system"], config, SumPoisoning(0.0))
        entry: dict[str, Any] = {"system": sc["system"], "config_source": sc["source"],
                                 "parameters": res.parameters,
                                 "privacy_true": (res.privacy or {}).get("true"),
                                 "ring": {k: (res.privacy or {}).get("secure_sum", {}).get(k)
                                          for k in ("q", "q_bits", "expected_clients")},
                                 "clean": clean, "strategies": {}}
        print(f"{name:10s} {'clean':10s}   0.0%  HR@10 sampled {clean['sampled']['mean']:.4f}"
              f"  full {clean['full']['mean']:.4f}", flush=True)
        for strategy in args.secure_strategies:
            points = []
            for f in args.secure_fractions:
                pt, _ = secure_point(exp, sc["system"], config, SumPoisoning(
                    f, strategy, targets=args.targets))
                points.append(pt)
                print(f"{name:10s} {strategy:10s} {100 * f:5.1f}%  HR@10 sampled "
                      f"{pt['sampled']['mean']:.4f}  full {pt['full']['mean']:.4f}  targets "
                      f"in top-10 {pt['targets_in_top10']:.2f} (everyone's: "
                      f"{pt['targets_in_everyones_top10']:.1f})  ({pt['wall_time_s']:.1f} s)",
                      flush=True)
            entry["strategies"][strategy] = points
        out[name] = entry
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--configs", type=Path, default=Path("configs/ml-100k"))
    ap.add_argument("--systems", nargs="*", default=["dplcf-sp", "dplcf-eb", "fmf-ldp"])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.01, 0.05, 0.1])
    ap.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    ap.add_argument("--targets", type=int, default=10, help="promoted items")
    ap.add_argument("--fillers", type=int, default=10,
                    help="DPLCF promote: popular items set beside the targets")
    ap.add_argument("--fmf-epochs", type=int, default=None,
                    help="override FMF-LDP's epochs (to bound the wall time)")
    ap.add_argument("--fmf-cells", choices=("chosen", "assigned"), default=None,
                    help="FMF-LDP cell rule (issue 26 §1; default: the config's, chosen)")
    ap.add_argument("--fmf-false-inputs", action="store_true",
                    help="FMF-LDP attackers run the binary mechanism on false inputs "
                         "(issue 26: the attack no aggregator can tell from honest clients)")
    ap.add_argument("--defences", nargs="+", default=None,
                    help="issue 26: run each system once per defence that applies to it; "
                         "fmf-ldp: the server's aggregator (mean, trimmed[:FRAC], "
                         "median-of-means[:GROUPS]); the DPLCF family: dplcf-range[:RATE], "
                         "dplcf-screen[:Z], dplcf-range+screen[:Z], each also run against "
                         "the attacks shaped to pass it (adaptive); rows are named "
                         "'system [defence]'")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("results/poisoning"))
    ap.add_argument("--secure-systems", nargs="*", default=["dp-pop"],
                    help="secure-sum systems (aggregation=secure)")
    ap.add_argument("--secure-fractions", type=float, nargs="+",
                    default=[0.001, 0.01, 0.05, 0.1])
    ap.add_argument("--secure-strategies", nargs="+", choices=SUM_STRATEGIES,
                    default=list(SUM_STRATEGIES))
    ap.add_argument("--secure-validity", choices=("none", "prio3"), default="none",
                    help="the in-process validity check (none: the unchecked damage, as "
                         "recorded; prio3 refuses what the proof would, and with the default "
                         "min_honest = n a refused attacker leaves no release: "
                         "experiments/prio3_target.py measures the check)")
    ap.add_argument("--table", type=Path, default=None,
                    help="write the secure-sum table as Markdown to this file")
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
                   "aggregator": "mean", "generator": "(seed, 'poison')",
                   "fmf_false_inputs": args.fmf_false_inputs},
        "metric": "HR@10, sampled (99 negatives) and full ranking",
        "references": {"random (sampled)": RANDOM_HR10,
                       "popularity (non-private, sampled)": summary(popularity)["sampled"],
                       "popularity (non-private, full)": summary(popularity)["full"]},
        "dprec_version": dprec.__version__, "systems": {},
    }
    for name, sc in with_defences(systems, args.defences).items():
        config = sc["config"]
        if args.fmf_epochs is not None and hasattr(config, "epochs"):
            config = replace(config, epochs=args.fmf_epochs)
        if args.fmf_cells is not None and hasattr(config, "cells"):
            config = replace(config, cells=args.fmf_cells)
        entry: dict[str, Any] = {"system": sc["system"], "config_source": sc["source"],
                                 "provenance": sc["provenance"], "strategies": {},
                                 "defence": sc.get("defence")}
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
                        f, strategy, targets=args.targets, fillers=args.fillers,
                        false_inputs=args.fmf_false_inputs and hasattr(config, "cells")))
                points.append({"fraction": f, "attackers": attackers, **summary(res),
                               "removed": removed_uploads(res),
                               "wall_time_s": res.wall_time_s})
                print(f"{name:10s} {strategy:10s} {100 * f:5.1f}%  HR@10 sampled "
                      f"{points[-1]['sampled']['mean']:.4f}  full "
                      f"{points[-1]['full']['mean']:.4f}  ({res.wall_time_s:.1f} s)",
                      flush=True)
            entry["strategies"][strategy] = points
        run_adaptive(exp, name, sc["system"], config, entry, args, ds.n_users, ds.n_items,
                     clean)
        entry["worst"] = [
            {"fraction": f, **min(
                ({"strategy": s, **entry["strategies"][s][i]} for s in args.strategies),
                key=lambda p: p["sampled"]["mean"])}
            for i, f in enumerate(args.fractions)]
        doc["systems"][name] = entry
    doc["secure_sum"] = {
        "attack": "malicious clients send any element of Z_q^d (dprec.protocol.sum_poisoning)",
        "targets": args.targets, "generator": "(seed, 'poison')",
        "validity": args.secure_validity,
        "systems": run_secure(exp, args)}
    doc["wall_time_s"] = time.perf_counter() - start

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "poisoning.json").write_text(json.dumps(doc, indent=2, default=float))
    for protocol, png in (("sampled", "poisoning.png"), ("full", "poisoning_full.png")):
        if not doc["systems"]:
            break
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
    if args.table is not None:
        command = run_command("experiments/poisoning.py")
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(secure_table_markdown(doc, command))
    print(f"saved {args.out} ({doc['wall_time_s']:.0f} s)")


def secure_table_markdown(doc: dict[str, Any], command: str) -> str:
    """The secure-sum part of ``doc`` as Markdown: per system, HR@10 (sampled, full) and the
    targets' reach for every strategy and fraction, with the command and the date."""
    date = utc_date()
    ds = doc["dataset"]
    lines = [f"# Malicious clients of the secure sum: {ds.get('name', '?')}, "
             f"{len(doc['seeds'])} seeds", "", f"Command: `{command}`  ", f"Date: {date}, "
             f"dprec {doc['dprec_version']}", ""]
    for name, e in doc["secure_sum"]["systems"].items():
        sec = (e.get("privacy_true") or {})
        c = e["clean"]
        pts = next(iter(e["strategies"].values()), [])
        heads = [f"{100 * p['fraction']:g}% ({p['attackers'][0]} client"
                 f"{'s' if p['attackers'][0] != 1 else ''})" for p in pts]
        lines += [f"## {name} (aggregation=secure), per-user ε {sec.get('epsilon', '?')} "
                  f"at δ {sec.get('delta', '?')}", "",
                  f"q = {e.get('ring', {}).get('q', '?')}, clients n = "
                  f"{e.get('ring', {}).get('expected_clients', '?')}. "
                  f"No attacker: sampled HR@10 {c['sampled']['mean']:.3f} ± "
                  f"{c['sampled']['std']:.3f}, full {c['full']['mean']:.4f}.", "",
                  "Sampled HR@10 / full HR@10 (mean over seeds):", "",
                  "| strategy | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(heads)]
        for s, points in e["strategies"].items():
            lines.append(f"| {s} | " + " | ".join(
                f"{p['sampled']['mean']:.3f} / {p['full']['mean']:.4f}" for p in points) + " |")
        lines += ["", f"Targets ({doc['secure_sum']['targets']} items) in a user's top-10, "
                  "mean over users (in brackets: targets in the top-10 of every user who "
                  "does not hold them):", "",
                  "| strategy | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(heads)]
        for s, points in e["strategies"].items():
            if s in ("promote", "k-hot", "huge"):
                lines.append(f"| {s} | " + " | ".join(
                    f"{p['targets_in_top10']:.2f} ({p['targets_in_everyones_top10']:.1f})"
                    for p in points) + " |")
        lines.append("")
    lines += ["Strategies (`dprec.protocol.sum_poisoning`): promote, the coalition adds n (the "
              "enrolled clients) to each target; k-hot, each attacker sends a vector an honest "
              "client could send, 1 on each target; huge, each attacker adds 10^9 to each "
              "target, which the ring reduces mod q; reverse, the coalition adds -2x the "
              "honest noisy sum (full knowledge), so the published counts are negated; "
              "random, a uniform vector mod q; out-of-range, q/2 - 1 on every coordinate. "
              "In-process validity check: " + str(doc["secure_sum"].get("validity", "none"))
              + ". Interpretation: docs/secure_sum.md, "
              "\"Malicious clients\".", ""]
    return "\n".join(lines)


def print_table(doc: dict[str, Any]) -> None:
    fr = doc["fractions"]
    if doc["systems"]:
        print("\nHR@10 sampled (full) vs poisoned fraction")
        print(f"{'system':10s} {'strategy':10s} " + " ".join(f"{100 * f:>15.0f}%" for f in fr))
    for name, e in doc["systems"].items():
        for s, pts in e["strategies"].items():
            print(f"{name:10s} {s:10s} " + " ".join(
                f"{p['sampled']['mean']:8.4f} ({p['full']['mean']:.4f})" for p in pts))
    secure = doc.get("secure_sum", {}).get("systems", {})
    for name, e in secure.items():
        print(f"\n{name} (secure sum), clean HR@10 {e['clean']['sampled']['mean']:.4f}: "
              "HR@10 sampled (full) / targets in a user's top-10 (in everyone's)")
        for s, pts in e["strategies"].items():
            print(f"{name:10s} {s:10s} " + " ".join(
                f"{100 * p['fraction']:.1f}%: {p['sampled']['mean']:.4f} "
                f"({p['full']['mean']:.4f}) / {p['targets_in_top10']:.2f} "
                f"({p['targets_in_everyones_top10']:.1f})" for p in pts))


if __name__ == "__main__":
    main()
