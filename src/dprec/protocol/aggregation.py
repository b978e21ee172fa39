"""How an untrusted server combines one round's reports: the hook for robust aggregation.

Both servers hand what reached them to an :class:`Aggregator`. FMF-LDP's
:class:`~dprec.systems.fmf.server.FactorServer` asks it for the per-cell totals of the
(item, factor) reports (:meth:`Aggregator.cell_totals`), DPLCF's
:class:`~dprec.systems.dplcf.server.SimilarityServer` for the uploads that count
(:meth:`Aggregator.uploads`). The first aggregator is the plain mean
(:class:`MeanAggregator`); robust ones (trimmed or median-of-means totals, screening of
uploads) plug in here, and the services choose one by name (:data:`AGGREGATORS`).

Order invariance. A shuffling proxy forwards reports in an order drawn from its own
generator: seeded in the simulation, a CSPRNG in a deployment. The same client randomness
therefore hands the server the same multiset of reports in different orders, split into
different batches. Floating-point sums depend on order, so :class:`MeanAggregator` sums in
integers (:class:`CellSums`): each report's value becomes a whole number of ``unit``s, the
per-cell sums are int64, exact in any order and any split into parts, and the real total is
formed once at the end. Its totals are therefore a function of the multiset of reports
alone, the in-process and HTTP runs of a protocol give the same bits, and partial sums of
shards (a Ray reduction, say) merge to the same bits in any grouping. The unit
(:func:`sum_unit`) is the common magnitude C when every value is +-C (the binary mechanism:
the sums are exact counts n+ - n-, and the total C (n+ - n-) is rounded once), else the grid
2^-32 (:data:`FIXED_POINT_UNIT`; float32 reports of magnitude >= 2^-9 land on it exactly).
DPLCF's pair counts are sums of 0/1 products, exact in any order and any batching.
"""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

import numba
import numpy as np

from dprec.errors import DprecError
from dprec.protocol.bit_screens import (
    BitLaw,
    flagged_uploads,
    ones_range,
    screen_threshold,
)
from dprec.protocol.messages import Message

__all__ = [
    "AGGREGATORS",
    "FIXED_POINT_BITS",
    "FIXED_POINT_UNIT",
    "Aggregator",
    "BitRangeAggregator",
    "BitScreenAggregator",
    "CellSums",
    "MeanAggregator",
    "MedianOfMeansAggregator",
    "RangeScreenAggregator",
    "TrimmedMeanAggregator",
    "make_aggregator",
    "planned_unit",
    "sum_unit",
]

FIXED_POINT_BITS = 32
FIXED_POINT_UNIT = 2.0**-FIXED_POINT_BITS
"""The fixed-point grid of real-valued reports: a report is rounded to a multiple of 2^-32
(error <= 2^-33); int64 then holds a sum of magnitude up to 2^30 (a billion reports of
magnitude 1) before :func:`sum_unit` takes a coarser grid."""
_INT64_BUDGET = 2.0**62  # every |partial sum| stays below this, so int64 never overflows
_MIN_FIXED_POINT_BITS = 16
_Upload = TypeVar("_Upload", bound=Message)  # one system's upload batch


@numba.njit(cache=True)
def _scan(values):  # pragma: no cover - compiled
    """(all finite, max |v|, every |v| equal) in one pass."""
    top = 0.0
    same = True
    first = abs(values[0]) if values.size else 0.0
    for r in range(values.size):
        a = abs(values[r])
        if not a < np.inf:  # inf or NaN
            return False, 0.0, False
        if a > top:
            top = a
        if a != first:
            same = False
    return True, top, same


@numba.njit(cache=True)
def _fold(cells, values, unit, units, reports):  # pragma: no cover - compiled
    """units[c] += rint(v / unit), reports[c] += 1 per report; returns (sum of |units|,
    the index of the first cell out of range or -1)."""
    n_cells = units.size
    magnitude = 0
    for r in range(cells.size):
        c = cells[r]
        if c < 0 or c >= n_cells:
            return magnitude, r
        q = np.int64(np.rint(values[r] / unit))
        units[c] += q
        reports[c] += 1
        magnitude += abs(q)
    return magnitude, -1


def sum_unit(values: np.ndarray) -> float:
    """The unit :class:`MeanAggregator` sums ``values`` in (a function of their multiset).

    C when every |v| = C > 0 (the binary mechanism's +-C: exact, each report is +-1 unit);
    else :func:`planned_unit` of (number of values, max |v|).
    """
    arr = np.ascontiguousarray(values, np.float64)
    if arr.ndim != 1:
        raise DprecError(f"values must be 1-D, got {arr.ndim}-D")
    finite, top, same = _scan(arr)
    if not finite:
        raise DprecError("report values must be finite")
    if same and top > 0:
        return float(top)
    return planned_unit(arr.size, top)


