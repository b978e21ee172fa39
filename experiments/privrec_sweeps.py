"""PrivRec / DP-PrivRec figures (seed 002) on the PrivRec protocol.

All runs use dprec's one evaluation (80/20 user split, each test user fine-tunes on half of
their ratings on the device, every held-out positive ranked against all never-interacted
items; UserRankingEvaluator), and the settings of ``--config`` (PrivRec's tuned TOML; registry
defaults without it) except the swept setting:

- ``fig2``: Hits@20 against E1 (rounds; one run with a learning curve), E2 (local epochs)
  and M (clients per round) for PrivRec — the Figure 2 analogue;
- ``fig34``: Hits@K (K = 5..30) of DP-PrivRec against PrivRec, DP-PrivRec at several noise
  multipliers z with the per-user eps of each run (RDP accountant, sampled without
  replacement) and the paper's own accounting of the same run — Figures 3/4;
- ``eps``: eps against q = M/N for delta = 1e-8 / 1e-6 / 1e-4 (z = 1, 1000 rounds,
  N = 4800): the paper's Table 3, our reproduction of its accounting, the correct RDP value
  and the PLD value under Poisson sampling (no training; seconds).

Writes results/privrec/{privrec_sweeps.json, fig2_hyper.png, fig34_dp.png, eps_vs_q.png};
a run of some parts keeps the other parts already in privrec_sweeps.json.
Usage:
  .venv/bin/python experiments/privrec_sweeps.py [--parts fig2 fig34 eps] [--seeds 1]
      [--config configs/ml-100k-privrec/privrec.toml]
      [--dp-config configs/ml-100k-privrec/dp-privrec.toml]
      [--rounds 40] [--e1 5 20 40 60 80 100] [--e2 1 2 5] [--m 5 10 20 30 40]
      [--z 0.5 1 2] [--out results/privrec]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.errors import DprecError  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import UserSplit  # noqa: E402
from dprec.evaluation.user_ranking import UserRankingEvaluator  # noqa: E402
from dprec.systems.privrec.accounting import PRIVREC_DELTAS, privrec_table  # noqa: E402
from dprec.systems.registry import make_system, read_config  # noqa: E402

KS = (5, 10, 20, 30)
BASE: dict[str, object] = {}
"""PrivRec's settings from ``--config`` (its tuned TOML), under every swept setting."""
DP_BASE: dict[str, object] = {}
"""DP-PrivRec's settings from ``--dp-config``; without it, PrivRec's (``BASE``)."""
SWEPT = {"noise_multiplier", "clients_per_round", "initial_clip", "target_quantile",
         "budget_balance", "clip_lr", "clip_update", "delta", "rounds"}


def _system(name: str, params: dict[str, object]) -> object:
    base = DP_BASE if name == "dp-privrec" and DP_BASE else BASE
    return make_system(name, {**base, **params})


def _settings(path: Path, system: str, ap: argparse.ArgumentParser) -> dict[str, object]:
    cf = read_config(path)
    if cf.system != system:
        ap.error(f"{path} is for {cf.system}, not {system}")
    return {k: v for k, v in cf.params.items() if k not in SWEPT}


def _hits(res: object, k: int = 20) -> dict[str, float]:
    m = res.metrics["full"][f"HR@{k}"]  # type: ignore[attr-defined]
    return {"mean": m["mean"], "std": m["std"]}


def fig2(exp: Experiment, rounds: int, e1: list[int], e2: list[int], ms: list[int],
         out: Path) -> dict[str, object]:
    doc: dict[str, object] = {}
    t = time.perf_counter()
    every = min(e1)
    res = exp.run(lambda: _system("privrec", {"rounds": max(e1)}), curve_every=every)
    points = []
    for per_seed in res.curves or []:
        for p in per_seed:
            points.append((p["round"], p["metrics"]["full"]["HR@20"]))
    by_round: dict[int, list[float]] = {}
    for r, v in points:
        by_round.setdefault(r, []).append(v)
    doc["E1"] = [{"value": r, "hits20": sum(v) / len(v)} for r, v in sorted(by_round.items())
                 if r in e1 or r == max(e1)]
    print(f"E1 curve in {time.perf_counter() - t:.0f}s", flush=True)
    for key, name, values in (("E2", "local_epochs", e2), ("M", "clients_per_round", ms)):
        rows = []
        for v in values:
            t = time.perf_counter()
            r = exp.run(lambda n=name, v=v: _system("privrec", {"rounds": rounds, n: v}))
            rows.append({"value": v, "hits20": _hits(r)["mean"], "std": _hits(r)["std"]})
            print(f"{key}={v}: Hits@20 {rows[-1]['hits20']:.4f} "
                  f"({time.perf_counter() - t:.0f}s)", flush=True)
        doc[key] = rows
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
    for ax, key, label in zip(axes, ("E1", "E2", "M"),
                              ("E1 (rounds; E2, M defaults)", f"E2 (local epochs; E1={rounds})",
                               f"M (clients per round; E1={rounds})"), strict=True):
        rows = doc[key]  # type: ignore[index]
        ax.plot([r["value"] for r in rows], [r["hits20"] for r in rows], "o-")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Hits@20 (PrivRec)")
    fig.suptitle(f"PrivRec hyper-parameters on {exp.dataset.name} (Figure 2 analogue)")
    fig.tight_layout()
    fig.savefig(out / "fig2_hyper.png", dpi=120)
    plt.close(fig)
    return doc


