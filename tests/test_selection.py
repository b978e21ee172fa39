"""Selections that can tie follow one written rule (larger score, then smaller index), so a
seed gives the same numbers on every CPU (issue 20: argpartition's tie order follows the SIMD
kernel numpy dispatches to)."""

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.split import leave_one_out
from dprec.models.itemknn import top_k_neighbours
from dprec.selection import top_k, top_k_row

SRC = Path(__file__).resolve().parents[1] / "src" / "dprec"


def _reference(scores: np.ndarray, k: int) -> np.ndarray:
    """The rule by a full stable sort: larger score first, then the smaller index."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    return np.stack([np.lexsort((np.arange(len(r)), -r))[:k] for r in s])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("k", [1, 3, 17, 64, 200])
def test_top_k_equals_the_written_rule_on_heavy_ties(dtype, k):
    rng = np.random.default_rng(k)
    scores = rng.integers(0, 4, size=(50, 200)).astype(dtype)  # every row is mostly ties
    np.testing.assert_array_equal(top_k(scores, k), _reference(scores, k))


def test_top_k_nan_and_infinities_rank_last_by_index():
    s = np.array([[np.nan, -np.inf, 1.0, np.nan, 1.0, -np.inf]])
    np.testing.assert_array_equal(top_k(s, 6), [[2, 4, 0, 1, 3, 5]])
    np.testing.assert_array_equal(top_k_row(s[0], 3), [2, 4, 0])


def test_top_k_edges_and_bad_shapes():
    assert top_k(np.zeros((3, 4)), 0).shape == (3, 0)
    np.testing.assert_array_equal(top_k(np.zeros((2, 3)), 10), [[0, 1, 2], [0, 1, 2]])
    with pytest.raises(ValueError, match="2-D"):
        top_k(np.zeros(3), 1)
    with pytest.raises(ValueError, match="1-D"):
        top_k_row(np.zeros((2, 2)), 1)


def test_item_neighbours_break_ties_by_the_smaller_item_id():
    rng = np.random.default_rng(0)
    n = 300
    sim = rng.integers(0, 5, size=(n, n)).astype(np.float32) / 4  # Jaccard-like, many ties
    sim = np.triu(sim, 1) + np.triu(sim, 1).T
    idx, val = top_k_neighbours(sim, 20, block=64)
    masked = sim.copy()
    np.fill_diagonal(masked, -np.inf)
    np.testing.assert_array_equal(idx, _reference(masked, 20))
    np.testing.assert_array_equal(val, np.take_along_axis(masked, idx.astype(np.int64), 1))


def test_sampled_negatives_are_the_smallest_keys_in_key_order():
    x = sp.random(60, 40, density=0.2, random_state=4, format="csr", dtype=np.float64)
    x.data[:] = 1.0
    x.sort_indices()
    ds = Dataset("fixture", x, timestamps=np.arange(x.nnz, dtype=np.int64))
    split = leave_one_out(ds)
    got = sample_negatives(split, 10, np.random.default_rng(7))
    users = split.test_users
    keys = np.random.default_rng(7).random((len(users), x.shape[1]))
    for r, u in enumerate(users):
        keys[r, split.train[u].indices] = np.inf
        keys[r, split.test_items[u]] = np.inf
    want = np.stack([np.lexsort((np.arange(x.shape[1]), row))[:10] for row in keys])
    np.testing.assert_array_equal(got, want)


def test_no_numba_kernel_uses_fastmath():
    """fastmath's reassociation lets LLVM reduce in the host's SIMD width: another CPU,
    another sum."""
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                 if re.search(r"fastmath\s*=\s*(True|\{)", p.read_text())]
    assert offenders == []
