"""PrivRec and DP-PrivRec through their descriptor (issue 22 §1): the wire messages, the
server role a service rebuilds from its kept state, the relay, and the trusted aggregator
the role and the report declare."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.protocol.aggregation import make_aggregator
from dprec.protocol.messages import Message, MessageError
from dprec.services import roles
from dprec.systems.deployable import ProtocolInfo, check_forwarded, check_upload
from dprec.systems.privrec.messages import (
    InitialModel,
    ModelBroadcast,
    ServerState,
    UpdateBatch,
    UpdateUpload,
)
from dprec.systems.privrec.server import ReptileServer
from dprec.systems.registry import make_config

P, USERS, M = 40, np.arange(3, 60, 2), 6


def _info(name: str = "dp-privrec", **over: object) -> ProtocolInfo:
    cfg = make_config(name, {"clients_per_round": M, "rounds": 4, "n_params": P,
                      "initial_clip": 0.5, **over})
    return ProtocolInfo(name, 25, cfg)


def _updates(broadcast: ModelBroadcast, rng: np.random.Generator) -> UpdateBatch:
    """Every selected client's update (some above the clip bound), in selection order."""
    d = rng.normal(scale=0.3, size=(broadcast.clients.size, P)).astype(np.float32)
    return UpdateBatch.of_rows(broadcast.clients, d, np.linalg.norm(d, axis=1) <= 1.0)


def test_the_wire_messages_are_lossless():
    rng = np.random.default_rng(0)
    batch = UpdateBatch.of_rows(np.array([9, 2, 5]), rng.normal(size=(3, 4)),
                                np.array([1, 0, 1], bool))
    assert batch.clients.tolist() == [2, 5, 9]
    assert Message.from_bytes(batch.to_bytes()) == batch and batch.nbytes == len(batch.to_bytes())
    for up in batch.uploads():
        assert UpdateUpload.from_bytes(up.to_bytes()) == up and up.nbytes == len(up.to_bytes())
    init = InitialModel(rng.normal(size=7), np.array([1, 4, 8]))
    assert InitialModel.from_bytes(init.to_bytes()) == init
    b = ModelBroadcast(rng.normal(size=7).astype(np.float32), np.array([4, 1]), 3, 0.25)
    state = ServerState(b, {"bit_generator": "PCG64", "state": "12"})
    assert ServerState.from_bytes(state.to_bytes()) == state
    assert state.nbytes == len(state.to_bytes())


def test_malformed_messages_are_refused():
    with pytest.raises(MessageError, match="strictly increasing"):
        UpdateBatch(np.array([3, 3]), np.zeros((2, 2)), np.ones(2, np.uint8))
    with pytest.raises(MessageError, match="one row per client"):
        UpdateBatch(np.array([1, 3]), np.zeros((1, 2)), np.ones(2, np.uint8))
    body = bytearray(UpdateUpload(1, np.zeros(3), True).to_bytes())
    body[14] = 2  # the clip bit
    with pytest.raises(MessageError, match="0 or 1"):
        Message.from_bytes(bytes(body))
    with pytest.raises(MessageError, match="payload must be"):
        Message.from_bytes(UpdateUpload(1, np.zeros(3), True).to_bytes()[:-1])


def test_the_proxy_and_server_checks_refuse_what_a_client_cannot_send():
    info = _info()
    with pytest.raises(MessageError, match="n_params = 40"):
        check_upload(UpdateUpload(1, np.zeros(P - 1), True), info)
    too_many = UpdateBatch(np.arange(M + 1), np.zeros((M + 1, P)), np.ones(M + 1, np.uint8))
    with pytest.raises(MessageError, match="at most clients_per_round"):
        check_forwarded(too_many, info)
    with pytest.raises(DprecError, match="n_params=P"):
        ProtocolInfo("dp-privrec", 25, make_config("dp-privrec", {}))
    with pytest.raises(DprecError, match="privrec-cen trains centrally"):
        ProtocolInfo("privrec-cen", 25, make_config("privrec-cen", {"n_params": P}))


def test_the_server_takes_updates_only_from_the_clients_it_selected():
    cfg = replace(make_config("dp-privrec", {"clients_per_round": M}), n_params=P)
    role = ReptileServer(np.zeros(P), USERS, 60, cfg)
    b = role.start(np.random.default_rng(1))
    outsider = int(np.setdiff1d(USERS, b.clients)[0])
    ids = np.append(b.clients[1:], outsider)
    with pytest.raises(DprecError, match="did not select"):
        role.aggregate([UpdateBatch.of_rows(ids, np.zeros((M, P)), np.ones(M, bool))], 0)
    half = UpdateBatch.of_rows(b.clients[:2], np.zeros((2, P)), np.ones(2, bool))
    with pytest.raises(DprecError, match="two updates"):
        role.aggregate([half, half], 0)


