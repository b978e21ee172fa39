"""The server roles' steps from sums formed elsewhere (a sharded run's reduced partials)
give the bits of their in-process aggregate (issue 22 §2: one Eq. 9, state changed inside)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.aggregation import CellSums
from dprec.protocol.messages import ShuffledReports, ShuffledValues
from dprec.systems.dplcf import client as dplcf_client
from dprec.systems.dplcf.server import PairCounts, SimilarityServer
from dprec.systems.fmf.server import FactorServer, mean_gradient

N, F, M = 7, 3, 400


def _factor_server(mech) -> FactorServer:
    srv = FactorServer(N, F, lr=0.1, reg=0.05, steps=2, clip=0.7, init_scale=0.1,
                       mechanism=mech)
    srv.start(np.random.default_rng(0))
    return srv


@pytest.mark.parametrize("mech", [BinaryMechanism(2.5), PiecewiseMechanism(2.5)])
def test_apply_sums_gives_the_bits_of_aggregate(mech):
    rng = np.random.default_rng(3)
    items = rng.integers(0, N, M).astype(np.uint32)
    factors = rng.integers(0, F, M).astype(np.uint32)
    x = rng.uniform(-1, 1, M)
    if isinstance(mech, BinaryMechanism):
        bits = (mech(x, rng) > 0).astype(np.uint8)
        batch = ShuffledReports(items, factors, bits)
        values = mech.estimate(bits.view(np.bool_))
        unit = mech.scale
    else:
        values = mech(x, rng).astype(np.float32)
        batch = ShuffledValues(items, factors, values)
        unit = None
    inproc, sharded = _factor_server(mech), _factor_server(mech)
    want = inproc.aggregate([batch], 0)
    flat = items.astype(np.int64) * F + factors
    half = M // 2  # two shards' partial sums, merged as the driver reduces them
    unit = CellSums.of(flat, np.asarray(values, np.float64), N * F).unit if unit is None else unit
    sums = (CellSums.of(flat[:half], np.asarray(values[:half], np.float64), N * F, unit)
            + CellSums.of(flat[half:], np.asarray(values[half:], np.float64), N * F, unit))
    got = sharded.apply_sums(sums)
    assert got is sharded.V
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, _factor_server(mech).V)  # a step was taken


def test_apply_sums_takes_no_step_without_reports():
    srv = _factor_server(BinaryMechanism(1.0))
    before = srv.V.copy()
    assert srv.apply_sums(CellSums.zeros(N * F, 1.0)) is None
    np.testing.assert_array_equal(srv.V, before)


def test_mean_gradient_is_eq9():
    totals = np.arange(N * F, dtype=np.float64)
    np.testing.assert_array_equal(mean_gradient(totals, 3, N, F),  # N F / n = 7
                                  (7.0 * totals).reshape(N, F))
    np.testing.assert_array_equal(mean_gradient(totals, 0, N, F), np.zeros((N, F)))


def test_apply_counts_records_users_and_publishes_as_aggregate():
    rng = np.random.default_rng(4)
    x = sp.csr_matrix((rng.random((120, 30)) < 0.2).astype(np.float64))
    mech = BitFlip.symmetric(1.0)
    msgs = [dplcf_client.obfuscate(x[s:s + 40], mech, np.random.default_rng(s))
            for s in range(0, 120, 40)]
    inproc = SimilarityServer(30, mech, "unbiased", 5, True)
    want = inproc.aggregate(iter(msgs), 0)
    counts = PairCounts(30)
    for m in msgs:
        counts.add(m)
    sharded = SimilarityServer(30, mech, "unbiased", 5, True)
    got = sharded.apply_counts(PairCounts.from_counts(counts.m11, counts.n_users))
    assert sharded.users_received == inproc.users_received == 120
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.full, want.full)
    empty = SimilarityServer(30, mech, "unbiased", 5, True)
    empty.users_received = 9
    assert empty.apply_counts(PairCounts.from_counts(np.zeros((30, 30), np.int32), 0)) is None
    assert empty.users_received == 0