def planned_unit(n_reports: int, bound: float) -> float:
    """The grid for a sum of up to ``n_reports`` values of magnitude at most ``bound``.

    :data:`FIXED_POINT_UNIT`, or the largest power of two 2^-b (b >= 16) under which the
    sum cannot overflow int64 (n (bound 2^b + 1) <= 2^62) when the 2^-32 grid could. Parts
    summed apart (shards) agree on it before any report exists by passing the planned
    maximum; any grouping of their int64 sums then stays below 2^62.
    """
    if (isinstance(n_reports, bool) or int(n_reports) != n_reports or n_reports < 0
            or not (math.isfinite(bound) and bound >= 0)):
        raise DprecError(f"need n_reports >= 0 and a finite bound >= 0, got {n_reports}, "
                         f"{bound}")
    n, top = int(n_reports), float(bound)
    if n * (top * 2.0**FIXED_POINT_BITS + 1) <= _INT64_BUDGET:
        return FIXED_POINT_UNIT
    bits = math.floor(math.log2((_INT64_BUDGET / n - 1) / top))
    while bits >= _MIN_FIXED_POINT_BITS and n * (top * 2.0**bits + 1) > _INT64_BUDGET:
        bits -= 1  # guard the log's rounding
    if bits < _MIN_FIXED_POINT_BITS:
        raise DprecError(f"{n} reports of magnitude up to {top:g} do not fit a fixed-point sum "
                         f"in int64 with {_MIN_FIXED_POINT_BITS} fractional bits")
    return 2.0**-bits


@dataclass(frozen=True, eq=False)
class CellSums:
    """Per-cell sums of report values in integers: exact, order-free, mergeable.

    A report (cell c, value v) adds q = rint(v / unit) to ``units[c]`` and 1 to
    ``reports[c]`` (both int64). Integer addition is exact, so the sums do not depend on the
    reports' order or on how they were split into parts merged with ``+`` (parts must share
    ``unit``; ``magnitude``, the sum of |q| over all reports, bounds every partial sum, and a
    merge past 2^63 - 1 is refused, so no grouping overflows). :meth:`totals` forms the real
    sums once, units[c] * unit in float64.

    Error (n_c reports in cell c): |totals[c] - sum_c v| <= n_c unit / 2
    + 2^-51 (sum_c |v| + n_c unit), from |q unit - v| <= unit / 2 + 2^-53 |v| per report (the
    division is exact for a power-of-two unit, and v / C = +-1 exactly for v = +-C) and the
    final int-to-float conversion and product. For the binary mechanism (unit C, q = +-1)
    the total is C (n+ - n-) correctly rounded, the exact sum of the reports.
    """

    units: np.ndarray
    """int64 ``(n_cells,)``: sum over the cell's reports of rint(v / unit)."""
    reports: np.ndarray
    """int64 ``(n_cells,)``: number of reports in each cell."""
    unit: float
    """The value of one unit (C, or a power of two such as :data:`FIXED_POINT_UNIT`)."""
    magnitude: int
    """Sum of |rint(v / unit)| over all reports: a bound on every partial sum (<= 2^63 - 1)."""

    @staticmethod
    def _check_unit(unit: float) -> float:
        if (isinstance(unit, bool) or not isinstance(unit, (int, float, np.floating))
                or not math.isfinite(unit) or unit <= 0):
            raise DprecError(f"unit must be a finite number > 0, got {unit!r}")
        return float(unit)

    @classmethod
    def zeros(cls, n_cells: int, unit: float = FIXED_POINT_UNIT) -> CellSums:
        """No reports yet: the neutral part of a merge."""
        if isinstance(n_cells, bool) or int(n_cells) != n_cells or n_cells < 0:
            raise DprecError(f"n_cells must be an integer >= 0, got {n_cells}")
        return cls(np.zeros(int(n_cells), np.int64), np.zeros(int(n_cells), np.int64),
                   cls._check_unit(unit), 0)

    @classmethod
    def of(cls, cells: np.ndarray, values: np.ndarray, n_cells: int,
           unit: float | None = None) -> CellSums:
        """The sums of the reports (cells[r], values[r]); ``unit`` defaults to
        :func:`sum_unit` of the values. Parts to be merged must pass the same ``unit``.

        Refuses, before summing: cells that are not integers in [0, n_cells), shapes that
        differ, non-finite values, and reports whose sum of |v| / unit could reach 2^62.
        """
        cells_a = np.asarray(cells)
        vals = np.ascontiguousarray(values, np.float64)
        if cells_a.ndim != 1 or vals.shape != cells_a.shape:
            raise DprecError(f"cells and values must be 1-D of equal length, got shapes "
                             f"{cells_a.shape} and {vals.shape}")
        if cells_a.size and not np.issubdtype(cells_a.dtype, np.integer):
            raise DprecError(f"cells must be integers, got dtype {cells_a.dtype}")
        out = cls.zeros(n_cells, FIXED_POINT_UNIT if unit is None else unit)
        if unit is None:
            unit = sum_unit(vals)
            out = cls(out.units, out.reports, unit, 0)
        elif cells_a.size:
            finite, top, _ = _scan(vals)
            if not finite:
                raise DprecError("report values must be finite")
            if vals.size * (top / out.unit + 1) > _INT64_BUDGET:
                raise DprecError(f"{vals.size} reports of magnitude up to {top:g} in units of "
                                 f"{out.unit:g} could overflow an int64 sum")
        if not cells_a.size:
            return out
        magnitude, bad = _fold(np.ascontiguousarray(cells_a, np.int64), vals, out.unit,
                               out.units, out.reports)
        if bad >= 0:
            raise DprecError(f"cells must be in [0, {out.units.size}), got {cells_a[bad]} at "
                             f"report {bad}")
        return cls(out.units, out.reports, out.unit, int(magnitude))

    @property
    def n(self) -> int:
        """Number of reports summed."""
        return int(self.reports.sum())

    def __add__(self, other: CellSums) -> CellSums:
        """The sums of both parts' reports (exact; any grouping gives the same bits)."""
        if not isinstance(other, CellSums):
            return NotImplemented
        if other.unit != self.unit or other.units.shape != self.units.shape:
            raise DprecError(f"only sums over the same cells in the same unit merge, got "
                             f"{self.units.size} cells in units of {self.unit!r} and "
                             f"{other.units.size} in units of {other.unit!r}")
        magnitude = self.magnitude + other.magnitude
        if magnitude > 2**63 - 1:
            raise DprecError(f"merged sums could overflow int64 (sum of |units| {magnitude})")
        return CellSums(self.units + other.units, self.reports + other.reports, self.unit,
                        magnitude)

    def totals(self) -> np.ndarray:
        """float64 ``(n_cells,)``: units * unit (one rounding each)."""
        return self.units.astype(np.float64) * self.unit


