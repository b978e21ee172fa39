"""PNG plots of comparison results (matplotlib, no screen needed)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_MARKERS = "osD^vP*Xh<>p"


def _style(i: int) -> dict[str, object]:
    """A distinct colour and marker per line (more lines than the default cycle's 10)."""
    return {"color": plt.get_cmap("tab20")(i % 20), "marker": _MARKERS[i % len(_MARKERS)]}


def plot_hr_at_k(results: dict[str, dict], ks: list[int], path: Path, title: str,
                 protocol: str = "sampled") -> Path:
    """HR@K against K for every system, error bars = std over seeds."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, res) in enumerate(results.items()):
        m = res["metrics"][protocol]
        ys = [m[f"HR@{k}"]["mean"] for k in ks]
        es = [m[f"HR@{k}"]["std"] for k in ks]
        ax.errorbar(ks, ys, yerr=es, ms=4, capsize=2, label=name, **_style(i))
    ax.set_xlabel("K")
    ax.set_ylabel(f"HR@K ({protocol})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_metric_vs_eps(sweep: dict[str, list[dict[str, float]]], path: Path,
                       title: str, ylabel: str = "HR@10 (sampled)",
                       references: dict[str, float] | None = None,
                       xlabel: str = "ε (DPLCF family: per interaction bit; FMF-LDP: per report)",
                       x: str = "epsilon", log_x: bool = False) -> Path:
    """A metric against ``x`` (a sweep point's key) for each private system.

    ``references`` are drawn as horizontal lines; points with a non-finite x are left out;
    systems whose guarantee protects presence only are dashed and labelled one-sided.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, pts) in enumerate(sweep.items()):
        pts = [p for p in pts if math.isfinite(p[x]) and (p[x] > 0 or not log_x)]
        if not pts:
            continue
        xs = [p[x] for p in pts]
        one_sided = any(p.get("sides") == "one" for p in pts)
        ax.errorbar(xs, [p["mean"] for p in pts], yerr=[p["std"] for p in pts], ms=4,
                    capsize=2, label=f"{name} (one-sided)" if one_sided else name,
                    ls="--" if one_sided else "-", **_style(i))
    if log_x:
        ax.set_xscale("log")
    for name, y in (references or {}).items():
        ax.axhline(y, ls="--", lw=1, color="grey")
        ax.text(ax.get_xlim()[0], y, f" {name}", va="bottom", fontsize=8, color="grey")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
