"""dp-fedavg's deployment (issue 24, "Done when"): its descriptor takes only secure dp-fedavg
configs, every round is one cryptographic secure sum whose release the server opens to the
same integers as the in-process exact sum, and the clients' own vectors (what each seals)
add up to a block's sum bit for bit, with the shares split from one summed draw."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dprec.cli.serve import deployable_systems
from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.protocol.messages import Message
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.protocol.secure_sum.wire import ExactSum, SumRelease
from dprec.systems.deployable import ProtocolInfo, deployment
from dprec.systems.dp_fedavg.accounting import sampled_event
from dprec.systems.dp_fedavg.client import FedAvgClients
from dprec.systems.dp_fedavg.deploy import DEPLOYMENT, FedAvgDeployment
from dprec.systems.dp_fedavg.messages import FedAvgModel, FedAvgState
from dprec.systems.dp_fedavg.plan import plan_of
from dprec.systems.dp_fedavg.proxy import FedAvgSumProxy
from dprec.systems.dp_fedavg.serve import SERVING, server_of
from dprec.systems.dp_fedavg.system import DpFedAvgConfig
from dprec.systems.registry import SYSTEMS

N_USERS, N_ITEMS = 40, 50


def _config(**kw) -> DpFedAvgConfig:
    return DpFedAvgConfig(**{"rounds": 2, "rate": 0.5, "factors": 2,
                                    "n_clients": N_USERS, "min_honest": 30, **kw})


def _info(**kw) -> ProtocolInfo:
    return ProtocolInfo("dp-fedavg", N_ITEMS, _config(**kw))


def _clients(config: dict, batch_size: int = 7, key=None) -> FedAvgClients:
    train = synthetic(N_USERS, N_ITEMS, 1000, rng=5).binary()
    plan = plan_of(config, N_ITEMS, N_USERS)
    return FedAvgClients(train, factors=config.factors, alpha=config.alpha,
                         reg=config.reg, clip=config.clip, gamma=plan.gamma,
                         rate=config.rate, share_mu=plan.share_mu,
                         event=sampled_event(plan.mu, plan.dimension, config.clip,
                                             plan.gamma, config.rate),
                         batch_size=batch_size, params=plan.params,
                         proxy_key=(lambda: key))


def test_the_descriptor_takes_secure_dp_fedavg_configs_only():
    assert isinstance(deployment("dp-fedavg"), FedAvgDeployment)
    DEPLOYMENT.validate(_config())
    with pytest.raises(DprecError, match="aggregation=secure"):
        DEPLOYMENT.validate(_config(aggregation="trusted", min_honest=None))
    with pytest.raises(DprecError, match="n_clients"):
        DEPLOYMENT.validate(_config(n_clients=None))
    # found by name: no other registered system is deployed by dp-fedavg's descriptor
    for name in SYSTEMS:
        if name != "dp-fedavg" and SYSTEMS[name].deploy is not None:
            assert not isinstance(deployment(name), FedAvgDeployment), name
    assert "dp-fedavg" in deployable_systems()


def test_the_description_gives_every_rounds_parameters_and_the_server_role():
    info = _info()
    plan = plan_of(info.config, N_ITEMS, N_USERS)
    assert info.deployment.rounds(info.config) == 2
    assert DEPLOYMENT.all_params(info) == [plan.params]
    assert plan.params.dimension == N_ITEMS * 2 and plan.params.expected_clients == N_USERS
    assert plan.share_mu == pytest.approx(plan.mu / 30)
    role = SERVING.server_role(info, None)
    assert (role.params, role.min_honest, role.n_clients) == (plan.params, 30, N_USERS)
    assert SERVING.service_params(role) == {"n_clients": str(N_USERS)}


def test_each_clients_own_vector_adds_up_to_its_blocks_sum():
    config = _config()
    clients = _clients(config)
    server = server_of(config, N_ITEMS, N_USERS)
    model = server.start(np.random.default_rng(3))
    blocks = list(clients.step(model, 0, np.random.default_rng(9)))
    assert sum(b.n_clients for b in blocks) == N_USERS and len(blocks) == 6
    for b in blocks:
        own = b.vectors()
        assert own.shape == (b.n_clients, N_ITEMS * 2)
        np.testing.assert_array_equal(own.sum(axis=0), b.total)
    # the same round in other blocks: the same integers
    other = list(_clients(config, batch_size=40).step(model, 0, np.random.default_rng(9)))
    np.testing.assert_array_equal(other[0].total, sum(b.total for b in blocks))


def test_the_opened_release_gives_the_in_process_model(tmp_path):
    """Seal every client's upload, let the proxy's secure-sum part release them, open it:
    the same item factors as from the exact sum the in-process proxy forwards (the plain
    ring path: ``validity=none``)."""
    info = _info(validity="none")
    relay = SecureSumRelay(DEPLOYMENT.all_params(info)[0], tmp_path)
    config = info.config
    secure, exact = server_of(config, N_ITEMS, N_USERS), server_of(config, N_ITEMS, N_USERS)
    model = secure.start(np.random.default_rng(3))
    relay.server_key = model.server_key  # what the proxy reads off the broadcast
    exact.start(np.random.default_rng(3))
    blocks = list(_clients(config, key=relay.keys.public).step(
        model, 0, np.random.default_rng(9)))
    uploads = []
    for b in blocks:
        for _, body in DEPLOYMENT.client_messages(b, 0):
            message = Message.from_bytes(body)
            DEPLOYMENT.check_upload(message, info)
            relay.admit(message, 0)
            uploads.append(body)
    verdicts = secure.check_shares(relay.share_batch(uploads, 0), 0)  # kept until release
    assert not any(verdicts.values())
    secure.kept_outputs = lambda ids: [verdicts.outputs.get(m) for m in ids]
    release = SumRelease.from_bytes(relay.release(uploads, 0, 30))
    DEPLOYMENT.check_forwarded(release, info)
    proxy = FedAvgSumProxy(30)
    batch = next(proxy.forward(blocks))
    a, b = secure.aggregate([release], 0), exact.aggregate([batch], 0)
    np.testing.assert_array_equal(a.factors_matrix, b.factors_matrix)
    assert a.contributors == b.contributors == N_USERS


def test_the_server_refuses_too_few_clients_and_a_second_batch():
    config = _config()
    server = server_of(config, N_ITEMS, N_USERS)
    server.start(np.random.default_rng(0))
    zero = np.zeros(N_ITEMS * 2, np.int64)
    with pytest.raises(DprecError, match="min_honest"):
        server.aggregate([ExactSum(zero, 29)], 0)
    with pytest.raises(DprecError, match="one"):
        server.aggregate([ExactSum(zero, 30), ExactSum(zero, 30)], 0)


def test_a_client_refuses_a_broadcast_without_a_key_or_of_the_wrong_shape():
    clients = _clients(_config())
    V = np.zeros((N_ITEMS, 2))
    with pytest.raises(DprecError, match="no server key"):
        next(clients.step(FedAvgModel(b"", V), 0, np.random.default_rng(0)))
    with pytest.raises(DprecError, match="item matrix"):
        next(clients.step(FedAvgModel(bytes(range(32)), V[:, :1]), 0,
                          np.random.default_rng(0)))


def test_a_restarted_server_keeps_its_key_and_publishes_only_the_model():
    info = _info()
    role = SERVING.server_role(info, None)
    model = role.start(np.random.default_rng(1))
    body = SERVING.encode_state(info, role, model, 0)
    fresh = SERVING.server_role(info, None)
    fresh.start(np.random.default_rng(2))
    SERVING.restore(info, fresh, body)
    assert fresh.private_key() == role.private_key()
    np.testing.assert_array_equal(fresh.V, model.factors_matrix)
    published = SERVING.artefact_bytes(info, "model", body)
    assert SERVING.decode_broadcast(info, published) == model
    assert role.private_key() not in published
    assert FedAvgState.from_bytes(body).model == model


def test_the_plan_is_the_one_fit_reports():
    train = synthetic(N_USERS, N_ITEMS, 1000, rng=5).binary()
    cfg = DpFedAvgConfig(rounds=2, rate=0.5, factors=2, min_honest=30)
    from dprec.systems.dp_fedavg.system import DpFedAvg
    model = DpFedAvg("dp-fedavg", cfg).fit(train, np.random.default_rng(0))
    plan = plan_of(replace(cfg, n_clients=N_USERS), N_ITEMS, N_USERS)
    assert model.diagnostics()["mu"] == plan.mu
    ss = model.privacy_report().extra["secure_sum"]
    assert ss["q"] == plan.params.modulus and ss["dimension"] == plan.params.dimension
    with pytest.raises(DprecError, match="n_clients"):
        DpFedAvg("dp-fedavg", replace(cfg, n_clients=N_USERS + 1)).fit(
            train, np.random.default_rng(0))
