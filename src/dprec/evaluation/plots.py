"""PNG plots of comparison results (matplotlib, no screen needed)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

__all__ = ["plot_hr_at_k", "plot_metric_vs_eps", "unbounded_points"]

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


def unbounded_points(sweep: dict[str, list[dict[str, float]]], x: str) -> dict[str, int]:
    """Per system, how many of its points have no finite ``x`` (e.g. per-user eps = inf)."""
    out = {}
    for name, pts in sweep.items():
        n = sum(1 for p in pts if not math.isfinite(p[x]))
        if n:
            out[name] = n
    return out


def plot_metric_vs_eps(sweep: dict[str, list[dict[str, float]]], path: Path,
                       title: str, ylabel: str = "HR@10 (sampled)",
                       references: dict[str, float] | None = None,
                       xlabel: str = "ε (DPLCF family: per interaction bit; FMF-LDP: per report)",
                       x: str = "epsilon", log_x: bool = False) -> Path:
    """A metric against ``x`` (a sweep point's key) for each private system.

    ``references`` are drawn as horizontal lines; systems whose guarantee protects presence
    only are dashed and labelled one-sided. A point with no finite ``x`` (no finite
    guarantee) cannot be placed: it is left out and its system named in a note on the plot
    ("ε = ∞"), never dropped silently.
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
    unbounded = unbounded_points(sweep, x)
    if unbounded:
        lines = [name if n == len(sweep[name]) else f"{name} ({n} of {len(sweep[name])} points)"
                 for name, n in unbounded.items()]
        ax.text(0.99, 0.01, "ε = ∞, not plotted:\n" + "\n".join(lines), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=7, color="dimgrey",
                bbox={"boxstyle": "round", "fc": "white", "ec": "lightgrey", "alpha": 0.9})
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
