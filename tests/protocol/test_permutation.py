"""The proxy's canonical order (counting sort or NumPy's) and its bucketed Lemire shuffle."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dprec.errors import DprecError
from dprec.protocol.permutation import (
    COUNTING_BITS,
    _fisher_yates,
    _n_buckets,
    canonical_sort,
    shuffle,
)

EDGES = {
    "empty": [],
    "one": [7],
    "zeros": [0, 0, 0],
    "counting top": [(1 << COUNTING_BITS) - 1, 0, 5, (1 << COUNTING_BITS) - 1],
    "just past counting": [1 << COUNTING_BITS, 0, 3, 3],
}


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("name", sorted(EDGES))
def test_canonical_sort_equals_np_sort_on_edges(name, dtype):
    keys = np.array(EDGES[name], dtype)
    got = canonical_sort(keys)
    assert got.dtype == dtype and got is not keys
    np.testing.assert_array_equal(got, np.sort(keys))


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_canonical_sort_handles_the_largest_key(dtype):
    top = np.iinfo(dtype).max
    keys = np.array([top, 0, top, 1, top - 1], dtype)
    np.testing.assert_array_equal(canonical_sort(keys), np.sort(keys))


@pytest.mark.parametrize("bits", [1, 8, 17, COUNTING_BITS, 24, 33, 64])
def test_canonical_sort_equals_np_sort_on_random_keys(bits):
    rng = np.random.default_rng(bits)
    keys = rng.integers(0, 2**bits, 50_000, dtype=np.uint64, endpoint=False)
    keys[:10] = keys[10]  # repeats
    np.testing.assert_array_equal(canonical_sort(keys), np.sort(keys))
    if bits <= 32:
        small = keys.astype(np.uint32)
        np.testing.assert_array_equal(canonical_sort(small), np.sort(small))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=60), st.randoms(use_true_random=False))
def test_canonical_order_forgets_the_input_order(values, random):
    keys = np.array(values, np.uint64)
    order = list(range(keys.size))
    random.shuffle(order)
    np.testing.assert_array_equal(canonical_sort(keys[order]), canonical_sort(keys))
    np.testing.assert_array_equal(canonical_sort(keys), np.sort(keys))


def test_canonical_sort_bad_input():
    with pytest.raises(DprecError, match="1-D uint32 or uint64 array, got 1-D int64"):
        canonical_sort(np.arange(3))
    with pytest.raises(DprecError, match="got 2-D uint64"):
        canonical_sort(np.zeros((2, 2), np.uint64))


@pytest.mark.parametrize("n, block", [(5, 1 << 14), (100_000, 1 << 14), (1000, 16)])
def test_shuffle_is_a_permutation_and_reproducible(n, block):
    a = np.random.default_rng(0).integers(0, 50, n).astype(np.uint64)
    out = shuffle(a, np.random.default_rng(3), block=block)
    np.testing.assert_array_equal(np.sort(out), np.sort(a))
    np.testing.assert_array_equal(out, shuffle(a, np.random.default_rng(3), block=block))
    assert not np.array_equal(out, shuffle(a, np.random.default_rng(4), block=block))
    assert not np.array_equal(out, a)


def test_bucket_counts():
    assert _n_buckets(1, 16) == 1 and _n_buckets(16, 16) == 1 and _n_buckets(17, 16) == 2
    assert _n_buckets(7_500_000, 1 << 14) == 512
    assert _n_buckets(2**40, 1) == 2**16  # bucket ids are uint16


@pytest.mark.parametrize("block", [1 << 14, 2, 1])
def test_every_arrangement_is_equally_likely(block):
    """All 24 orders of four distinct elements, 24,000 shuffles, chi-square: one bucket
    (plain Fisher-Yates), two buckets of about two, and four buckets of about one."""
    rng = np.random.default_rng(12)
    index = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.zeros(24)
    a = np.arange(4, dtype=np.uint32)
    for _ in range(24_000):
        counts[index[tuple(shuffle(a, rng, block=block).tolist())]] += 1
    assert stats.chisquare(counts).pvalue > 1e-3


def test_each_element_lands_uniformly_at_scale():
    """Element 0 of 40,000, shuffled 1,000 times through 4 buckets: the quarter of the
    array it lands in is uniform (chi-square)."""
    rng = np.random.default_rng(5)
    a = np.arange(40_000, dtype=np.uint32)
    quarters = np.zeros(4)
    for _ in range(1000):
        quarters[int(np.flatnonzero(shuffle(a, rng, block=10_000) == 0)[0]) // 10_000] += 1
    assert stats.chisquare(quarters).pvalue > 1e-3


def test_lemire_rejects_the_biased_words():
    """For m = 3 the words whose product's low half is under (2^32 - 3) mod 3 = 1, i.e.
    word 0, are rejected: [0, w, 7] shuffles as [w, 7] does, and the first step swaps the
    last element with index floor(3 w / 2^32)."""
    assert (2**32 - 3) % 3 == 1
    starts = np.array([0, 3])
    for w in (2**31, 2**32 - 1):
        a, b = np.arange(3, dtype=np.uint64), np.arange(3, dtype=np.uint64)
        assert _fisher_yates(a, starts, np.array([0, w, 7], np.uint32), 0, -1) == (1, -1)
        assert _fisher_yates(b, starts, np.array([w, 7], np.uint32), 0, -1) == (1, -1)
        np.testing.assert_array_equal(a, b)
        assert a[2] == (w * 3) >> 32  # the second step (m = 2) leaves index 2 alone
    c = np.arange(3, dtype=np.uint64)
    assert _fisher_yates(c, starts, np.array([0], np.uint32), 0, -1) == (0, 2)  # ran out
    np.testing.assert_array_equal(c, np.arange(3))


def test_running_out_of_draws_resumes_at_the_same_step():
    """Feeding the draws 7 at a time gives the shuffle one long array gives."""
    draws = np.random.default_rng(1).integers(0, 2**32, 2000, dtype=np.uint32)
    starts = np.array([0, 400, 401, 1000])
    whole = np.arange(1000, dtype=np.uint64)
    assert _fisher_yates(whole, starts, draws, 0, -1) == (3, -1)
    chunked = np.arange(1000, dtype=np.uint64)
    run, i, at = 0, -1, 0
    while run < 3:
        run, i = _fisher_yates(chunked, starts, draws[at:at + 7], run, i)
        at += 7
    np.testing.assert_array_equal(chunked, whole)
    assert not np.array_equal(whole, np.arange(1000))


def test_shuffle_bad_input():
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator"):
        shuffle(np.arange(3), 0)
    with pytest.raises(DprecError, match="1-D array, got 2-D"):
        shuffle(np.zeros((2, 2)), np.random.default_rng(0))
    with pytest.raises(DprecError, match="block must be an integer >= 1, got 0"):
        shuffle(np.arange(3), np.random.default_rng(0), block=0)
    one = np.array([4])
    assert shuffle(one, np.random.default_rng(0)).tolist() == [4]
    assert shuffle(np.array([], np.uint32), np.random.default_rng(0)).size == 0
