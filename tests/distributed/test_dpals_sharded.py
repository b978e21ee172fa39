"""dpals on the sharded backends (issue 24, "Done when"): each shard sums its clients'
integer vectors (statistics, Gramian terms and noise shares; the secure sum's output), the
partials are added, and the run gives the in-process item factors, event log, privacy
report and diagnostics bit for bit, for any number of shards, locally and on Ray."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.distributed import LocalBackend
from dprec.systems.registry import make_system


@pytest.fixture(scope="module")
def als_train() -> sp.csr_matrix:
    """200 users x 60 items: 7 blocks of 32 clients (the last one partial)."""
    return synthetic(200, 60, 4000, rng=3).binary()


def _fit(train, backend, **params):
    model = make_system("dpals", {"k": 5, "epsilon": 2.0, **params})
    model.transport = backend
    return model.fit(train, np.random.default_rng(4))


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert a.privacy_report().to_json() == b.privacy_report().to_json()
    assert a.diagnostics() == b.diagnostics()
    assert a.events.to_json() == b.events.to_json()


@pytest.mark.parametrize("params", [{}, {"weighting": "tail"},
                                    {"weighting": "adaptive", "shares": "per-client"},
                                    {"aggregation": "trusted", "weighting": "tail"}])
def test_dpals_in_local_shards_equals_the_in_process_run(als_train, params):
    expected = _fit(als_train, None, **params)
    for shards in (1, 3):
        backend = LocalBackend(shards=shards, block_size=32)
        _same(_fit(als_train, backend, **params), expected)
        assert backend.last_round is not None and backend.last_round.senders == 200


@pytest.mark.slow  # starts Ray and a pool of actors
def test_dpals_on_ray_equals_the_in_process_run(als_train):
    pytest.importorskip("ray")
    from dprec.distributed.ray_backend import RayBackend

    backend = RayBackend(shards=2, block_size=32)
    try:
        _same(_fit(als_train, backend, weighting="tail"), _fit(als_train, None,
                                                              weighting="tail"))
    finally:
        backend.close()
