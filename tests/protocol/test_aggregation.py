"""Order-free, exact per-cell sums (CellSums) and the plain-mean aggregator built on them."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.aggregation import (
    FIXED_POINT_UNIT,
    CellSums,
    MeanAggregator,
    make_aggregator,
    sum_unit,
)


def _sorted_sum(cells, values, n_cells):
    """The aggregator before issue 12: each cell summed in (cell, value) order."""
    order = np.lexsort((values, cells))
    return np.bincount(cells[order], weights=values[order], minlength=n_cells)


def _bound(cells, values, n_cells, unit):
    """CellSums' documented error: n_c unit / 2 + 2^-51 (sum_c |v| + n_c unit)."""
    n_c = np.bincount(cells, minlength=n_cells)
    abs_c = np.bincount(cells, weights=np.abs(values), minlength=n_cells)
    return n_c * unit / 2 + 2.0**-51 * (abs_c + n_c * unit)


def _exact(cells, values, n_cells):
    """Correctly rounded per-cell sums (math.fsum)."""
    return np.array([math.fsum(values[cells == c]) for c in range(n_cells)])


def _reports(n, n_cells, seed, kind):
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, n_cells, n)
    if kind == "binary":
        values = BinaryMechanism(2.5)(rng.uniform(-1, 1, n), rng)
    elif kind == "piecewise":
        values = PiecewiseMechanism(1.0)(rng.uniform(-1, 1, n), rng).astype(np.float32)
    else:  # float64 over many scales, tiny ones included
        values = rng.standard_normal(n) * 10.0 ** rng.integers(-14, 3, n)
    return cells, np.asarray(values, np.float64)


def test_binary_reports_sum_to_c_times_exact_counts():
    mech = BinaryMechanism(2.5)
    cells, values = _reports(20_000, 37, 0, "binary")
    sums = CellSums.of(cells, values, 37)
    assert sums.unit == mech.scale and sums.magnitude == 20_000 and sums.n == 20_000
    plus = np.bincount(cells[values > 0], minlength=37)
    minus = np.bincount(cells[values < 0], minlength=37)
    np.testing.assert_array_equal(sums.reports, plus + minus)
    np.testing.assert_array_equal(sums.units, plus - minus)
    # C (n+ - n-) in one rounding: the correctly rounded exact sum, bit for bit
    assert np.array_equal(sums.totals(), mech.scale * (plus - minus).astype(np.float64))
    assert np.array_equal(sums.totals(), _exact(cells, values, 37))


@pytest.mark.parametrize("kind", ["binary", "piecewise", "scales"])
def test_totals_are_within_the_documented_bound_of_the_exact_and_the_sorted_sums(kind):
    cells, values = _reports(30_000, 50, 1, kind)
    sums = CellSums.of(cells, values, 50)
    got, exact = sums.totals(), _exact(cells, values, 50)
    bound = _bound(cells, values, 50, sums.unit)
    assert np.all(np.abs(got - exact) <= bound + np.spacing(np.abs(exact)))
    # the sorted float sum is itself within gamma_{n_c} sum_c |v| of the exact one
    n_c = np.bincount(cells, minlength=50)
    gamma = n_c * 2.0**-53 / (1 - n_c * 2.0**-53)
    old_error = gamma * np.bincount(cells, weights=np.abs(values), minlength=50)
    old = _sorted_sum(cells, values, 50)
    assert np.all(np.abs(got - old) <= bound + old_error + np.spacing(np.abs(exact)))
    if kind == "piecewise":
        # float32 values of magnitude >= 2^-9 sit on the 2^-32 grid: the sum is exact
        assert sums.unit == FIXED_POINT_UNIT
        on_grid = np.abs(values) >= 2.0**-9
        exact_grid = CellSums.of(cells[on_grid], values[on_grid], 50)
        assert np.array_equal(exact_grid.totals(),
                              _exact(cells[on_grid], values[on_grid], 50))


@st.composite
def _report_lists(draw):
    n_cells = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["binary", "real"]))
    n = draw(st.integers(0, 40))
    cells = draw(st.lists(st.integers(0, n_cells - 1), min_size=n, max_size=n))
    if kind == "binary":
        signs = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        values = [1.3 if s else -1.3 for s in signs]
    else:
        values = draw(st.lists(st.floats(-1e6, 1e6, allow_subnormal=True), min_size=n,
                               max_size=n))
    return n_cells, np.array(cells, np.int64), np.array(values, np.float64)


