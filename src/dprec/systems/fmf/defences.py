"""FMF-LDP's robust aggregators (issue 26 §3): per-cell estimates of its real-valued
(item, factor) reports that bound what attacker reports move a cell, written as
:class:`~dprec.protocol.aggregation.Aggregator` s (the defence hook) and owned here.

:data:`FMF_AGGREGATORS` is the table FMF-LDP's config and server choose from by name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.aggregation import (
    Aggregator,
    CellSums,
    MeanAggregator,
    report_arrays,
)

__all__ = ["FMF_AGGREGATORS", "MedianOfMeansAggregator", "TrimmedMeanAggregator"]


class _CellEstimateAggregator(Aggregator):
    """A robust per-cell estimate of real-valued reports (FMF-LDP's cells): it has nothing to
    say about DPLCF's bit uploads, so a DPLCF server refuses it instead of running the plain
    mean under its name."""

    def for_uploads(self, law: Any) -> Aggregator:
        raise DprecError(f"the {self.name} aggregator estimates per-cell means of real-valued "
                         "reports (fmf-ldp); DPLCF's bit uploads take mean, dplcf-range, "
                         "dplcf-screen or dplcf-range+screen")


def _sorted_reports(cells: np.ndarray, values: np.ndarray, n_cells: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The reports checked and sorted by (cell, value): (cells, values, counts, rank).

    Reports equal in cell and value are interchangeable, so the sorted arrays are a function
    of the multiset of reports alone (the tie rule: equal keys are equal reports). ``counts``
    int64 ``(n_cells,)``: reports per cell; ``rank[r]``: report r's position in its cell.
    """
    cells_a, vals = report_arrays(cells, values)
    if cells_a.size and (cells_a.min() < 0 or cells_a.max() >= n_cells):
        raise DprecError(f"cells must be in [0, {n_cells}), got {cells_a.min()} .. "
                         f"{cells_a.max()}")
    if not np.isfinite(vals).all():
        raise DprecError("report values must be finite")
    vals = vals + 0.0  # -0.0 becomes 0.0: equal keys are then equal bits
    order = np.lexsort((vals, cells_a))
    c = cells_a[order].astype(np.int64)
    v = vals[order]
    counts = np.bincount(c, minlength=n_cells).astype(np.int64)
    starts = np.cumsum(counts) - counts
    return c, v, counts, np.arange(c.size, dtype=np.int64) - starts[c]


class TrimmedMeanAggregator(_CellEstimateAggregator):
    """Per-cell trimmed mean (issue 26 §3): in a cell of n_c reports the t_c = floor(trim n_c)
    lowest and t_c highest values are dropped and the rest averaged; the cell's total is
    n_c times that mean, so the server's Eq. 9 (divide by the round's n) is unchanged.

    ``trim`` in [0, 0.5): trim = 0 is :class:`MeanAggregator` bit for bit. Order-free: the
    values are sorted per cell (:func:`_sorted_reports`) and the kept ones summed exactly
    (:class:`CellSums`). A cell's total then moves by at most n_c C / (n_c - 2 t_c) per
    attacker report beyond t_c on one side; with t_c or fewer attacker reports in a cell
    (values in [-C, C]) it stays within the range of the honest values' kept order
    statistics. Biased on skewed honest data (measured, docs/results/poisoning_defences_fmf.md):
    for the binary mechanism (values +-C) the kept mean is C (n+ - n-) / (n_c - 2 t_c) while
    both signs keep >= t_c reports (the mean scaled by n_c / (n_c - 2 t_c)), and the cell's
    sum is clamped to +-C (n_c - 2 t_c) otherwise.

    Privacy: a function of the reports the server already holds (post-processing), so every
    guarantee of the plain mean holds unchanged.
    """

    name: ClassVar[str] = "trimmed"
    argument = ("trim", float)
    """``trimmed:FRACTION``; ``trimmed`` is trim 0.1."""

    def __init__(self, trim: float = 0.1) -> None:
        if isinstance(trim, bool) or not (isinstance(trim, (int, float))
                                          and 0.0 <= trim < 0.5):
            raise DprecError(f"trim must be a fraction in [0, 0.5), got {trim!r}")
        self.trim = float(trim)

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        c, v, counts, rank = _sorted_reports(cells, values, n_cells)
        cut = np.floor(self.trim * counts).astype(np.int64)
        keep = (rank >= cut[c]) & (rank < (counts - cut)[c])
        kept = CellSums.of(c[keep], v[keep], n_cells).totals()
        left = counts - 2 * cut
        scale = np.divide(counts, left, out=np.ones(n_cells), where=left > 0)
        return kept * scale


class MedianOfMeansAggregator(_CellEstimateAggregator):
    """Per-cell median of means (issue 26 §3): a cell's n_c reports are split into
    min(groups, n_c) random groups of near-equal size (ranks dealt round-robin over a random
    order), each group averaged, and the cell's total is n_c times the median of the group
    means (the mean of the two middle ones for an even count).

    The random order is drawn, per round, from a generator seeded with SHA-256 of ``key``
    and the reports sorted by (cell, value) (:func:`_sorted_reports`), so the estimate is a
    function of the multiset of reports and ``key``: in-process and HTTP runs agree bit for
    bit. ``key`` is public (empty) in the simulation; a deployed server should hold a secret
    one (from its CSPRNG), or an attacker who knows every report could grind its values for a
    favourable grouping. With at most (groups - 1) / 2 groups of a cell holding attacker
    reports the median lies between two honest-only group means. Biased where group means
    are skewed (measured, docs/results/poisoning_defences_fmf.md).

    Privacy: post-processing of the reports the server holds; guarantees unchanged.
    """

    name: ClassVar[str] = "median-of-means"
    argument = ("groups", int)
    """``median-of-means:GROUPS``; ``median-of-means`` is 5 groups."""

    def __init__(self, groups: int = 5, key: bytes = b"") -> None:
        if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
            raise DprecError(f"groups must be an integer >= 1, got {groups!r}")
        self.groups = int(groups)
        self.key = bytes(key)

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        c, v, counts, _ = _sorted_reports(cells, values, n_cells)
        g = self.groups
        digest = hashlib.sha256(b"dprec/median-of-means/v1" + self.key + c.tobytes()
                                + v.tobytes()).digest()
        rng = np.random.default_rng(np.frombuffer(digest, np.uint32))
        order = np.lexsort((rng.random(c.size), c))
        starts = np.cumsum(counts) - counts
        rank = np.arange(c.size, dtype=np.int64) - starts[c[order]]
        slot = c[order] * g + rank % g
        sums = np.bincount(slot, weights=v[order], minlength=n_cells * g).reshape(n_cells, g)
        sizes = np.bincount(slot, minlength=n_cells * g).reshape(n_cells, g)
        means = np.where(sizes > 0, sums / np.maximum(sizes, 1), np.inf)
        means.sort(axis=1)
        used = np.minimum(counts, g)
        lo = np.maximum(used - 1, 0) // 2
        hi = used // 2
        rows = np.arange(n_cells)
        median = 0.5 * (means[rows, lo] + means[rows, np.minimum(hi, g - 1)])
        median[counts == 0] = 0.0
        return counts * median


FMF_AGGREGATORS: Mapping[str, type[Aggregator]] = MappingProxyType({
    "mean": MeanAggregator, "trimmed": TrimmedMeanAggregator,
    "median-of-means": MedianOfMeansAggregator})
"""FMF-LDP's aggregators by the name its config and ``--aggregator`` take."""
