"""dp-pop on the cryptographic secure sum (issue 23 §1 over the services): the sealed path
gives the in-process exact sum bit for bit, and every role refuses what it must."""

from __future__ import annotations

import stat
from dataclasses import replace

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.deploy import sealed_uploads
from dprec.protocol.secure_sum.errors import BelowThresholdError, SecureSumError
from dprec.protocol.secure_sum.relay import KEY_FILE, SecureSumRelay, proxy_keys
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.wire import SumRelease, SumUpload
from dprec.systems.dp_pop import client as pop_client
from dprec.systems.dp_pop.calibration import calibrate
from dprec.systems.dp_pop.client import PopClients
from dprec.systems.dp_pop.deploy import DEPLOYMENT
from dprec.systems.dp_pop.messages import PopularityModel, PopularityState
from dprec.systems.dp_pop.proxy import ExactSumProxy
from dprec.systems.dp_pop.server import PopularityServer
from dprec.systems.dp_pop.system import DpPopConfig

N, D, K = 40, 30, 4


def _setup(tmp_path, min_honest=None):
    train = synthetic(N, D, 800, rng=3).binary()
    cal = calibrate(DpPopConfig(epsilon=2.0, k=K, n_clients=N, min_honest=min_honest),
                    D, N)
    server = PopularityServer(D, N, cal.min_honest, cal.params, cal.share)
    model = server.start(np.random.default_rng(0))
    relay = SecureSumRelay(cal.params, tmp_path / "proxy")
    relay.see_broadcast(0, model.to_bytes())  # the server's key: the run id
    clients = PopClients(train, np.arange(N), K, "uniform", cal.share, "event",
                         lambda: relay.keys.public, cal.params)
    return cal, server, model, relay, clients


def _blocks(clients, model, round=0):
    return list(clients.step(model, round, np.random.default_rng(9)))


def _check(server, relay, rows, round=0):
    """The server checks the relay's share batch of ``rows`` and keeps each valid share, as
    the services do before the release (the release carries the mask sum and ids only)."""
    verdicts = server.check_shares(relay.share_batch(rows, round), round)
    server.kept_outputs = lambda ids: [verdicts.outputs.get(m) for m in ids]
    return verdicts


def _uploads(blocks):
    return [body for b in blocks for _, body in sealed_uploads(b)]


def test_the_cryptographic_round_equals_the_exact_sum_bit_for_bit(tmp_path, monkeypatch):
    monkeypatch.setattr(pop_client, "BLOCK_CELLS", 7 * D)  # blocks of 7 clients
    cal, server, model, relay, clients = _setup(tmp_path)
    blocks = _blocks(clients, model)
    assert len(blocks) == 6
    exact = list(ExactSumProxy(cal.min_honest).forward(iter(blocks)))
    plain = server.aggregate(exact, 0)
    rows = _uploads(blocks)
    for row in rows:
        relay.admit(SumUpload.from_bytes(row), 0)
    assert not any(_check(server, relay, rows).values())
    release = SumRelease.from_bytes(relay.release(rows, 0, cal.min_honest))
    assert release.n_clients == N
    sealed = server.aggregate([release], 0)
    want = np.concatenate([b.vectors() for b in blocks]).sum(axis=0)
    np.testing.assert_array_equal(plain.counts, want)
    np.testing.assert_array_equal(sealed.counts, want)
    assert sealed.contributors == plain.contributors == N
    assert len(rows[0]) == DEPLOYMENT.upload_size(_info(cal))


def _info(cal):
    from dprec.systems.deployable import ProtocolInfo
    return ProtocolInfo("dp-pop", D, DpPopConfig(epsilon=2.0, k=K, n_clients=N,
                                                 validity="none"))  # ring uploads


def test_the_relay_refuses_what_it_cannot_open(tmp_path):
    cal, _, model, relay, clients = _setup(tmp_path)
    block = _blocks(clients, model)[0]
    good = SumUpload.from_bytes(next(sealed_uploads(block))[1])
    other = replace(block, proxy_key=KeyPair().public)
    wrong_key = SumUpload.from_bytes(next(sealed_uploads(other))[1])
    with pytest.raises(MessageError, match="another public key"):
        relay.admit(wrong_key, 0)
    tampered = bytearray(good.data)
    tampered[40] ^= 1  # inside the seed box's ciphertext
    with pytest.raises(MessageError, match="tag does not verify"):
        relay.admit(SumUpload(bytes(tampered)), 0)
    with pytest.raises(MessageError, match="round 0, this is round 1"):
        relay.admit(good, 1)
    info = _info(cal)
    with pytest.raises(MessageError, match="refused"):  # oversized
        DEPLOYMENT.check_upload(SumUpload(good.data + b"\0"), info)
    with pytest.raises(MessageError, match="not an upload"):  # malformed
        DEPLOYMENT.check_upload(SumUpload(good.data[:-1]), info)
    relay.admit(good, 0)
    assert DEPLOYMENT.unique_id(good) == good.data[12:28]