@pytest.mark.parametrize("name", ["privrec", "dp-privrec"])
def test_a_service_role_rebuilt_each_round_from_its_kept_state_is_the_simulations(name):
    """What ``dprec serve server`` does each round (a fresh role, its initial state, its
    start replayed, the kept state restored), through the proxy's relay, gives the broadcasts
    of one role kept in memory, bit for bit (DP-PrivRec's noise included)."""
    info = _info(name)
    serving, deployment = info.serving(), info.deployment
    cfg = info.config
    sim = ReptileServer(np.random.default_rng(5).normal(size=P), USERS, 60, cfg, n_items=25)
    initial = serving.initial_state(sim)
    start = np.random.default_rng(7)
    sim_b = sim.start(np.random.default_rng(7))

    def fresh() -> ReptileServer:
        role = serving.server_role(info, make_aggregator("mean"))
        serving.initialise(info, role, initial)
        return role

    role = fresh()
    kept = serving.encode_state(info, role, role.start(start), 0)
    clients = np.random.default_rng(11)
    for r in range(cfg.rounds):
        published = serving.decode_broadcast(info, serving.artefact_bytes(info, "model", kept))
        assert published == sim_b
        batch = _updates(sim_b, clients)
        rows = [body for _, body in deployment.client_messages(batch, 0)]
        for body in rows:
            check_upload(Message.from_bytes(body), info)
        forwarded = Message.from_bytes(deployment.shuffle(rows[::-1], info, clients, 1))
        check_forwarded(forwarded, info)
        role = fresh()
        role.start(np.random.default_rng(7))
        serving.restore(info, role, kept)
        new = role.aggregate([forwarded], r)
        sim_b = sim.aggregate([batch], r)
        assert new == sim_b
        kept = serving.encode_state(info, role, new, r + 1)
        serving.mirror(sim, serving.diagnostics(role))
    assert len(sim.clip_history) == (2 * cfg.rounds if cfg.dp else 0)


def test_the_published_artefact_is_the_broadcast_without_the_servers_generator():
    info = _info()
    serving = info.serving()
    role = serving.server_role(info, make_aggregator("mean"))
    serving.initialise(info, role, InitialModel(np.zeros(P), USERS).to_bytes())
    b = role.start(np.random.default_rng(0))
    kept = serving.encode_state(info, role, b, 0)
    assert serving.artefact_bytes(info, "model", kept) == b.to_bytes()
    assert b"PCG64" in kept and b"PCG64" not in serving.artefact_bytes(info, "model", kept)


def test_a_deployed_server_draws_from_a_csprng_and_keeps_no_key():
    """A deployed start (a CSPRNG passed) leaves the role on a ChaCha20 generator, not a
    PCG64 seeded from it; the kept state holds no key, and a restarted role resumes on a
    fresh CSPRNG and carries on the rounds."""
    from dprec.random import secure_generator

    info = _info()
    serving = info.serving()
    role = serving.server_role(info, make_aggregator("mean"))
    serving.initialise(info, role, InitialModel(np.zeros(P), USERS).to_bytes())
    b = role.start(secure_generator())
    assert type(role._rng.bit_generator).__name__ == "ChaCha"
    kept = serving.encode_state(info, role, b, 0)
    assert ServerState.from_bytes(kept).generator == {"bit_generator": "secure"}
    restarted = serving.server_role(info, make_aggregator("mean"))
    serving.initialise(info, restarted, InitialModel(np.zeros(P), USERS).to_bytes())
    restarted.start(secure_generator())
    serving.restore(info, restarted, kept)
    assert type(restarted._rng.bit_generator).__name__ == "ChaCha"
    new = restarted.aggregate([_updates(b, np.random.default_rng(1))], 0)
    assert new.round == 1 and np.all(np.isfinite(new.params)) and np.any(new.params != 0)


def test_a_simulated_server_keeps_its_seeded_generator():
    """A simulation's role is seeded from the generator passed (reproducible): its state
    travels in the kept state and a resumed role draws what the original draws."""
    info = _info()
    serving = info.serving()
    role = serving.server_role(info, make_aggregator("mean"))
    serving.initialise(info, role, InitialModel(np.zeros(P), USERS).to_bytes())
    b = role.start(np.random.default_rng(5))
    kept = serving.encode_state(info, role, b, 0)
    twin = serving.server_role(info, make_aggregator("mean"))
    serving.initialise(info, twin, InitialModel(np.zeros(P), USERS).to_bytes())
    twin.start(np.random.default_rng(99))
    serving.restore(info, twin, kept)
    batch = _updates(b, np.random.default_rng(1))
    assert twin.aggregate([batch], 0) == role.aggregate([batch], 0)


def test_a_server_without_its_initial_model_does_not_start():
    info = _info()
    role = info.serving().server_role(info, make_aggregator("mean"))
    with pytest.raises(DprecError, match="initial model"):
        role.start(np.random.default_rng(0))


@pytest.mark.parametrize("name", ["privrec", "dp-privrec"])
def test_the_server_role_declares_the_trusted_aggregator(name):
    info = _info(name)
    serving = info.serving()
    assert info.deployment.name == "privrec" and serving.trusted_aggregator is True
    role = serving.server_role(info, make_aggregator("mean"))
    assert roles.describe_role(role)["trusted_aggregator"] is True


FAST = {"rounds": 2, "clients_per_round": 10, "local_epochs": 1, "finetune_epochs": 1,
        "embedding_dim": 8, "hidden_width": 16, "hidden_layers": 2}


@pytest.mark.parametrize("name, noise", [("privrec", False), ("dp-privrec", True)])
def test_the_report_states_what_the_trusted_aggregator_sees(name, noise):
    from dprec.data.features import side_features
    from dprec.data.synthetic import synthetic
    from dprec.systems.registry import make_system

    ds = synthetic(150, 60, 3_600, rng=7)
    model = make_system(name, FAST)
    model.set_side_features(side_features(ds))
    report = model.fit(ds.matrix, np.random.default_rng(0)).privacy_report().to_json()
    assert "trusted aggregator" in report["threat_model"]
    assert report["server"]["role"] == "trusted aggregator"
    assert "in the clear" in report["server"]["sees"]
    assert report["server"]["adds_noise"] is noise
    eps = report["true"]["epsilon"]
    assert (0 < eps < 10) if noise else eps == "inf"  # strict JSON: no finite guarantee
