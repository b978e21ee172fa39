"""How an untrusted server combines one round's reports: the hook for robust aggregation.

A server hands what reached it to an :class:`Aggregator`: a factor server asks it for the
per-cell totals of the (item, factor) reports (:meth:`Aggregator.cell_totals`), a similarity
server for the uploads that count (:meth:`Aggregator.uploads`). The first aggregator is the
plain mean (:class:`MeanAggregator`); robust ones plug in here, each owned by its system (in
its folder's ``defences.py``), and the services choose one by name from the system's table
(its Serving's ``aggregators``).

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

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import numba
import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import Message

__all__ = [
    "AGGREGATORS",
    "FIXED_POINT_BITS",
    "FIXED_POINT_UNIT",
    "Aggregator",
    "CellSums",
    "MeanAggregator",
    "aggregator_argument",
    "make_aggregator",
    "planned_unit",
    "report_arrays",
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


def report_arrays(cells: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cells, values as contiguous float64): DprecError unless they are 1-D of equal length
    and the cells integers. The range of the cells and the values' finiteness are the
    caller's to check."""
    cells_a = np.asarray(cells)
    vals = np.ascontiguousarray(values, np.float64)
    if cells_a.ndim != 1 or vals.shape != cells_a.shape:
        raise DprecError(f"cells and values must be 1-D of equal length, got shapes "
                         f"{cells_a.shape} and {vals.shape}")
    if cells_a.size and not np.issubdtype(cells_a.dtype, np.integer):
        raise DprecError(f"cells must be integers, got dtype {cells_a.dtype}")
    return cells_a, vals


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
        cells_a, vals = report_arrays(cells, values)
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
    argument: ClassVar[tuple[str, type] | None] = None
    """The one parameter ``NAME:ARG`` sets, as (attribute, type): ARG is the constructor's
    first argument and the attribute holds it; None (the plain kinds): no parameter."""

    @classmethod
    def from_argument(cls, argument: str | None) -> Aggregator:
        """The aggregator from ``name[:ARG]``'s ARG (None: none given, the defaults)."""
        if argument is None:
            return cls()
        if cls.argument is None:
            raise DprecError(f"aggregator {cls.name} takes no argument, got {argument!r}")
        return cls(aggregator_argument(argument, cls.name, cls.argument[1]))

    @property
    def spec(self) -> str:
        """The name with its parameter, as :func:`make_aggregator` reads it back."""
        if self.argument is None:
            return self.name
        return f"{self.name}:{getattr(self, self.argument[0])!r}"

    @abstractmethod
    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        """Per-cell total of the report values, float64 ``(n_cells,)``.

        ``cells[r]`` (int64 in ``[0, n_cells)``) and ``values[r]`` (float64) are report r;
        the server divides by the number of reports. Must not depend on the reports' order.
        """

    def uploads(self, batches: Iterable[_Upload]) -> Iterator[_Upload]:
        """The uploaded vectors that count (all of them for the plain mean)."""
        yield from batches

    def for_uploads(self, law: Any) -> Aggregator:
        """This aggregator for uploads of the public law ``law`` (a server calls it once with
        its uploads' law); the aggregators that do not look at uploads return themselves."""
        return self


class MeanAggregator(Aggregator):
    """The plain mean: every report counts once; cells are summed exactly in integers
    (:class:`CellSums` in the unit :func:`sum_unit` picks), so order does not matter."""

    name: ClassVar[str] = "mean"

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        return CellSums.of(cells, values, n_cells).totals()


def aggregator_argument(argument: str, name: str, kind: type) -> Any:
    """``NAME:ARG``'s ARG as ``kind`` (a clear error names the aggregator)."""
    try:
        return kind(argument)
    except ValueError:
        raise DprecError(f"{name}:ARG needs a {kind.__name__}, got {argument!r}") from None


AGGREGATORS: Mapping[str, type[Aggregator]] = MappingProxyType({"mean": MeanAggregator})
"""The aggregators of every system; a system's robust ones are its own (its Serving's
``aggregators``: DPLCF's upload screens, FMF-LDP's per-cell estimates)."""


def make_aggregator(name: str, known: Mapping[str, type[Aggregator]] | None = None
                    ) -> Aggregator:
    """The aggregator ``name`` or ``name:ARG`` (``trimmed:0.1``) among ``known`` (a system's
    table; None: :data:`AGGREGATORS`); a clear error lists the known names."""
    table = AGGREGATORS if known is None else known
    base, _, argument = str(name).partition(":")
    try:
        cls = table[base]
    except KeyError:
        raise DprecError(f"aggregator must be one of {sorted(table)} (with :ARG for the "
                         f"robust ones), got {name!r}") from None
    return cls.from_argument(argument if ":" in str(name) else None)
