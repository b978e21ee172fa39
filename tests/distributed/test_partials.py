import numpy as np
import pytest

from dprec.distributed.partials import tree_sum
from dprec.errors import DprecError
from dprec.protocol.aggregation import FIXED_POINT_UNIT, CellSums, planned_unit, sum_unit
from dprec.protocol.sharding import Pieces


def test_planned_unit_bounds_every_grouping_and_matches_the_in_process_unit():
    # the unit a shard is given before the run is the one the in-process sum picks
    rng = np.random.default_rng(0)
    values = rng.uniform(-3.0, 3.0, 10_000)
    assert planned_unit(values.size, 3.0) == sum_unit(values) == FIXED_POINT_UNIT
    unit = planned_unit(2**40, 3.0)  # 2^40 reports: the 2^-32 grid could overflow
    assert unit > FIXED_POINT_UNIT and 2**40 * (3.0 / unit + 1) <= 2**62
    with pytest.raises(DprecError, match="fractional bits"):
        planned_unit(2**50, 1e6)
    with pytest.raises(DprecError, match="n_reports"):
        planned_unit(-1, 1.0)


def test_cell_sums_of_shards_reduce_to_the_in_process_sum_bit_for_bit():
    rng = np.random.default_rng(1)
    cells = rng.integers(0, 50, 3000)
    vals = rng.uniform(-2.0, 2.0, 3000)
    whole = CellSums.of(cells, vals, 50)
    unit = planned_unit(3000, 2.0)
    parts = [CellSums.of(cells[s], vals[s], 50, unit)
             for s in (slice(0, 1000), slice(1000, 1700), slice(1700, 3000))]
    pieces = Pieces((("units", (50,), "int64"), ("reports", (50,), "int64")))
    split = [pieces.split({"units": p.units, "reports": p.reports}) for p in parts]
    reduced = pieces.join([tree_sum([s[i] for s in split[::-1]]) for i in range(2)])
    assert np.array_equal(reduced["units"], whole.units)
    assert np.array_equal(reduced["reports"], whole.reports)


def test_pieces_round_trip_and_reduce_piecewise():
    pieces = Pieces((("m", (10, 6), "int32"), ("n", (1,), "int64")), max_bytes=3 * 6 * 4)
    assert pieces.n_pieces == 4 + 1
    rng = np.random.default_rng(2)
    parts = [{"m": rng.integers(0, 9, (10, 6)).astype(np.int32),
              "n": np.array([i], np.int64)} for i in range(5)]
    split = [pieces.split(p) for p in parts]
    summed = pieces.join([tree_sum([s[i] for s in split]) for i in range(pieces.n_pieces)])
    assert np.array_equal(summed["m"], sum(p["m"] for p in parts))
    assert summed["n"][0] == 10
    with pytest.raises(DprecError, match="partial 'm'"):
        pieces.split({"m": np.zeros((9, 6), np.int32), "n": np.zeros(1, np.int64)})
