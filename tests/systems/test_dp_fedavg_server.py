"""The dp-fedavg server's curator (:class:`~dprec.protocol.secure_sum.curator.Curator`)
draws its noise from the generator it is given when that is the deployed CSPRNG, never from
a PCG64 seeded from it."""

from __future__ import annotations

import numpy as np

from dprec.protocol.secure_sum.wire import ExactSum
from dprec.random import is_secure, secure_generator
from dprec.systems.dp_fedavg.server import FedAvgServer


def _server() -> FedAvgServer:
    return FedAvgServer(5, 2, 1.0, 0.1, 1, 0.1, 100.0, 4.0, curator_mu=3.0)


def test_a_deployed_server_keeps_drawing_from_its_csprng():
    server = _server()
    rng = secure_generator()
    server.start(rng)
    assert server.curator.rng is rng and is_secure(server.curator.rng)
    assert server.aggregate([ExactSum(np.zeros(10, np.int64), 4)], 0) is not None


def test_a_simulated_server_is_reproducible_from_its_seed():
    a, b = _server(), _server()
    a.start(np.random.default_rng(1))
    b.start(np.random.default_rng(1))
    assert not is_secure(a.curator.rng)
    batch = [ExactSum(np.arange(10, dtype=np.int64), 4)]
    np.testing.assert_array_equal(a.aggregate(batch, 0), b.aggregate(batch, 0))
