"""Helpers of the report tests, in a module of their own (`from conftest import` picks
whichever tests/*/conftest.py was imported last). A results folder written the way `dprec
compare` and `dprec run` write theirs, small and made here: a comparison with an ε sweep (one
system named like an attack), a folder of run files, and an experiment's figure."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HOSTILE = "<script>alert(1)</script>"
KS = [1, 2, 5, 10, 20]


def guarantee(eps, level, delta=0.0, model="local", notes=()):
    return {"epsilon": eps, "delta": delta, "level": level, "sides": "two", "model": model,
            "mechanism": f"1 x BitFlipDpEvent (eps {eps})", "notes": list(notes)}


def privacy(system, user_eps, threat=None, model="local"):
    return {
        "system": system,
        "threat_model": threat or "untrusted server sees each user's obfuscated vector once",
        "claimed": guarantee(1.0, "event", model=model, notes=["as published"]),
        "true": guarantee(1.0, "event", model=model),
        "mechanisms": [{"name": "bitflip-symmetric", "p": 0.73, "q": 0.27}],
        "levels": {"event": guarantee(1.0, "event", model=model),
                   "user": guarantee(user_eps, "user", 1e-6, model, ["PLD composition"]),
                   "user_basic": guarantee(200.0, "user", model=model)},
        "adjacency": "replace_one",
        "threat_model_assumptions": {"server_proxy_collusion": False,
                                     "notes": ["the proxy stores nothing"]},
    }


def run_doc(system, hr10, priv=None, epsilon=None, protocols=("sampled", "full")):
    metrics = {p: {**{f"HR@{k}": {"mean": min(1.0, hr10 * k / 10), "std": 0.01} for k in KS},
                   "NDCG@10": {"mean": hr10 / 2, "std": 0.005}} for p in protocols}
    return {"schema": 1, "system": system,
            "dataset": {"name": "synthetic-300x200", "users": 300, "items": 200},
            "protocol": {"task": "ranking", "sampled": {"negatives": 99}, "ks": KS},
            "parameters": {} if epsilon is None else {"epsilon": epsilon},
            "seeds": [0, 1], "metrics": metrics, "per_seed": [], "privacy": priv,
            "diagnostics": {}, "dprec_version": "0.1.0", "wall_time_s": 1.5}


def comparison_doc():
    results = {
        "random": run_doc("random", 0.10),
        "popularity": run_doc("popularity", 0.39),
        "dplcf-sp": run_doc("dplcf-sp", 0.07, privacy("dplcf-sp", 147.442)),
        HOSTILE: run_doc(HOSTILE, 0.2, privacy(HOSTILE, "inf",
                                               threat='<img src=x onerror="alert(2)">')),
    }
    sweep = {"dplcf-sp": [{"epsilon": e, "mean": 0.05 * e, "std": 0.01,
                           "user_epsilon": 147.0 * e, "sides": "two"} for e in (0.5, 1, 2)],
             HOSTILE: [{"epsilon": 1.0, "mean": 0.2, "std": 0.0, "user_epsilon": "inf",
                        "sides": "two"}]}
    return {"dataset": "synthetic-300x200", "results": results, "eps_sweep": sweep,
            "failed": {"dpals": "DprecError: <b>bold</b> failure"}}


def plain_run(system="random"):
    """A run file with nothing to plot (no K list, no privacy): a page without figures,
    quick to render."""
    doc = run_doc(system, 0.1, protocols=("sampled",))
    doc["protocol"] = {}
    return doc


def write_results(root: Path) -> Path:
    """results/<dataset>/compare-1 (a comparison), results/<dataset>/ run files of dp-pop at
    two ε, and results/exp/figure.png (an experiment's figure)."""
    comp = root / "synthetic-300x200" / "compare-1"
    (comp / "systems").mkdir(parents=True)
    (comp / "results.json").write_text(json.dumps(comparison_doc()))
    (comp / "status.json").write_text(json.dumps({"complete": True}))
    for name, doc in comparison_doc()["results"].items():
        (comp / "systems" / f"{len(name)}.json").write_text(json.dumps(doc))
    for i, eps in enumerate((0.5, 1.0)):
        doc = run_doc("dp-pop", 0.3 + 0.1 * i,
                      privacy("dp-pop", eps, "secure sum", "secure-sum"), epsilon=eps)
        (root / "synthetic-300x200" / f"dp-pop-{i}.json").write_text(json.dumps(doc))
    (root / "exp").mkdir()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    fig.savefig(root / "exp" / "figure.png", dpi=60)
    plt.close(fig)
    (root / "exp" / "summary.json").write_text(json.dumps({"rows": [1, 2]}))
    return root
