"""One secure-sum relay for dp-pop, dp-fedavg and dpals: it checks and releases each round
with the parameters that ``round -> params`` gives (dp-pop's a constant, dpals' its plan's)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.deploy import sealed_uploads
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.protocol.secure_sum.wire import SumRelease, SumUpload
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.calibration import calibrate
from dprec.systems.dp_pop.client import PopClients
from dprec.systems.dp_pop.server import PopularityServer
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.dpals.deploy import DEPLOYMENT as DPALS
from dprec.systems.dpals.plan import plan_of
from dprec.systems.dpals.system import DpalsConfig


def plan_relay(plan, state_dir):
    """The service proxy's part of a dpals run of ``plan``: the layer's relay with each
    round's own parameters."""
    return SecureSumRelay(lambda r: plan.round(r).params, state_dir, plan.min_honest,
                          plan.n_clients)


N, D, K = 12, 60, 3


def test_the_relay_checks_and_releases_each_round_with_that_rounds_parameters(tmp_path):
    train = synthetic(N, D, 300, rng=3).binary()
    cal = calibrate(DpPopConfig(epsilon=2.0, k=K, n_clients=N), D, N)
    longer = dataclasses.replace(cal.params, dimension=cal.params.dimension + 1)

    def params_of(round: int):
        if round not in (0, 1):
            raise DprecError(f"round {round} is not in this run's plan")
        return (cal.params, longer)[round]

    relay = SecureSumRelay(params_of, tmp_path)
    server = PopularityServer(D, N, cal.min_honest, cal.params, cal.share)
    model = server.start(np.random.default_rng(0))
    relay.see_broadcast(0, model.to_bytes())  # the server's key: the run id
    clients = PopClients(train, np.arange(N), K, "uniform", cal.share, "event",
                         lambda: relay.keys.public, cal.params)
    rows = [body for b in clients.step(model, 0, np.random.default_rng(9))
            for _, body in sealed_uploads(b)]
    for row in rows:
        relay.admit(SumUpload.from_bytes(row), 0)
    assert SumRelease.from_bytes(relay.release(rows, 0, cal.min_honest)).n_clients == N
    with pytest.raises(MessageError):  # round 1's uploads are one coordinate longer
        relay.admit(SumUpload.from_bytes(rows[0]), 1)
    with pytest.raises(MessageError, match="round 2 is not in this run's plan"):
        relay.admit(SumUpload.from_bytes(rows[0]), 2)
    with pytest.raises(MessageError, match="round 2 is not in this run's plan"):
        relay.release(rows, 2, cal.min_honest)


def test_dpals_relay_is_the_secure_sum_relay_on_its_plan(tmp_path):
    config = DpalsConfig(epsilon=2.0, k=5, n_clients=30, validity="none")
    plan = plan_of(config, 40)
    relay = DPALS.proxy_secrets(ProtocolInfo("dpals", 40, config), tmp_path)
    assert type(relay) is SecureSumRelay  # the plain ring's (the default proves: ProvedRelay)
    assert relay.params_of(1) == plan.round(1).params
    with pytest.raises(MessageError):
        relay.release([], len(plan.rounds), 30)