def fig34(exp: Experiment, rounds: int, zs: list[float], out: Path) -> dict[str, object]:
    rows = []
    t = time.perf_counter()
    base = exp.run(lambda: _system("privrec", {"rounds": rounds}))
    rows.append({"system": "privrec", "z": None,
                 "hits": {k: base.metrics["full"][f"HR@{k}"]["mean"] for k in KS},
                 "user_epsilon": None, "paper_epsilon": None})
    print(f"privrec ({time.perf_counter() - t:.0f}s)", flush=True)
    for z in zs:
        t = time.perf_counter()
        try:
            r = exp.run(lambda z=z: _system(
                "dp-privrec", {"rounds": rounds, "noise_multiplier": z, "clients_per_round": 30}))
        except DprecError as e:
            rows.append({"system": "dp-privrec", "z": z, "failed": str(e)})
            print(f"dp-privrec z={z} failed: {e}", flush=True)
            continue
        p = r.privacy or {}
        rows.append({"system": "dp-privrec", "z": z,
                     "hits": {k: r.metrics["full"][f"HR@{k}"]["mean"] for k in KS},
                     "user_epsilon": p["true"]["epsilon"], "delta": p["true"]["delta"],
                     "paper_epsilon": p["claimed"]["epsilon"],
                     "clip_bound_last": r.diagnostics[0].get("clip_bound", {}).get("last")})
        print(f"dp-privrec z={z}: Hits@20 {rows[-1]['hits'][20]:.4f}, "
              f"eps {p['true']['epsilon']:.3g} (paper's accounting {p['claimed']['epsilon']:.3g}) "
              f"({time.perf_counter() - t:.0f}s)", flush=True)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for row in rows:
        if "failed" in row:
            continue
        label = ("PrivRec" if row["z"] is None else
                 f"DP-PrivRec z={row['z']:g} (ε={row['user_epsilon']:.2g}, "
                 f"paper's ε={row['paper_epsilon']:.2g})")
        ax.plot(KS, [row["hits"][k] for k in KS], "o-" if row["z"] is None else "s--",
                label=label)
    ax.set_xlabel("K")
    ax.set_ylabel("Hits@K")
    ax.set_title(f"DP-PrivRec vs PrivRec on {exp.dataset.name}, M=30, E1={rounds}, δ=1e-6")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig34_dp.png", dpi=120)
    plt.close(fig)
    return {"rows": rows}


def eps_vs_q(out: Path) -> list[dict[str, float]]:
    rows = privrec_table()
    fig, axes = plt.subplots(1, len(PRIVREC_DELTAS), figsize=(12, 3.6), sharey=True)
    for ax, delta in zip(axes, PRIVREC_DELTAS, strict=True):
        sub = [r for r in rows if r["delta"] == delta]
        qs = [r["q"] * 4800 for r in sub]
        for key, style, label in (("paper", "o-", "paper (Table 3)"),
                                  ("reproduced", "x:", "paper's accounting reproduced"),
                                  ("rdp_without_replacement", "s-", "correct: RDP, without "
                                                                    "replacement"),
                                  ("pld_poisson", "^--", "PLD, Poisson sampling")):
            ax.plot(qs, [r[key] for r in sub], style, label=label)
        ax.set_title(f"δ = {delta:g}")
        ax.set_xlabel("M (q = M / 4800)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ε after 1000 rounds, z = 1")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "eps_vs_q.png", dpi=120)
    plt.close(fig)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--parts", nargs="+", default=["fig2", "fig34", "eps"],
                    choices=["fig2", "fig34", "eps"])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=40, help="E1 for the E2, M and DP runs")
    ap.add_argument("--e1", type=int, nargs="+", default=[10, 20, 40, 60, 80, 100])
    ap.add_argument("--e2", type=int, nargs="+", default=[1, 2, 5])
    ap.add_argument("--m", type=int, nargs="+", default=[5, 10, 20, 30, 40])
    ap.add_argument("--z", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--config", type=Path, default=None,
                    help="PrivRec's TOML (e.g. tuned); its settings apply to every run")
    ap.add_argument("--dp-config", type=Path, default=None,
                    help="DP-PrivRec's TOML for the fig34 DP runs (default: --config's)")
    ap.add_argument("--out", type=Path, default=Path("results/privrec"))
    args = ap.parse_args()
    if args.config is not None:
        BASE.update(_settings(args.config, "privrec", ap))
    if args.dp_config is not None:
        DP_BASE.update(_settings(args.dp_config, "dp-privrec", ap))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "privrec_sweeps.json"
    doc: dict[str, object] = json.loads(path.read_text()) if path.exists() else {}
    doc["dprec_version"] = dprec.__version__
    doc.setdefault("args", {})[",".join(args.parts)] = {  # type: ignore[index]
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    if "eps" in args.parts:
        doc["eps_vs_q"] = eps_vs_q(args.out)
    if {"fig2", "fig34"} & set(args.parts):
        ds = load_dataset(args.dataset, data_dir=args.data_dir)
        exp = Experiment(ds, range(args.seeds), UserSplit(0.2), UserRankingEvaluator())
        if "fig2" in args.parts:
            doc["fig2"] = fig2(exp, args.rounds, args.e1, args.e2, args.m, args.out)
        if "fig34" in args.parts:
            doc["fig34"] = fig34(exp, args.rounds, args.z, args.out)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str))
    tmp.replace(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
