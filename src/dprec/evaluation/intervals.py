"""95% confidence intervals of a metric over seeds: every table cell is a mean with one.

Over n per-seed values with sample standard deviation s (ddof = 1), the interval is
mean ± t_{0.975, n-1} s / sqrt(n) (Student's t; the seeds' values treated as independent
draws). With one seed there is no interval: the cell says "1 seed".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

__all__ = [
    "INTERVAL_NOTE", "entry_count", "format_interval", "half_width", "summarise",
    "summary_half_width",
]

INTERVAL_NOTE = "mean ± 95% interval over seeds (Student's t, n − 1 dof)"


def half_width(std: float, n: int) -> float | None:
    """t_{0.975, n-1} std / sqrt(n); None for n < 2 (no interval from one value)."""
    if n < 2 or not math.isfinite(std):
        return None
    return float(stats.t.ppf(0.975, n - 1) * std / math.sqrt(n))


def summarise(values: Sequence[float]) -> dict[str, float | int | None]:
    """{"mean", "std" (ddof 1; 0 for one value), "ci95" (half-width, None for one value),
    "n"} of per-seed ``values``."""
    a = np.asarray(values, dtype=np.float64)
    std = float(a.std(ddof=1)) if len(a) > 1 else 0.0
    return {"mean": float(a.mean()), "std": std, "ci95": half_width(std, len(a)),
            "n": int(len(a))}


def entry_count(doc: Mapping[str, object]) -> int | None:
    """How many values a result's metric summaries are over: its per-(seed, fold) entries,
    else (a file without them) its seeds; None when it records neither."""
    for key in ("per_seed", "seeds"):
        v = doc.get(key)
        if isinstance(v, list) and v:
            return len(v)
    return None


def summary_half_width(summary: Mapping[str, object], n: int | None = None
                       ) -> tuple[float | None, int | None]:
    """(half-width, n) of a stored summary: its own ``ci95`` and ``n`` when it has them,
    else computed from its ``std`` and ``n`` (results files from before the intervals
    recorded only mean and std; pass the number of per-seed entries)."""
    count = summary.get("n", n)
    count = int(count) if isinstance(count, int | float) and not isinstance(count, bool) \
        else None
    if "ci95" in summary:
        ci = summary["ci95"]
        return (float(ci) if isinstance(ci, int | float) else None), count
    std = summary.get("std")
    if count is None or not isinstance(std, int | float):
        return None, count
    return half_width(float(std), count), count


def format_interval(summary: Mapping[str, object] | None, n: int | None = None,
                    digits: int = 4) -> str:
    """"0.1234 ± 0.0056" (mean ± 95% half-width), "0.1234 (1 seed)" with one seed, "—"
    with no summary; ``n`` as in :func:`summary_half_width`."""
    if summary is None:
        return "—"
    mean = summary.get("mean")
    if not isinstance(mean, int | float) or isinstance(mean, bool):
        return str(mean)
    if math.isnan(mean):
        return "—"
    ci, count = summary_half_width(summary, n)
    if ci is not None:
        return f"{mean:.{digits}f} ± {ci:.{digits}f}"
    if count == 1:
        return f"{mean:.{digits}f} (1 seed)"
    return f"{mean:.{digits}f} ± ?"