@settings(max_examples=150, deadline=None)
@given(_report_lists(), st.randoms(use_true_random=False), st.data())
def test_sums_ignore_report_order_and_batching(reports, random, data):
    n_cells, cells, values = reports
    whole = CellSums.of(cells, values, n_cells)
    order = list(range(cells.size))
    random.shuffle(order)
    permuted = CellSums.of(cells[order], values[order], n_cells)
    assert np.array_equal(permuted.units, whole.units)
    assert np.array_equal(permuted.totals(), whole.totals())
    assert np.array_equal(MeanAggregator().cell_totals(cells[order], values[order], n_cells),
                          whole.totals())
    # cut the permuted reports into parts, sum each in the whole's unit, merge in any order
    cuts = sorted(data.draw(st.lists(st.integers(0, cells.size), max_size=4)))
    bounds = [0, *cuts, cells.size]
    parts = [CellSums.of(cells[order][a:b], values[order][a:b], n_cells, whole.unit)
             for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    random.shuffle(parts)
    merged = CellSums.zeros(n_cells, whole.unit)
    for part in parts:
        merged = merged + part
    assert np.array_equal(merged.units, whole.units)
    assert np.array_equal(merged.reports, whole.reports)
    assert merged.magnitude == whole.magnitude and merged.n == cells.size
    assert np.array_equal(merged.totals(), whole.totals())


def test_sum_unit():
    assert sum_unit(np.array([1.5, -1.5, 1.5])) == 1.5
    assert sum_unit(np.array([1.5, -1.5, 0.5])) == FIXED_POINT_UNIT
    assert sum_unit(np.zeros(4)) == FIXED_POINT_UNIT
    assert sum_unit(np.array([])) == FIXED_POINT_UNIT
    # a billion-scale sum takes a coarser power-of-two grid that still fits int64
    big = np.linspace(-1e4, 1e4, 10**6)
    unit = sum_unit(big)
    assert unit > FIXED_POINT_UNIT and math.log2(unit).is_integer()
    assert big.size * (1e4 / unit + 1) <= 2.0**62 < big.size * (1e4 / (unit / 2) + 1)
    with pytest.raises(DprecError, match="do not fit a fixed-point sum"):
        sum_unit(np.array([1e300, 1.0]))
    with pytest.raises(DprecError, match="must be finite"):
        sum_unit(np.array([1.0, np.inf]))


def test_merges_that_could_overflow_or_mix_units_are_refused():
    a = CellSums.of(np.array([0]), np.array([1.0]), 2, unit=0.5)
    with pytest.raises(DprecError, match="same cells in the same unit"):
        a + CellSums.zeros(2, 0.25)
    with pytest.raises(DprecError, match="same cells in the same unit"):
        a + CellSums.zeros(3, 0.5)
    huge = CellSums(np.array([2**62]), np.array([1]), 1.0, 2**62)
    assert (huge + CellSums.zeros(1, 1.0)).magnitude == 2**62
    with pytest.raises(DprecError, match="could overflow int64"):
        huge + huge
    with pytest.raises(DprecError, match="could overflow an int64 sum"):
        CellSums.of(np.array([0, 1]), np.array([1.0, 3.0]), 2, unit=2.0**-62)


def test_bad_input_is_refused_before_summing():
    with pytest.raises(DprecError, match=r"cells must be in \[0, 3\), got 3 at report 1"):
        CellSums.of(np.array([0, 3]), np.array([1.0, 1.0]), 3)
    with pytest.raises(DprecError, match=r"got -1 at report 0"):
        CellSums.of(np.array([-1]), np.array([1.0]), 3)
    with pytest.raises(DprecError, match="cells must be integers"):
        CellSums.of(np.array([0.0]), np.array([1.0]), 3)
    with pytest.raises(DprecError, match="equal length"):
        CellSums.of(np.array([0, 1]), np.array([1.0]), 3)
    with pytest.raises(DprecError, match="must be finite"):
        CellSums.of(np.array([0, 1]), np.array([1.0, np.nan]), 3, unit=0.5)
    with pytest.raises(DprecError, match="unit must be a finite number > 0"):
        CellSums.zeros(3, 0.0)
    with pytest.raises(DprecError, match="n_cells must be an integer >= 0"):
        CellSums.zeros(-1)
    empty = CellSums.of(np.array([], np.int64), np.array([]), 4)
    assert np.array_equal(empty.totals(), np.zeros(4)) and empty.n == 0


def test_the_mean_aggregator_is_found_by_name():
    agg = make_aggregator("mean")
    cells, values = _reports(500, 9, 3, "binary")
    assert np.array_equal(agg.cell_totals(cells, values, 9), CellSums.of(cells, values, 9)
                          .totals())
    with pytest.raises(DprecError, match="aggregator must be one of"):
        make_aggregator("median")


def test_an_aggregator_with_one_parameter_reads_and_writes_it_as_name_colon_arg():
    class Scaled(MeanAggregator):
        name = "scaled"
        argument = ("factor", float)

        def __init__(self, factor: float = 2.0) -> None:
            self.factor = float(factor)

    table = {"scaled": Scaled, "mean": MeanAggregator}
    assert make_aggregator("scaled", table).spec == "scaled:2.0"
    agg = make_aggregator("scaled:0.25", table)
    assert agg.factor == 0.25 and make_aggregator(agg.spec, table).spec == "scaled:0.25"
    with pytest.raises(DprecError, match=r"scaled:ARG needs a float, got 'x'"):
        make_aggregator("scaled:x", table)
    with pytest.raises(DprecError, match="aggregator mean takes no argument"):
        make_aggregator("mean:3", table)