def test_a_round_below_min_honest_is_not_released_or_summed(tmp_path):
    cal, server, model, relay, clients = _setup(tmp_path, min_honest=N // 2)
    rows = _uploads(_blocks(clients, model))
    with pytest.raises(BelowThresholdError, match="fewer than the threshold"):
        relay.release(rows[:N // 2 - 1], 0, cal.min_honest)
    assert list(ExactSumProxy(N // 2).forward(iter([]))) == []
    # a server handed fewer than min_honest shares (a proxy below the threshold) refuses
    _check(server, relay, rows[:N // 2 - 1])
    small = SumRelease.from_bytes(relay.release(rows[:N // 2 - 1], 0, 2))
    with pytest.raises(DprecError, match="fewer than min_honest"):
        server.aggregate([small], 0)


def test_the_server_takes_one_intact_batch(tmp_path):
    cal, server, model, relay, clients = _setup(tmp_path)
    rows = _uploads(_blocks(clients, model))
    _check(server, relay, rows)
    release = SumRelease.from_bytes(relay.release(rows, 0, N))
    with pytest.raises(DprecError, match="takes one"):
        server.aggregate([release, release], 0)
    data = bytearray(release.data)
    data[-5] ^= 1  # the last id: an upload the server never accepted
    with pytest.raises(MessageError, match="did not accept"):
        server.aggregate([SumRelease(bytes(data))], 0)
    fresh = PopularityServer(D, N, N, cal.params, cal.share)  # another key: cannot open
    fresh.start(np.random.default_rng(0))
    verdicts = _check(fresh, relay, rows)
    assert all("another public key" in why for why in verdicts.values())
    with pytest.raises(MessageError, match="did not accept"):
        fresh.aggregate([release], 0)


def test_a_client_checks_both_public_keys(tmp_path):
    cal, _, _, relay, _ = _setup(tmp_path)
    good = KeyPair().public
    with pytest.raises(SecureSumError, match="32 raw bytes"):
        SecureSumClient(cal.params, relay.keys.public[:31], good)
    with pytest.raises(SecureSumError, match="low-order point"):
        SecureSumClient(cal.params, relay.keys.public, bytes(32))
    with pytest.raises(SecureSumError, match="different keys"):
        SecureSumClient(cal.params, good, good)
    with pytest.raises(MessageError, match="32 bytes"):
        PopularityModel(good[:31], np.zeros(0, np.int64))


def test_the_proxy_key_survives_a_restart_and_stays_private(tmp_path):
    first = proxy_keys(tmp_path)
    again = proxy_keys(tmp_path)
    assert first.public == again.public
    assert stat.S_IMODE((tmp_path / KEY_FILE).stat().st_mode) == 0o600
    relay = SecureSumRelay(calibrate(DpPopConfig(n_clients=5, k=2), 4, 5).params,
                           tmp_path)
    assert relay.published() == {"secure_sum_proxy_key": first.public.hex()}
    (tmp_path / KEY_FILE).write_bytes(b"short")
    with pytest.raises(DprecError, match="32-byte"):
        proxy_keys(tmp_path)


def test_the_server_state_keeps_its_key_and_publishes_only_the_model(tmp_path):
    from dprec.systems.dp_pop.serve import SERVING

    cal, server, model, _, _ = _setup(tmp_path)
    info = _info(cal)
    state = SERVING.encode_state(info, server, model, 0)
    public = SERVING.artefact_bytes(info, "model", state)
    assert PopularityModel.from_bytes(public).server_key == model.server_key
    assert server.private_key() not in public and server.private_key() in state
    fresh = SERVING.server_role(info, None)
    SERVING.restore(info, fresh, state)
    assert fresh.private_key() == server.private_key()
    back = PopularityState.from_bytes(state)
    assert back.model.server_key == model.server_key


def test_only_secure_dp_pop_is_deployable():
    from dprec.systems.deployable import ProtocolInfo

    with pytest.raises(DprecError, match="aggregation=secure only"):
        ProtocolInfo("dp-pop", 5, DpPopConfig(aggregation="trusted", n_clients=3))
    with pytest.raises(DprecError, match="n_clients"):
        ProtocolInfo("dp-pop", 5, DpPopConfig())
