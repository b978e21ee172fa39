"""Robust per-cell estimates (issue 26 §3): trimmed mean and median of means."""

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.protocol import aggregation
from dprec.protocol.aggregation import MeanAggregator
from dprec.systems.fmf.defences import (
    FMF_AGGREGATORS,
    MedianOfMeansAggregator,
    TrimmedMeanAggregator,
)


def make_aggregator(name):
    return aggregation.make_aggregator(name, FMF_AGGREGATORS)


ROBUST = ("trimmed", "trimmed:0.25", "median-of-means", "median-of-means:4")


def _reports(n: int, n_cells: int, seed: int, binary: bool):
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, n_cells, n)
    if binary:
        return cells, rng.choice([-1.25, 1.25], n)
    return cells, rng.normal(0.0, 1.0, n).round(3)  # ties on purpose


def test_names_and_arguments_are_read():
    assert isinstance(make_aggregator("trimmed"), TrimmedMeanAggregator)
    assert make_aggregator("trimmed").trim == 0.1
    assert make_aggregator("trimmed:0.2").trim == 0.2
    assert make_aggregator("median-of-means").groups == 5
    assert make_aggregator("median-of-means:7").groups == 7
    for spec in ("mean", "trimmed:0.2", "median-of-means:7"):
        assert make_aggregator(spec).spec == spec
    for bad, why in (("trimmed:0.5", "trim"), ("trimmed:x", "float"),
                     ("median-of-means:0", "groups"), ("median-of-means:2.5", "int"),
                     ("mean:1", "no argument"), ("median", "one of")):
        with pytest.raises(DprecError, match=why):
            make_aggregator(bad)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("spec", ROBUST)
def test_the_estimate_is_a_function_of_the_multiset_of_reports(spec, binary):
    """Any order, and any split into the proxy's batches (the server concatenates them),
    gives the same bits: the in-process and HTTP runs agree."""
    cells, values = _reports(3000, 40, 1, binary)
    agg = make_aggregator(spec)
    ref = agg.cell_totals(cells, values, 40)
    for seed in range(3):
        p = np.random.default_rng(seed).permutation(cells.size)
        np.testing.assert_array_equal(agg.cell_totals(cells[p], values[p], 40), ref)


def test_no_trim_is_the_plain_mean_bit_for_bit():
    for binary in (True, False):
        cells, values = _reports(5000, 33, 2, binary)
        np.testing.assert_array_equal(TrimmedMeanAggregator(0.0).cell_totals(cells, values, 33),
                                      MeanAggregator().cell_totals(cells, values, 33))


def test_trimmed_drops_floor_trim_n_from_each_end():
    """Cell 0: 5 reports, trim 0.2 drops one from each end: mean(1, 2, 3) = 2, total 5 x 2;
    cell 1: 2 reports, nothing dropped; cell 2: none."""
    cells = np.array([0, 0, 0, 0, 0, 1, 1])
    values = np.array([3.0, -10.0, 1.0, 10.0, 2.0, 0.5, 0.25])
    np.testing.assert_allclose(TrimmedMeanAggregator(0.2).cell_totals(cells, values, 3),
                               [10.0, 0.75, 0.0])


def test_trimmed_on_binary_reports_is_the_documented_formula():
    """+-C reports: C (n+ - n-) n_c / (n_c - 2 t) while both signs keep >= t reports, else
    the sum clamped to +-C (n_c - 2 t), times n_c / (n_c - 2 t)."""
    c = 1.25
    cells, values = _reports(4000, 200, 3, True)
    got = TrimmedMeanAggregator(0.15).cell_totals(cells, values, 200)
    n = np.bincount(cells, minlength=200)
    plus = np.bincount(cells, weights=values > 0, minlength=200)
    t = np.floor(0.15 * n)
    kept = np.clip(c * (2 * plus - n), -c * (n - 2 * t), c * (n - 2 * t))
    np.testing.assert_allclose(got, kept * n / (n - 2 * t), rtol=1e-12)