class Aggregator(ABC):
    """What the server makes of one round's reports (plain mean, or a robust variant)."""

    name: ClassVar[str]

    @classmethod
    def from_argument(cls, argument: str | None) -> Aggregator:
        """The aggregator from ``name[:ARG]``'s ARG (None: none given; the plain kinds take
        none)."""
        if argument is not None:
            raise DprecError(f"aggregator {cls.name} takes no argument, got {argument!r}")
        return cls()

    @property
    def spec(self) -> str:
        """The name with its parameters, as :func:`make_aggregator` reads it back."""
        return self.name

    @abstractmethod
    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        """Per-cell total of the report values, float64 ``(n_cells,)``.

        ``cells[r]`` (int64 in ``[0, n_cells)``) and ``values[r]`` (float64) are report r;
        the server divides by the number of reports. Must not depend on the reports' order.
        """

    def uploads(self, batches: Iterable[_Upload]) -> Iterator[_Upload]:
        """The uploaded vectors that count (all of them for the plain mean); for DPLCF the
        batches are :class:`~dprec.systems.dplcf.messages.ObfuscatedBits`."""
        yield from batches

    def for_uploads(self, law: BitLaw) -> Aggregator:
        """This aggregator for bit uploads of the public law ``law`` (DPLCF's server calls
        it once); the aggregators that do not look at uploads return themselves."""
        return self


class MeanAggregator(Aggregator):
    """The plain mean: every report counts once; cells are summed exactly in integers
    (:class:`CellSums` in the unit :func:`sum_unit` picks), so order does not matter."""

    name: ClassVar[str] = "mean"

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        return CellSums.of(cells, values, n_cells).totals()


