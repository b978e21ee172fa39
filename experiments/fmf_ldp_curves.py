"""FMF-LDP learning curves (the paper's Figure 3 analogue): HR@10 after every federated epoch.

For each dataset, on a RANDOM leave-one-out split (the held-out item ranked against 99
sampled never-seen items, dprec.evaluation), trains FCF (exact gradients, non-private) and
FMF-LDP with k reports per user per epoch (binary mechanism, per-report eps), and evaluates
the model after every epoch through the experiment's per-round hook (``curve_every=1``).
The evaluation at the last epoch is the run's own final evaluation (same fold, same fit and
tie streams). The paper plots 30 epochs; its training setting (and this default) is 20.
Writes results/fmf_ldp_curves/fmf_ldp_curves.{json,png}. Usage:
  .venv/bin/python experiments/fmf_ldp_curves.py [--datasets ml-100k synthetic-10000x1000]
      [--ks 50 100] [--epsilon 2.5] [--epochs 20] [--seeds 3] [--lr 1e-3] [--no-fcf]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dprec  # noqa: E402
from dprec.data.registry import load_dataset  # noqa: E402
from dprec.evaluation.runner import Experiment  # noqa: E402
from dprec.evaluation.split import LeaveOneOutSplit  # noqa: E402
from dprec.systems.fmf.system import FederatedMF, FMFConfig  # noqa: E402

RANDOM_HR10 = 0.10


def curve(exp: Experiment, name: str, config: FMFConfig) -> dict[str, object]:
    """Per-epoch sampled and full HR@10 (mean, std over seeds) of one system.

    The experiment's per-round hook evaluates the model after every epoch on the run's own
    fold, so the last point is exactly the run's final evaluation.
    """
    res = exp.run(lambda: FederatedMF(name, config), curve_every=1)
    assert res.curves is not None
    epochs = [p["round"] for p in res.curves[0]]
    if any(len(c) != len(epochs) for c in res.curves):
        raise SystemExit(f"{name}: seeds ran different numbers of updating epochs")

    def series(protocol: str) -> np.ndarray:
        return np.array([[p["metrics"][protocol]["HR@10"] for p in c] for c in res.curves])

    sampled, full = series("sampled"), series("full")
    std = (lambda a: a.std(0, ddof=1)) if len(exp.seeds) > 1 else (lambda a: 0 * a[0])
    return {
        "parameters": res.parameters,
        "epochs": epochs,
        "sampled_HR@10": {"mean": sampled.mean(0).tolist(), "std": std(sampled).tolist(),
                          "per_seed": sampled.tolist()},
        "full_HR@10": {"mean": full.mean(0).tolist(), "std": std(full).tolist()},
        "privacy": res.privacy,
        "wall_time_s": res.wall_time_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["ml-100k"],
                    help="registry names, e.g. ml-100k synthetic-10000x1000")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--ks", type=int, nargs="+", default=[50, 100])
    ap.add_argument("--epsilon", type=float, default=2.5)
    ap.add_argument("--epochs", type=int, default=20, help="the paper's figure shows 30")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--split", choices=["random", "latest"], default="random")
    ap.add_argument("--lr", type=float, default=1e-3, help="server learning rate (paper 1e-3)")
    ap.add_argument("--no-fcf", action="store_true", help="skip the non-private FCF curve")
    ap.add_argument("--out", type=Path, default=Path("results/fmf_ldp_curves"))
    args = ap.parse_args()

    systems: list[tuple[str, FMFConfig]] = []
    if not args.no_fcf:
        systems.append(("FCF", FMFConfig(exact=True, epochs=args.epochs, lr=args.lr)))
    systems += [(f"FMF-LDP-{k}", FMFConfig(k=k, epsilon=args.epsilon, epochs=args.epochs,
                                                   lr=args.lr))
                for k in args.ks]
    doc: dict[str, object] = {
        "experiment": "fmf_ldp_curves (paper Figure 3 analogue)",
        "metric": "HR@10, sampled (99 negatives) and full, after each epoch",
        "epsilon_per_report": args.epsilon, "epochs": args.epochs, "lr": args.lr,
        "seeds": list(range(args.seeds)), "dprec_version": dprec.__version__,
        "random_level_HR@10": RANDOM_HR10, "datasets": {},
    }
    for dname in args.datasets:
        ds = load_dataset(dname, data_dir=args.data_dir)
        exp = Experiment(ds, range(args.seeds), LeaveOneOutSplit(args.split))
        res = {name: curve(exp, name, cfg) for name, cfg in systems}
        doc["datasets"][ds.name] = {"summary": ds.summary(), "protocol": exp.protocol(),
                                    "synthetic": ds.name.startswith("synthetic"),
                                    "systems": res}
        names = list(res)
        print(f"\n{ds.name} ({ds.matrix.shape[0]} users x {ds.matrix.shape[1]} items, "
              f"{ds.matrix.nnz} interactions), {args.split} leave-one-out, eps={args.epsilon}, "
              f"seeds={args.seeds}: HR@10 (sampled) per epoch")
        print("epoch " + " ".join(f"{n:>16s}" for n in names))
        for e in range(args.epochs):
            print(f"{e + 1:5d} " + " ".join(
                f"{res[n]['sampled_HR@10']['mean'][e]:8.4f}±{res[n]['sampled_HR@10']['std'][e]:.4f}"
                for n in names))
        print("wall s " + " ".join(f"{res[n]['wall_time_s']:>15.1f}" for n in names))

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fmf_ldp_curves.json").write_text(json.dumps(doc, indent=2))
    plot(doc, args.out / "fmf_ldp_curves.png", args)
    print(f"saved {args.out}")


def plot(doc: dict, path: Path, args: argparse.Namespace) -> None:
    data = doc["datasets"]
    fig, axes = plt.subplots(1, len(data), figsize=(6 * len(data), 4.2), squeeze=False)
    for ax, (dname, d) in zip(axes[0], data.items(), strict=True):
        for name, r in d["systems"].items():
            m, s = np.array(r["sampled_HR@10"]["mean"]), np.array(r["sampled_HR@10"]["std"])
            ax.plot(r["epochs"], m, marker="o", ms=3, label=name,
                    ls="--" if name == "FCF" else "-")
            ax.fill_between(r["epochs"], m - s, m + s, alpha=0.2)
        ax.axhline(RANDOM_HR10, color="grey", lw=1, ls=":", label="random")
        label = f"{dname} (synthetic data)" if d["synthetic"] else dname
        ax.set_title(f"{label}\nε={args.epsilon} per report, {args.split} leave-one-out",
                     fontsize=10)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("epoch")
        ax.set_ylabel("HR@10 (sampled)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
