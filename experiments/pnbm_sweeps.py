"""DP-PNBM sweeps (seed 004, Figures 3-5 analogues): RMSE against eps and against Nk.

k-fold cross-validation of the ratings (dprec.evaluation: KFoldSplit, RatingEvaluator; the
folds are drawn once and shared by every run), predictions clipped to [1, 5]:

- Figure 3 analogue: DPSGD-PNBM (rating-level eps claimed) and DPSGD-MF over --epsilons;
  the non-private PNBM, PCC and COS item-kNN (k = --knn-k, the paper's 900) as lines.
- Figure 4 analogue: DPPS-PNBM and DPPS-MF over user-level eps = --epsilons, with the
  paper's "x x tau" axis (x = eps / tau) on top; the same lines.
- Figure 5 analogue: RMSE against Nk at eps = --nk-epsilon for both DP-PNBMs, and PCC/COS
  with k = Nk.

Every system runs with its registry defaults (the paper's grid where it has one) except the
names given here; nothing is tuned per eps, and nothing is tuned on the test folds. Systems
not registered (dpsgd-mf, dpps-mf, pcc-knn, cos-knn come from other modules) are skipped with
a note. Each point records the claimed and the true epsilon of its privacy report.
Writes results/pnbm/pnbm_sweeps.{json} and fig3_dpsgd.png, fig4_dpps.png, fig5_nk.png.
Reduced defaults (about 6 min on 2 shared cores): 6 eps values, 5 Nk values, DPPS-PNBM with
its default K = 50 SGLD steps. Usage:
  .venv/bin/python experiments/pnbm_sweeps.py [--folds 5] [--epsilons 0.1 0.3 1 3 10 20]
      [--neighbours 20 100 300 500 1000] [--nk-epsilon 1] [--out results/pnbm]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.evaluation.rating import RatingEvaluator  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import KFoldSplit  # noqa: E402
from dprec.systems.registry import SYSTEMS, make_system  # noqa: E402

DPSGD = ("dpsgd-pnbm", "dpsgd-mf")
DPPS = ("dpps-pnbm", "dpps-mf")
LINES = ("pnbm", "pcc-knn", "cos-knn")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.3, 1, 3, 10, 20])
    ap.add_argument("--neighbours", type=int, nargs="+", default=[20, 100, 300, 500, 1000])
    ap.add_argument("--nk-epsilon", type=float, default=1.0)
    ap.add_argument("--knn-k", type=int, default=900, help="PCC/COS neighbours (paper: 900)")
    ap.add_argument("--out", type=Path, default=Path("results/pnbm"))
    args = ap.parse_args()

    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    exp = Experiment(ds, [args.seed], KFoldSplit(args.folds), RatingEvaluator())
    skipped = sorted({*DPSGD, *DPPS, *LINES} - set(SYSTEMS))
    for name in skipped:
        print(f"note: {name} is not registered; skipped")
    runs: list[dict[str, object]] = []

    def run(name: str, params: dict[str, object], **tags: object) -> dict[str, object] | None:
        if name not in SYSTEMS:
            return None
        start = time.perf_counter()
        res = exp.run(_maker(name, params))
        rmse = res.metrics["rating"]["RMSE"]
        p = res.privacy or {}
        point = {"system": name, "params": params, **tags, "RMSE": rmse,
                 "MAE": res.metrics["rating"]["MAE"],
                 "epsilon_claimed": (p.get("claimed") or {}).get("epsilon"),
                 "epsilon_true": (p.get("true") or {}).get("epsilon"),
                 "level_true": (p.get("true") or {}).get("level"),
                 "parameters": res.parameters, "wall_time_s": time.perf_counter() - start}
        runs.append(point)
        eps = f" eps={params['epsilon']:g}" if "epsilon" in params else ""
        print(f"  {name}{eps} {dict((k, v) for k, v in params.items() if k != 'epsilon')}: "
              f"RMSE {rmse['mean']:.4f} ± {rmse['std']:.4f} "
              f"(true eps {point['epsilon_true']}, {point['wall_time_s']:.0f} s)", flush=True)
        return point

    print(f"{ds.name}: {args.folds}-fold CV, seed {args.seed}")
    lines = {n: run(n, {"k": args.knn_k} if n.endswith("-knn") else {}, sweep="lines")
             for n in LINES}
    for name in (*DPSGD, *DPPS):
        for eps in args.epsilons:
            run(name, {"epsilon": eps}, sweep="epsilon")
    for nk in args.neighbours:
        for name in ("dpsgd-pnbm", "dpps-pnbm"):
            run(name, {"epsilon": args.nk_epsilon, "neighbours": nk}, sweep="neighbours",
                neighbours=nk)
        for name in ("pcc-knn", "cos-knn"):
            run(name, {"k": nk}, sweep="neighbours", neighbours=nk)

    args.out.mkdir(parents=True, exist_ok=True)
    doc = {
        "experiment": "pnbm_sweeps (seed 004 Figures 3-5 analogues)",
        "dataset": ds.summary(), "protocol": exp.protocol(), "seed": args.seed,
        "epsilons": args.epsilons, "neighbours": args.neighbours,
        "nk_epsilon": args.nk_epsilon, "knn_k": args.knn_k, "skipped": skipped,
        "dprec_version": dprec.__version__, "runs": runs,
        "tau": SYSTEMS["dpps-pnbm"].default_config().tau,
    }
    (args.out / "pnbm_sweeps.json").write_text(json.dumps(doc, indent=2))
    plot_eps(runs, lines, DPSGD, "rating-level ε (claimed)", args.out / "fig3_dpsgd.png",
             f"{ds.name}: DPSGD (Fig. 3 analogue), {args.folds}-fold CV", None)
    plot_eps(runs, lines, DPPS, "user-level ε (claimed)", args.out / "fig4_dpps.png",
             f"{ds.name}: DPPS (Fig. 4 analogue), {args.folds}-fold CV", doc["tau"])
    plot_nk(runs, args.out / "fig5_nk.png",
            f"{ds.name}: RMSE vs Nk at ε = {args.nk_epsilon:g} (Fig. 5 analogue)")
    print(f"saved {args.out}")


def _maker(name: str, params: dict[str, object]) -> Callable[[], object]:
    return lambda: make_system(name, params)


def _series(runs: list[dict[str, object]], name: str, sweep: str, key: str
            ) -> tuple[list[float], list[float], list[float]]:
    pts = [r for r in runs if r["system"] == name and r["sweep"] == sweep]
    xs = [float(r["params"]["epsilon"]) if key == "epsilon" else float(r[key]) for r in pts]
    return (xs, [r["RMSE"]["mean"] for r in pts], [r["RMSE"]["std"] for r in pts])


def plot_eps(runs: list[dict[str, object]], lines: dict[str, dict[str, object] | None],
             names: tuple[str, ...], xlabel: str, path: Path, title: str,
             tau: int | None) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for name in names:
        xs, ys, sd = _series(runs, name, "epsilon", "epsilon")
        if xs:
            ax.errorbar(xs, ys, yerr=sd, marker="o", capsize=3, label=name)
    for (name, point), style in zip(lines.items(), ("-", "--", ":"), strict=True):
        if point is not None:
            ax.axhline(point["RMSE"]["mean"], color="grey", ls=style,
                       label=f"{name} (non-private)")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("RMSE (mean ± std over folds)")
    if tau is not None:
        top = ax.secondary_xaxis("top", functions=(lambda e: e / tau, lambda x: x * tau))
        top.set_xlabel(f"x in ε = x × τ (τ = {tau}), the paper's per-rating reading")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_nk(runs: list[dict[str, object]], path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for name in ("dpsgd-pnbm", "dpps-pnbm", "pcc-knn", "cos-knn"):
        xs, ys, sd = _series(runs, name, "neighbours", "neighbours")
        if xs:
            ax.errorbar(xs, ys, yerr=sd, marker="o", capsize=3, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("neighbours per item (Nk; k for PCC/COS)")
    ax.set_ylabel("RMSE (mean ± std over folds)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
