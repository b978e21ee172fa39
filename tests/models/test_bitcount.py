"""Bit-packed pair counts equal the integer Gram matrix X^T X exactly, for every shape."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg.blas import ssyrk

from dprec.errors import DprecError
from dprec.models.bitcount import BitGram, and_popcount_gram, pack_columns, popcount


def _bits(rng, n_rows, n_cols, density=0.3):
    return (rng.random((n_rows, n_cols)) < density).astype(np.uint8)


def _syrk_upper(x):
    """Today's server path: float32 BLAS syrk on the unpacked bits (upper triangle)."""
    c = np.zeros((x.shape[1], x.shape[1]), np.float32, order="F")
    if x.shape[0]:
        c = ssyrk(1.0, x.astype(np.float32).T, beta=1.0, c=c, trans=0, lower=0, overwrite_c=1)
    return np.triu(c).astype(np.int64)


def _gram(x, batches, buffer_rows=None):
    g = BitGram(x.shape[1], buffer_rows)
    for part in np.array_split(x, batches) if batches else [x]:
        g.add(np.packbits(part, axis=1))
    return g


@pytest.mark.parametrize("n_rows", [0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 129])
@pytest.mark.parametrize("n_cols", [1, 2, 3, 4, 5, 8, 9, 63, 64, 65, 130])
def test_counts_equal_syrk_on_odd_shapes(n_rows, n_cols):
    x = _bits(np.random.default_rng(n_rows * 1000 + n_cols), n_rows, n_cols)
    g = _gram(x, batches=0)
    G = g.gram()
    assert G.dtype == np.int32 and G.shape == (n_cols, n_cols)
    np.testing.assert_array_equal(np.triu(G), _syrk_upper(x))
    np.testing.assert_array_equal(G, x.T.astype(np.int64) @ x)  # symmetric, diagonal = sums
    assert g.n_rows == n_rows


@settings(max_examples=60, deadline=None)
@given(n_rows=st.integers(0, 300), n_cols=st.integers(1, 80), batches=st.integers(1, 9),
       buffer_rows=st.sampled_from([None, 1, 64, 100, 192]),
       density=st.sampled_from([0.0, 0.05, 0.5, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_counts_are_exact_for_any_batching_and_buffer(n_rows, n_cols, batches, buffer_rows,
                                                      density, seed):
    x = _bits(np.random.default_rng(seed), n_rows, n_cols, density)
    G = _gram(x, batches, buffer_rows).gram()
    np.testing.assert_array_equal(G, x.T.astype(np.int64) @ x)


def test_gram_can_be_read_and_then_extended():
    rng = np.random.default_rng(1)
    x = _bits(rng, 150, 21)
    g = BitGram(21, buffer_rows=64)
    g.add(np.packbits(x[:70], axis=1))
    np.testing.assert_array_equal(g.gram(), x[:70].T.astype(np.int64) @ x[:70])
    g.add(np.packbits(x[70:], axis=1))
    np.testing.assert_array_equal(g.gram(), x.T.astype(np.int64) @ x)


def test_all_ones_reach_the_row_count():
    """Every pair co-occurs in every row: no bit is dropped at word or byte edges."""
    x = np.ones((1000, 67), np.uint8)
    G = _gram(x, batches=7, buffer_rows=128).gram()
    assert np.all(G == 1000)


def test_pack_columns_transposes_the_bits():
    rng = np.random.default_rng(2)
    x = _bits(rng, 77, 13)
    cols = pack_columns(np.packbits(x, axis=1), 13)
    assert cols.dtype == np.uint64 and cols.shape == (16, 2)  # columns padded to 4, 77 rows
    bits = np.unpackbits(cols.view(np.uint8), axis=1, bitorder="little")
    # rows 8 g + r of the batch sit in byte g, bit r: the identity order here
    np.testing.assert_array_equal(bits[:13, :77], x.T)
    assert not bits[:, 77:].any() and not bits[13:].any()


def test_popcount_kernel_counts_bits():
    cols = np.array([[0, 2**64 - 1, 5, 2**63, 0, 0, 0, 0]], np.uint64).reshape(4, 2)
    out = np.zeros((4, 4), np.int32)
    and_popcount_gram(cols, 2, out, np.array([0]), np.array([0]), 64)
    np.testing.assert_array_equal(out, [[64, 1, 0, 0], [0, 3, 0, 0], [0, 0, 0, 0],
                                        [0, 0, 0, 0]])
    import numba

    @numba.njit
    def count(v):
        return popcount(v)

    assert [count(np.uint64(v)) for v in (0, 1, 2**64 - 1, 0xF0F0)] == [0, 1, 64, 8]


def test_bad_input():
    with pytest.raises(DprecError, match=r"packed must have shape \(rows, 2\) for n_cols=9"):
        BitGram(9).add(np.zeros((3, 1), np.uint8))
    with pytest.raises(DprecError, match="n_cols must be an integer >= 0, got -1"):
        BitGram(-1)
    with pytest.raises(DprecError, match="buffer_rows must be an integer >= 1, got 0"):
        BitGram(3, buffer_rows=0)