class _CellEstimateAggregator(Aggregator):
    """A robust per-cell estimate of real-valued reports (FMF-LDP's cells): it has nothing to
    say about DPLCF's bit uploads, so a DPLCF server refuses it instead of running the plain
    mean under its name."""

    def for_uploads(self, law: BitLaw) -> Aggregator:
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
    cells_a = np.asarray(cells)
    vals = np.ascontiguousarray(values, np.float64)
    if cells_a.ndim != 1 or vals.shape != cells_a.shape:
        raise DprecError(f"cells and values must be 1-D of equal length, got shapes "
                         f"{cells_a.shape} and {vals.shape}")
    if cells_a.size and not np.issubdtype(cells_a.dtype, np.integer):
        raise DprecError(f"cells must be integers, got dtype {cells_a.dtype}")
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

    def __init__(self, trim: float = 0.1) -> None:
        if isinstance(trim, bool) or not (isinstance(trim, (int, float))
                                          and 0.0 <= trim < 0.5):
            raise DprecError(f"trim must be a fraction in [0, 0.5), got {trim!r}")
        self.trim = float(trim)

    @classmethod
    def from_argument(cls, argument: str | None) -> TrimmedMeanAggregator:
        """``trimmed`` (trim 0.1) or ``trimmed:FRACTION``."""
        return cls() if argument is None else cls(_number(argument, cls.name, float))

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.trim!r}"

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

    def __init__(self, groups: int = 5, key: bytes = b"") -> None:
        if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
            raise DprecError(f"groups must be an integer >= 1, got {groups!r}")
        self.groups = int(groups)
        self.key = bytes(key)

    @classmethod
    def from_argument(cls, argument: str | None) -> MedianOfMeansAggregator:
        """``median-of-means`` (5 groups) or ``median-of-means:GROUPS``."""
        return cls() if argument is None else cls(_number(argument, cls.name, int))

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.groups}"

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


class _BitUploadAggregator(Aggregator):
    """An aggregator that screens DPLCF's bit uploads; FMF-LDP's cells are not for it."""

    rate: float
    law: BitLaw | None
    refused: int

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        raise DprecError(f"the {self.name} aggregator screens DPLCF's bit uploads; for "
                         f"FMF-LDP's cell reports use mean, trimmed or median-of-means")

    def _law(self) -> BitLaw:
        if self.law is None:
            raise DprecError(f"the {self.name} aggregator needs the uploads' public law "
                             f"(DPLCF's SimilarityServer gives it through for_uploads)")
        return self.law


class BitRangeAggregator(_BitUploadAggregator):
    """Refuse DPLCF uploads whose number of ones no honest client would send at the stated
    rate (issue 26 §2; :func:`~dprec.protocol.bit_screens.ones_range`): an honest upload of
    a history of at most L items is refused with probability <= ``rate`` (default 1e-9).
    Uploads inside the range pass untouched, so a round with no refusal counts exactly the
    uploads of :class:`MeanAggregator` (the same pair counts, bit for bit).

    Privacy: the range depends on public parameters only (N, p, q, L) and the decision on
    the upload alone: post-processing, every guarantee unchanged.
    """

    name: ClassVar[str] = "dplcf-range"

    def __init__(self, rate: float = 1e-9, law: BitLaw | None = None) -> None:
        if isinstance(rate, bool) or not (isinstance(rate, (int, float)) and 0 < rate < 1):
            raise DprecError(f"{self.name}: the false-refusal rate must be in (0, 1), got "
                             f"{rate!r}")
        self.rate = float(rate)
        self.law = law
        self.refused = 0
        """Uploads refused so far."""

    @classmethod
    def from_argument(cls, argument: str | None) -> BitRangeAggregator:
        """``dplcf-range`` (rate 1e-9) or ``dplcf-range:RATE``."""
        return cls() if argument is None else cls(_number(argument, cls.name, float))

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.rate!r}"

    def for_uploads(self, law: BitLaw) -> BitRangeAggregator:
        return type(self)(self.rate, law)

    def uploads(self, batches: Iterable[_Upload]) -> Iterator[_Upload]:
        bounds = ones_range(self._law(), self.rate)
        for m in batches:
            keep = bounds.admits(m.packed)  # type: ignore[attr-defined]
            if keep.all():
                yield m
                continue
            self.refused += int((~keep).sum())
            if keep.any():
                yield replace(m, packed=m.packed[keep])  # type: ignore[attr-defined, type-var]


