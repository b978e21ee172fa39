"""Noise against signal per item of the dpals configs at 10K x 2K and 75K x 10K (issue 33
§3; a back-of-envelope reading, docs/results/dpals_targets_synthetic-75000x10000.md).

An item's per-item Gramian gets noise of standard deviation ``sigma`` (clip units, from the
run plan: it depends on epsilon, steps, factors, not on the users); a user at the clip adds
about ``c / F`` to each diagonal entry (``c`` its weight on the item: sqrt(k / n_u) under
adaptive weights, the chance k / n_u that a uniform sample keeps the item). So an item's
signal reaches the noise at ``n* = F sigma / c_eff`` users, ``c_eff`` at the median user.
Item quantiles: docs/results/generator_stats.md (seed 0).

  PYTHONPATH=src nice -n 10 .venv/bin/python experiments/dpals_item_snr.py
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dprec.systems.dpals.plan import run_plan
from dprec.systems.registry import make_config, read_config

OUT = Path("docs/results/dpals_item_snr.json")
SIZES: dict[str, dict[str, Any]] = {
    "synthetic-10000x2000": {
        "users": 10000, "items": 2000, "user_q50": 73,
        "item_q": {"q10": 128, "q25": 186, "q50": 325, "q75": 670, "q90": 1325}},
    "synthetic-75000x10000": {
        "users": 75000, "items": 10000, "user_q50": 335,
        "item_q": {"q10": 1079, "q25": 1530, "q50": 2609, "q75": 5046, "q90": 10248}},
}


VARIANTS: list[dict[str, Any]] = [
    {}, {"gram_noise_ratio": 3.0}, {"count_noise_ratio": 3.0},
    {"gram_noise_ratio": 3.0, "count_noise_ratio": 3.0},
    {"gram_noise_ratio": 10.0, "count_noise_ratio": 3.0}, {"factors": 4}, {"steps": 1}]
"""Changes to the 75K-tuned configs whose noise the reading compares: the budget split
(the global Gramian and the count round sum over every user, so they can take more noise),
the rank and the steps."""


def row(path: str, eps: int, name: str, size: dict[str, Any],
        change: dict[str, Any] | None = None) -> dict[str, Any]:
    """One config (with ``change`` set on it) on one data set's shape: the noise, c_eff
    and n*."""
    params = {**read_config(Path(path)).params, **(change or {})}
    typed = make_config("dpals", params, typed=True)
    cfg = asdict(typed)
    p = run_plan(typed, size["items"], size["users"])
    stats = next(r for r in p.releases if r.name == "item_statistics")
    sigma = stats.ratio * p.multiplier * stats.l2 / p.gamma
    share = min(1.0, cfg["k"] / size["user_q50"])
    c_eff = math.sqrt(share) if cfg["weighting"] == "adaptive" else share
    return {"config": path, "change": change or {}, "epsilon": eps, "dataset": name,
            "noise_multiplier": p.multiplier, "stats_noise_std_clip_units": sigma,
            "factors": cfg["factors"], "median_user_items": size["user_q50"],
            "c_eff": c_eff, "n_star_users": cfg["factors"] * sigma / c_eff,
            "item_user_quantiles": size["item_q"], "head_items": cfg.get("head_items")}


def main() -> None:
    rows = [row(f"configs/synthetic-10000x2000/dpals/eps{eps}.toml", eps, name, size)
            for eps in (1, 8) for name, size in SIZES.items()]
    big = "synthetic-75000x10000"
    rows += [row(f"configs/{big}/dpals/eps{eps}.toml", eps, big, SIZES[big], change)
             for eps in (1, 8) for change in VARIANTS]
    doc = {"experiment": "issue 33 §3 at synthetic-75000x10000",
                      "reading": "back-of-envelope: n_star = F sigma / c_eff users make an item's "
                      "Gramian diagonal signal equal the noise std (users at the clip)",
           "item_user_quantiles_source": "docs/results/generator_stats.md (seed 0)",
           "command": "PYTHONPATH=src .venv/bin/python experiments/dpals_item_snr.py",
           "date": datetime.datetime.now(datetime.UTC).isoformat(), "rows": rows}
    OUT.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    for r in rows:
        print(r["config"], r["change"], r["dataset"], round(r["stats_noise_std_clip_units"], 2),
              round(r["c_eff"], 3), round(r["n_star_users"]))


if __name__ == "__main__":
    main()
