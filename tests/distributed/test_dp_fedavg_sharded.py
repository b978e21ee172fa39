"""dp-fedavg on the sharded backends (issue 24, "Done when"): each shard sums its clients'
integer vectors (quantised clipped item gradients and Skellam shares: the secure sum's
output), the proxy forwards the total as the round's one batch, and the run gives the
in-process item factors, event log and privacy report bit for bit, for any number of
shards, locally and on Ray."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.distributed import LocalBackend
from dprec.distributed.shards import adapter_for
from dprec.protocol.sharding import IntegerSumAdapter
from dprec.systems.dp_fedavg.proxy import FedAvgSumProxy
from dprec.systems.dp_fedavg.server import FedAvgServer
from dprec.systems.registry import make_system

MEASURED_IN_SHARDS = {"simulation_only", "seconds_by_role"}
"""Diagnostics the driver cannot see in a sharded run (the clients' own coins, kept under
simulation_only) or that are timings."""


@pytest.fixture(scope="module")
def fed_train() -> sp.csr_matrix:
    """200 users x 60 items: 7 blocks of 32 clients (the last one partial)."""
    return synthetic(200, 60, 4000, rng=3).binary()


def _fit(train, backend, **params):
    model = make_system("dp-fedavg", {"rounds": 3, "epsilon": 2.0, **params})
    model.transport = backend
    return model.fit(train, np.random.default_rng(4))


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.V, b.V)
    assert a.privacy_report().to_json() == b.privacy_report().to_json()
    assert a.events.to_json() == b.events.to_json()
    da, db = a.diagnostics(), b.diagnostics()
    assert {k: v for k, v in da.items() if k not in MEASURED_IN_SHARDS} == \
        {k: v for k, v in db.items() if k not in MEASURED_IN_SHARDS}


def test_the_fedavg_server_gets_the_integer_sum_adapter_not_fcfs():
    """FedAvgServer is an FCF FactorServer: the most specific descriptor's adapter wins."""
    server = FedAvgServer(60, 2, 1.0, 0.1, 1, 0.1, 100.0, 200.0)
    adapter = adapter_for(server, 200, FedAvgSumProxy(200))
    assert isinstance(adapter, IntegerSumAdapter) and adapter.n_items == 120


@pytest.mark.parametrize("params", [{}, {"rate": 0.5},
                                    {"aggregation": "trusted", "rate": 0.7}])
def test_dp_fedavg_in_local_shards_equals_the_in_process_run(fed_train, params):
    expected = _fit(fed_train, None, **params)
    assert expected.diagnostics()["simulation_only"]["sampled_per_round"] is not None
    for shards in (1, 3):
        backend = LocalBackend(shards=shards, block_size=32)
        _same(_fit(fed_train, backend, **params), expected)
        assert backend.last_round is not None and backend.last_round.senders == 200


def test_min_honest_shares_give_the_same_numbers_in_shards(fed_train):
    """Shares Sk(mu / 150) and the proxy's threshold of 150 senders, in shards as in
    process."""
    a = _fit(fed_train, None, min_honest=150)
    b = _fit(fed_train, LocalBackend(shards=2, block_size=32), min_honest=150)
    _same(a, b)


@pytest.mark.slow  # starts Ray and a pool of actors
def test_dp_fedavg_on_ray_equals_the_in_process_run(fed_train):
    pytest.importorskip("ray")
    from dprec.distributed.ray_backend import RayBackend

    backend = RayBackend(shards=2, block_size=32)
    try:
        _same(_fit(fed_train, backend, rate=0.5), _fit(fed_train, None, rate=0.5))
    finally:
        backend.close()