class BitScreenAggregator(_BitUploadAggregator):
    """Frequent-itemset screening of DPLCF uploads (issue 26 §4; Cao, Jia & Gong, USENIX
    Security 2021, Sec. 6): every upload containing a set of ``z`` items held by more
    uploads than honest flips make plausible at ``rate``
    (:func:`~dprec.protocol.bit_screens.screen_threshold`) is dropped. With no attacker,
    P(any upload dropped) <= rate; with no upload flagged, the batches pass untouched (the
    mean's counts, bit for bit). Holds the whole round's uploads (n x N bits, unpacked to one
    byte each) before the first is counted.

    Privacy: a function of the uploads the server holds and of public parameters
    (post-processing): every guarantee unchanged.
    """

    name: ClassVar[str] = "dplcf-screen"
    range_first: ClassVar[bool] = False

    def __init__(self, z: int = 20, rate: float = 1e-9, law: BitLaw | None = None,
                 seeds: int = 200) -> None:
        if isinstance(z, bool) or int(z) != z or z < 2:
            raise DprecError(f"{self.name}: the itemset size z must be an integer >= 2, got "
                             f"{z!r}")
        if isinstance(rate, bool) or not (isinstance(rate, (int, float)) and 0 < rate < 1):
            raise DprecError(f"{self.name}: the false-drop rate must be in (0, 1), got "
                             f"{rate!r}")
        self.z = int(z)
        self.rate = float(rate)
        self.law = law
        self.seeds = int(seeds)
        self.refused = 0
        """Uploads refused by the validity range (``dplcf-range+screen``)."""
        self.dropped = 0
        """Uploads dropped by the screen."""
        self.itemsets: list[np.ndarray] = []
        """The flagged z-itemsets of the last round."""

    @classmethod
    def from_argument(cls, argument: str | None) -> BitScreenAggregator:
        """``NAME`` (z = 20) or ``NAME:Z``."""
        return cls() if argument is None else cls(_number(argument, cls.name, int))

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.z}"

    def for_uploads(self, law: BitLaw) -> BitScreenAggregator:
        return type(self)(self.z, self.rate, law, self.seeds)

    def uploads(self, batches: Iterable[_Upload]) -> Iterator[_Upload]:
        law = self._law()
        held = list(batches)
        if not held:
            return
        packed = np.concatenate([m.packed for m in held])  # type: ignore[attr-defined]
        keep = np.ones(len(packed), bool)
        if self.range_first:
            keep = ones_range(law, self.rate).admits(packed)
            self.refused += int((~keep).sum())
        threshold = screen_threshold(int(keep.sum()), law.n_items, law.p, self.z, self.rate)
        bits = np.unpackbits(packed[keep], axis=1, count=law.n_items).astype(bool)
        flagged, self.itemsets = flagged_uploads(bits, self.z, threshold, self.seeds)
        self.dropped += int(flagged.sum())
        keep[np.flatnonzero(keep)[flagged]] = False
        if keep.all():
            yield from held
            return
        start = 0
        for m in held:
            rows = keep[start:start + len(m.packed)]  # type: ignore[attr-defined]
            start += len(m.packed)  # type: ignore[attr-defined]
            if rows.all():
                yield m
            elif rows.any():
                yield replace(m, packed=m.packed[rows])  # type: ignore[attr-defined, type-var]


class RangeScreenAggregator(BitScreenAggregator):
    """:class:`BitRangeAggregator`'s refusal, then :class:`BitScreenAggregator`'s screen
    on the uploads left (each at ``rate``: an honest upload is lost with probability
    <= 2 rate)."""

    name: ClassVar[str] = "dplcf-range+screen"
    range_first: ClassVar[bool] = True


def _number(argument: str, name: str, kind: type) -> Any:
    try:
        return kind(argument)
    except ValueError:
        raise DprecError(f"{name}:ARG needs a {kind.__name__}, got {argument!r}") from None


AGGREGATORS: dict[str, type[Aggregator]] = {
    "mean": MeanAggregator, "trimmed": TrimmedMeanAggregator,
    "median-of-means": MedianOfMeansAggregator, "dplcf-range": BitRangeAggregator,
    "dplcf-screen": BitScreenAggregator, "dplcf-range+screen": RangeScreenAggregator}
"""Aggregators by the name the services' ``--aggregator`` option takes."""


def make_aggregator(name: str) -> Aggregator:
    """The aggregator ``name`` or ``name:ARG`` (``trimmed:0.1``, ``median-of-means:5``);
    a clear error lists the known names."""
    base, _, argument = str(name).partition(":")
    try:
        cls = AGGREGATORS[base]
    except KeyError:
        raise DprecError(f"aggregator must be one of {sorted(AGGREGATORS)} (with :ARG for "
                         f"trimmed and median-of-means), got {name!r}") from None
    return cls.from_argument(argument if ":" in str(name) else None)
