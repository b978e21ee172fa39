"""PNG plots of comparison results (matplotlib, no screen needed)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

__all__ = [
    "MARKERS", "PALETTE", "plot_hr_at_k", "plot_metric_vs_eps", "system_styles",
    "unbounded_points",
]

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MARKERS = "osD^vP*Xh<>p"
"""Line markers, one per system in turn: 12 against :data:`PALETTE`'s 10 colours, so a
(colour, marker) pair repeats only after lcm(10, 12) = 60 systems."""
PALETTE = "tab10"
"""A qualitative palette of 10 clearly different hues (tab20's light/dark pairs look alike
as thin lines)."""
_REFERENCE_LINES: tuple[str | tuple[int, tuple[int, ...]], ...] = (
    "--", "-.", ":", (0, (8, 2, 2, 2, 2, 2)), "-")
"""Reference lines' dash patterns in turn: five distinct (random, popularity, ALS, EASE and the
oracle of a frontier), then they repeat."""


def system_styles(names: Sequence[str],
                  order: Sequence[str] | None = None) -> dict[str, dict[str, object]]:
    """Per system, the colour and marker of its line: the i-th name of ``order`` (default:
    ``names``; a name not in it comes after) gets colour ``i mod 10`` of :data:`PALETTE` and
    marker ``i mod 12`` of :data:`MARKERS`, so no two of 60 systems share both, and plots
    given the same ``order`` draw a system alike."""
    place = {n: i for i, n in enumerate(dict.fromkeys([*(order or names), *names]))}
    cmap = plt.get_cmap(PALETTE)
    return {n: {"color": cmap(place[n] % cmap.N), "marker": MARKERS[place[n] % len(MARKERS)]}
            for n in names}


def plot_hr_at_k(results: dict[str, dict], ks: list[int], path: Path, title: str,
                 protocol: str = "sampled", order: Sequence[str] | None = None) -> Path:
    """HR@K against K for every system, error bars = std over seeds; each system's colour
    and marker from :func:`system_styles` (``order``: the names that fix them)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = system_styles(list(results), order)
    for name, res in results.items():
        m = res["metrics"][protocol]
        ys = [m[f"HR@{k}"]["mean"] for k in ks]
        es = [m[f"HR@{k}"]["std"] for k in ks]
        ax.errorbar(ks, ys, yerr=es, ms=4, capsize=2, label=name, **styles[name])
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
                       x: str = "epsilon", log_x: bool = False,
                       order: Sequence[str] | None = None,
                       legend_outside: bool = False) -> Path:
    """A metric against ``x`` (a sweep point's key) for each private system, each in its
    :func:`system_styles` colour and marker (``order``: the names that fix them).
    ``legend_outside``: the legend right of the axes, on a wider figure (for many systems,
    whose legend would cover the curves).

    ``references`` (label: value) are grey horizontal lines, each in its own dash pattern
    and named in the legend; systems whose guarantee protects presence
    only are dashed and labelled one-sided. A point with no finite ``x`` (no finite
    guarantee) cannot be placed: it is left out and its system named in a note on the plot
    ("ε = ∞"), never dropped silently.
    """
    fig, ax = plt.subplots(figsize=(10.5, 5) if legend_outside else (7, 4.5))
    styles = system_styles(list(sweep), order)
    for name, pts in sweep.items():
        pts = [p for p in pts if math.isfinite(p[x]) and (p[x] > 0 or not log_x)]
        if not pts:
            continue
        xs = [p[x] for p in pts]
        one_sided = any(p.get("sides") == "one" for p in pts)
        ax.errorbar(xs, [p["mean"] for p in pts], yerr=[p["std"] for p in pts], ms=4,
                    capsize=2, label=f"{name} (one-sided)" if one_sided else name,
                    ls="--" if one_sided else "-", **styles[name])
    if log_x:
        ax.set_xscale("log")
    for i, (name, y) in enumerate((references or {}).items()):
        ax.axhline(y, ls=_REFERENCE_LINES[i % len(_REFERENCE_LINES)], lw=1, color="grey",
                   label=name)
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
        if legend_outside:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        else:
            ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
