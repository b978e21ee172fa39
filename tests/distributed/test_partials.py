import numpy as np
import pytest

from dprec.distributed.partials import FixedPoint, Pieces, add_cells, tree_sum
from dprec.errors import DprecError


def test_fixed_point_sums_are_exact_in_any_order_and_close_to_the_real_sum():
    rng = np.random.default_rng(0)
    values = rng.uniform(-3.0, 3.0, 10_000)
    fp = FixedPoint.for_sum(values.size, 3.0)
    enc = fp.encode(values)
    total = enc.sum()
    assert enc[rng.permutation(values.size)].sum() == total
    assert abs(fp.decode(np.array([total]))[0] - values.sum()) <= values.size * 2.0**-fp.bits
    # the bound leaves room: n values at the bound do not overflow
    assert (values.size * (3.0 * 2.0**fp.bits + 0.5)) < 2**62


def test_fixed_point_refuses_sums_without_room():
    with pytest.raises(DprecError, match="fractional bits"):
        FixedPoint.for_sum(2**50, 1e6)


def test_add_cells_matches_a_dense_scatter():
    rng = np.random.default_rng(1)
    cells = rng.integers(0, 50, 1000)
    vals = rng.integers(-(2**40), 2**40, 1000)
    out = np.zeros(50, np.int64)
    add_cells(out, cells, vals)
    ref = np.zeros(50, np.int64)
    np.add.at(ref, cells, vals)
    assert np.array_equal(out, ref)


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