def test_median_of_means_takes_the_median_of_the_group_means():
    """One group: the mean; a cell with fewer reports than groups: the median of its
    reports; groups of a cell differ in size by at most one."""
    cells, values = _reports(2000, 20, 4, False)
    np.testing.assert_allclose(MedianOfMeansAggregator(1).cell_totals(cells, values, 20),
                               MeanAggregator().cell_totals(cells, values, 20), atol=1e-9)
    few = MedianOfMeansAggregator(5).cell_totals(np.zeros(3, int), np.array([4.0, -1.0, 9.0]),
                                                 2)
    np.testing.assert_allclose(few, [3 * 4.0, 0.0])
    four = MedianOfMeansAggregator(5).cell_totals(np.zeros(4, int),
                                                  np.array([4.0, -1.0, 9.0, 0.0]), 1)
    np.testing.assert_allclose(four, [4 * 2.0])


def test_the_grouping_depends_on_the_key():
    cells, values = _reports(3000, 10, 5, False)
    a = MedianOfMeansAggregator(5, b"one").cell_totals(cells, values, 10)
    b = MedianOfMeansAggregator(5, b"two").cell_totals(cells, values, 10)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("spec", ROBUST)
def test_unbiased_on_symmetric_honest_values(spec):
    """Statistical: honest values symmetric about each cell's mean (here N(mu_c, 1)) give
    an unbiased estimate: the mean error over 4000 cells of 30 reports is within 4 standard
    errors of 0 (the estimators' variance is at most ~1.6 / 30 per cell)."""
    rng = np.random.default_rng(6)
    n_cells, per = 4000, 30
    mu = rng.uniform(-1, 1, n_cells)
    cells = np.repeat(np.arange(n_cells), per)
    values = mu[cells] + rng.normal(0, 1, cells.size)
    err = make_aggregator(spec).cell_totals(cells, values, n_cells) / per - mu
    assert abs(err.mean()) < 4 * np.sqrt(1.6 / per / n_cells)


@pytest.mark.parametrize("spec", ["trimmed:0.2", "median-of-means:15"])
def test_an_outlying_minority_is_stopped(spec):
    """Honest values near 0.1 (range [-C, C] = [-3, 3]); 10% of each cell's reports at -C.
    The plain mean moves by about 0.31; the robust estimates by under half that (median of
    means with 15 groups of 3: about 4 of the 15 groups hold an attacker)."""
    rng = np.random.default_rng(7)
    n_cells, per = 500, 45
    cells = np.repeat(np.arange(n_cells), per)
    values = 0.1 + rng.normal(0, 0.2, cells.size)
    bad = values.copy()
    bad[rng.random(cells.size) < 0.1] = -3.0

    def shift(agg):
        return np.mean((agg.cell_totals(cells, bad, n_cells)
                        - agg.cell_totals(cells, values, n_cells)) / per)

    assert shift(MeanAggregator()) < -0.25
    assert abs(shift(make_aggregator(spec))) < 0.15


def test_binary_reports_leave_nothing_to_trim():
    """The limit the report states: with the binary mechanism every report is +-C, an
    attacker's report looks like an honest one, and a 5% attack at -C moves the trimmed
    estimate about as much as the mean (Poisson(11) reports per cell, x = 0.1)."""
    mech = BinaryMechanism(2.5)
    rng = np.random.default_rng(8)
    n_cells = 20000
    counts = rng.poisson(11.2, n_cells)
    cells = np.repeat(np.arange(n_cells), counts)
    clean = mech.estimate(mech.sample_bits(np.full(cells.size, 0.1), rng)).astype(float)
    bad = clean.copy()
    bad[rng.random(cells.size) < 0.05] = -mech.scale
    used = counts > 0

    def shift(agg):
        d = agg.cell_totals(cells, bad, n_cells) - agg.cell_totals(cells, clean, n_cells)
        return np.mean(d[used] / counts[used])

    mean_shift = shift(MeanAggregator())
    assert mean_shift < -0.05
    assert shift(TrimmedMeanAggregator(0.1)) < 0.8 * mean_shift  # no better than the mean


@pytest.mark.parametrize("spec", ROBUST)
def test_signed_zeros_are_one_value(spec):
    """-0.0 and 0.0 are equal reports: their order must not change the grouping's seed."""
    cells = np.zeros(6, int)
    a = np.array([0.0, -0.0, 1.0, 2.0, -3.0, 0.5])
    b = np.array([-0.0, 0.0, 1.0, 2.0, -3.0, 0.5])
    agg = make_aggregator(spec)
    np.testing.assert_array_equal(agg.cell_totals(cells, a, 1), agg.cell_totals(cells, b, 1))
