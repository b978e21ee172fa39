"""The audit table (Markdown) and its bar chart (PNG): claimed / true / empirical eps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from dprec.audit.result import AuditResult

__all__ = ["audit_markdown", "plot_audit"]


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if math.isinf(value):
        return "∞"
    return f"{value:.4g}"


def audit_markdown(results: Sequence[AuditResult]) -> str:
    """One row per audit: level, claimed, true, empirical lower bound, confidence, trials,
    delta, ceiling, per-direction bounds, and the first note that explains the gap."""
    head = ("| audit | level | claimed ε | true ε | empirical lower | confidence | trials | δ | "
            "ceiling | per direction (empirical / true) |")
    lines = [head, "|" + "---|" * 10]
    for r in results:
        dirs = "; ".join(
            f"{k}: {_fmt(float(v['empirical_lower']))} / "  # type: ignore[arg-type]
            f"{_fmt(_num(v['true_epsilon']))}"
            for k, v in r.directions.items())
        name = f"{r.name} ⚠ violates the claim" if r.violates_claim else r.name
        lines.append(f"| {name} | {r.level} | {_fmt(r.claimed_epsilon)} | "
                     f"{_fmt(r.true_epsilon)} | {r.empirical_lower:.4f} | {r.confidence:g} | "
                     f"{r.trials:,} | {r.delta:g} | {_fmt(r.ceiling)} | {dirs or '—'} |")
    lines.append("")
    for r in results:
        lines.append(f"- **{r.name}** ({r.seconds:.1f} s): " + " ".join(r.notes))
    return "\n".join(lines) + "\n"


def _num(v: object) -> float | None:
    if v is None:
        return None
    return math.inf if v == "inf" else float(v)  # type: ignore[arg-type]


def plot_audit(results: Sequence[AuditResult], path: Path, title: str = "") -> Path:
    """Grouped bars per audit: claimed, true, empirical (log scale; ∞ drawn as a hatched bar
    at the top with its label)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in results]
    series = {
        "claimed": [r.claimed_epsilon for r in results],
        "true (accountant)": [r.true_epsilon for r in results],
        "empirical lower": [r.empirical_lower for r in results],
    }
    finite = [v for vs in series.values() for v in vs if v is not None and math.isfinite(v)
              and v > 0]
    top = max(finite) * 3 if finite else 10.0
    floor = min(min(finite) / 3, 0.01) if finite else 0.01
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(names) + 3), 5))
    width = 0.27
    colours = ("#9e9e9e", "#1f77b4", "#d62728")
    for j, (label, values) in enumerate(series.items()):
        for i, v in enumerate(values):
            if v is None:
                continue
            x = i + (j - 1) * width
            inf = math.isinf(v)
            h = top if inf else max(v, floor)
            ax.bar(x, h, width, color=colours[j], hatch="//" if inf else None,
                   label=label if i == 0 or (label not in ax.get_legend_handles_labels()[1])
                   else None, edgecolor="white" if inf else None)
            ax.text(x, h * 1.05, "∞" if inf else f"{v:.3g}", ha="center", va="bottom",
                    fontsize=6, rotation=90)
    ax.set_yscale("log")
    ax.set_ylim(floor, top * 6)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("ε (log scale)")
    ax.set_title(title or "dprec audit: claimed, true and empirical ε")
    ax.grid(axis="y", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    seen: dict[str, object] = {}
    for h, lab in zip(handles, labels, strict=True):
        seen.setdefault(lab, h)
    ax.legend(list(seen.values()), list(seen), fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
