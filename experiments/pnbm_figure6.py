"""Seed 004's Figure 6 (DPSGD-PNBM against DPPS-PNBM "at rating level"), and why it cannot be
drawn honestly.

The paper puts both systems on one per-rating eps axis: DPSGD-PNBM at its claimed
rating-level eps, DPPS-PNBM at x = eps_user / tau (tau = 200), "assuming delta -> 0". Neither
coordinate is a guarantee:

- DPPS-PNBM's sample comes from SGLD, not exactly from the posterior, so its guarantee is
  (eps, (1 + e^eps) delta) with delta unknown (the paper assumes delta -> 0): no (eps, delta)
  point exists to plot. Even with an exact sample, one user is covered at eps / (4 rho)
  (dprec's accounting of Algorithm 2), and one rating only at that same user-level eps (a
  rating's value enters the predictions of its user's other ratings), never at eps / tau.
- DPSGD-PNBM's claimed eps bounds one gradient entry; one rating moves up to A_u entries, so
  the sound rating-level eps is A_u eps / (gamma K) per iteration (dprec's event level).

This command runs both systems at the paper's axis values x (DPSGD: eps = x; DPPS:
eps_user = x tau) with k-fold cross-validation and records, per point, RMSE, the paper's
axis value and the eps each report proves (DPSGD: event level, rating-replacement
adjacency; DPPS: user level, "delta unknown"). The PNG draws RMSE against the paper's axis
(labelled as such) and against the proved eps, with DPPS's points hollow: they hold only if
the SGLD sample were exact.

Writes results/pnbm/figure6.{json,png} and
docs/results/pnbm_figure6.{md,png}.
Usage:
  .venv/bin/python experiments/pnbm_figure6.py [--x 0.5 1 2] [--folds 2]
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
from dprec.evaluation.provenance import git_commit, run_command, utc_date  # noqa: E402
from dprec.evaluation.rating import RatingEvaluator  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import KFoldSplit  # noqa: E402
from dprec.privacy.events import strict_json  # noqa: E402
from dprec.systems.registry import SYSTEMS, make_system  # noqa: E402


def _point(exp: Experiment, name: str, x: float, tau: int) -> dict[str, object]:
    eps = x if name == "dpsgd-pnbm" else x * tau
    t = time.perf_counter()
    res = exp.run(lambda: make_system(name, {"epsilon": eps}))
    p = res.privacy or {}
    true = p.get("true") or {}
    return {"system": name, "paper_axis_x": x, "epsilon_param": eps,
            "RMSE": res.metrics["rating"]["RMSE"],
            "epsilon_claimed": (p.get("claimed") or {}).get("epsilon"),
            "epsilon_proved": true.get("epsilon"), "level_proved": true.get("level"),
            "delta_proved": true.get("delta"), "wall_s": time.perf_counter() - t}


def _plot(points: list[dict[str, object]], path: Path, title: str) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    styles = {"dpsgd-pnbm": ("o", "tab:blue", "full"), "dpps-pnbm": ("s", "tab:orange", "none")}
    for name, (marker, colour, fill) in styles.items():
        pts = [p for p in points if p["system"] == name]
        ys = [p["RMSE"]["mean"] for p in pts]  # type: ignore[index]
        axes[0].plot([p["paper_axis_x"] for p in pts], ys, marker=marker, color=colour,
                     label=name)
        level = ("user level, δ unknown: holds only for an exact sample"
                 if name == "dpps-pnbm" else "rating level (event)")
        axes[1].plot([p["epsilon_proved"] for p in pts], ys, marker=marker, color=colour,
                     fillstyle=fill, label=f"{name} ({level})")
    axes[0].set_xlabel("the paper's axis: DPSGD's claimed ε; DPPS's x = ε_user / τ "
                       "(not a guarantee)")
    axes[1].set_xlabel("ε each report proves (log)")
    axes[1].set_xscale("log")
    axes[0].set_ylabel("RMSE (mean over folds)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def _markdown(doc: dict[str, object]) -> str:
    lines = [
        "# Seed 004, Figure 6: DPSGD-PNBM against DPPS-PNBM \"at rating level\"",
        "",
        f"Command: `{doc['command']}`  ",
        f"Date: {doc['date']} (dprec {doc['dprec_version']}); data set {doc['dataset']}, "
        f"{doc['folds']}-fold CV, tau = {doc['tau']}. Wall time {doc['wall_s']:.0f} s.",
        "",
        "**Status: not drawable honestly.** The paper's x axis puts DPSGD-PNBM's claimed "
        "per-rating eps next to DPPS-PNBM's x = eps_user / tau and assumes delta -> 0. "
        "DPPS-PNBM samples by SGLD, so its delta is unknown and it has no (eps, delta) "
        "point; eps_user / tau is not a per-rating guarantee (a rating's value enters its "
        "user's other predictions, so one rating is covered only at the user-level eps); "
        "and DPSGD-PNBM's claimed eps bounds one gradient entry, not one rating. The table "
        "gives the paper's axis value next to what each run's privacy report proves.",
        "",
        "| system | paper's axis x | eps parameter | RMSE | eps proved (level) | delta |",
        "|---|---|---|---|---|---|",
    ]
    for p in doc["points"]:  # type: ignore[attr-defined]
        proved = p["epsilon_proved"]
        lines.append(
            f"| {p['system']} | {p['paper_axis_x']:g} | {p['epsilon_param']:g} | "
            f"{p['RMSE']['mean']:.4f} | "
            f"{proved:.4g} ({p['level_proved']}) | "
            f"{'unknown' if p['delta_proved'] is None else p['delta_proved']} |")
    lines += ["", "Plot: pnbm_figure6.png beside this file (left: the paper's axis; right: "
              "the eps each report proves, DPPS hollow).", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--x", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("results/pnbm"))
    ap.add_argument("--summary", type=Path,
                    default=Path("docs/results/004/pnbm-figure6/pnbm_figure6.md"))
    args = ap.parse_args()
    start = time.perf_counter()
    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    exp = Experiment(ds, [args.seed], KFoldSplit(args.folds), RatingEvaluator())
    tau = int(SYSTEMS["dpps-pnbm"].default_config().tau)
    points = []
    for name in ("dpsgd-pnbm", "dpps-pnbm"):
        for x in args.x:
            points.append(_point(exp, name, x, tau))
            p = points[-1]
            print(f"{name} x={x:g}: RMSE {p['RMSE']['mean']:.4f}, eps proved "  # type: ignore
                  f"{p['epsilon_proved']} ({p['level_proved']}), {p['wall_s']:.0f}s",
                  flush=True)
    doc = {
        "command": run_command(), "date": utc_date(), "commit": git_commit(),
        "dprec_version": dprec.__version__, "dataset": ds.name, "folds": args.folds,
        "tau": tau, "points": points, "wall_s": time.perf_counter() - start,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "figure6.json").write_text(
        json.dumps(strict_json(doc), indent=2, allow_nan=False, default=str))
    args.summary.parent.mkdir(parents=True, exist_ok=True)
    for path in (args.out / "figure6.png", args.summary.with_suffix(".png")):
        _plot(points, path, f"{ds.name}: Figure 6 analogue, {args.folds}-fold CV (the paper's "
                            "axis is not a guarantee)")
    args.summary.write_text(_markdown(doc))
    print(f"wrote {args.out / 'figure6.json'}, figure6.png and {args.summary}")


if __name__ == "__main__":
    main()
