"""The device half of the secure-sum systems (issue 31 §3): dp-pop, dpals and dp-fedavg read
the published description under the device's policy, refuse what would shrink or mislead
their noise, and build one sealed upload per round from the device's own data; the upload
opens to the device's quantised vector plus its noise share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dprec.client.errors import PolicyViolation
from dprec.client.policy import DevicePolicy
from dprec.errors import DprecError
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.device import segment_noise
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import Upload, associated_data, run_id
from dprec.protocol.secure_sum.ring import centred, decode_elements, expand_mask
from dprec.protocol.secure_sum.sealed import KeyPair, open_box
from dprec.protocol.secure_sum.wire import SumUpload
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.dp_fedavg.plan import plan_of as fedavg_plan
from dprec.systems.dp_fedavg.system import DpFedAvgConfig
from dprec.systems.dp_pop.messages import PopularityModel
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.plan import plan_of as dpals_plan
from dprec.systems.dpals.system import DpalsConfig

D = 16


def _pop(**kw):
    """A ring round (``validity=none``) unless ``kw`` says otherwise: these tests open the
    ring shares (the proved device: tests/services/test_secure_sum_proofs.py)."""
    cfg = {"epsilon": 1.0, "k": 3, "n_clients": 40, "min_honest": 20, "validity": "none",
           **kw}
    return ProtocolInfo("dp-pop", D, DpPopConfig(**cfg))


def _dpals():
    """A ring run (``validity=none``; the default proves): these tests open the uploads."""
    return ProtocolInfo("dpals", D, DpalsConfig(epsilon=2.0, k=4, weighting="tail",
                                                factors=3, n_clients=40,
                                                min_honest=20, validity="none"))


def _fedavg():
    """A ring run (``validity=none``), as :func:`_dpals`."""
    return ProtocolInfo("dp-fedavg", D, DpFedAvgConfig(
        epsilon=2.0, factors=2, rounds=2, rate=1.0, min_honest=20, n_clients=40,
        validity="none"))


def _open(body: bytes, params, keys: tuple[KeyPair, KeyPair], round: int) -> np.ndarray:
    """What the two parties together recover of one upload: v = r + s mod q, centred."""
    up = Upload.from_bytes(SumUpload.from_bytes(body).data, params)
    run = run_id(keys[0].public, keys[1].public)
    seed = open_box(keys[0], up.seed_box, associated_data(run, round, up.message_id, "proxy"))
    share = decode_elements(open_box(keys[1], up.share_box,
                                     associated_data(run, round, up.message_id, "server")),
                            1, params.element_bytes, params.bits)[0]
    mask = np.uint64(params.modulus - 1)
    return centred((expand_mask(seed, params.dimension, params.bits) + share) & mask,
                   params.bits)


def _step(info, model, round, history, rng, keys, client_id=3):
    terms = replace(DevicePolicy().read(info), proxy_key=keys[0].public)
    body = info.deployment.client_step(terms, history, round, rng, client_id, lambda: model)
    assert len(body) == terms.upload_bytes(round)
    return terms, body


def test_a_dp_pop_device_uploads_its_k_hot_row_plus_its_share():
    info, keys = _pop(), (KeyPair(), KeyPair())
    terms = DevicePolicy().read(info)
    assert DevicePolicy().cost(terms) == 1.0 and terms.rounds == 1
    history = np.zeros((1, D))
    history[0, [2, 5, 11]] = 1.0
    model = PopularityModel(keys[1].public, np.zeros(0, np.int64))
    terms, body = _step(info, model, 0, history, np.random.default_rng(9), keys)
    rd = info.deployment.device_round(info.config, D, 0)
    v = _open(body, rd.params, keys, 0)
    # replay the device's draws (a seeded generator here; a CSPRNG on a device)
    client = SecureSumClient(rd.params, keys[0].public, keys[1].public)
    x = np.zeros(D)
    x[[2, 5, 11]] = 1.0
    np.testing.assert_array_equal(v, client.prepare(x, np.random.default_rng(9),
                                                    segment_noise(rd.segments)))
    assert rd.segments == ((D, pytest.approx(rd.segments[0][1])),)
    assert not np.array_equal(v, x)  # the share is in it


def test_dpals_and_dp_fedavg_devices_upload_every_round():
    keys = (KeyPair(), KeyPair())
    rng = np.random.default_rng(4)
    history = np.zeros((1, D))
    history[0, [1, 3, 4, 9, 12]] = 1.0
    info = _dpals()
    V = rng.normal(size=(D, 3)) * 0.1
    counts = np.arange(D, dtype=np.int64)
    for r in range(DevicePolicy().read(info).rounds):
        model = DpalsModel(keys[1].public, V, counts if r else np.zeros(0, np.int64))
        terms, body = _step(info, model, r, history, rng, keys)
        rd = info.deployment.device_round(info.config, D, r)
        assert np.isfinite(_open(body, rd.params, keys, r)).all()
    assert DevicePolicy().cost(terms) == 2.0
    # each share is sized by min_honest (20), never by the 40 enrolled (issue 31 §5 mutant)
    plan = dpals_plan(info.config, D)
    for r, rp in enumerate(plan.rounds):
        shares = info.deployment.device_round(info.config, D, r).segments
        assert [mu for _, mu in shares] == pytest.approx([s.mu / 20 for s in rp.segments])
    info = _fedavg()
    fp = fedavg_plan(info.config, D, 40)
    assert info.deployment.device_round(info.config, D, 0).segments == (
        (D * 2, pytest.approx(fp.mu / 20)),)
    model = FedAvgModel(keys[1].public, rng.normal(size=(D, 2)) * 0.1)
    for r in range(2):
        _step(info, model, r, history, rng, keys)


def test_the_policy_refuses_an_inflated_min_honest_or_n_clients():
    """Each device adds Sk(mu / min_honest): a server publishing a larger min_honest (or,
    without one, a larger n_clients) shrinks every share; the policy bounds both."""
    with pytest.raises(PolicyViolation, match="max_min_honest"):
        DevicePolicy(max_min_honest=10).read(_pop())
    with pytest.raises(PolicyViolation, match="max_clients"):
        DevicePolicy(max_clients=39).read(_pop())
    with pytest.raises(PolicyViolation, match="max_clients"):
        DevicePolicy(max_clients=39).read(_pop(min_honest=None))
    DevicePolicy(max_min_honest=20, max_clients=40).read(_pop())  # at the boundary


def test_the_policy_refuses_an_epsilon_or_delta_beyond_it():
    policy = DevicePolicy(max_epsilon_per_report=1.0)
    assert policy.cost(policy.read(_pop(epsilon=1.0))) == 1.0
    with pytest.raises(PolicyViolation, match="epsilon"):
        policy.cost(policy.read(_pop(epsilon=1.01)))
    with pytest.raises(PolicyViolation, match="delta"):
        DevicePolicy().cost(DevicePolicy().read(_pop(delta=1e-3)))


def test_the_policy_bounds_the_whole_delta_the_truncation_included():
    """With validity=prio3 the run holds at delta + (1 + e^eps) n (eta + eta_2): a policy
    whose max_delta is the config's delta exactly refuses it (before, it accepted it)."""
    from dprec.systems.dp_pop.deploy import check_of

    info = _pop(delta=1e-6, validity="prio3")
    terms = DevicePolicy().read(info)
    cost = check_of(info).delta_cost(1.0)
    assert cost > 0 and terms.delta == pytest.approx(1e-6 + cost, rel=1e-12)
    with pytest.raises(PolicyViolation, match="delta"):
        DevicePolicy(max_delta=1e-6).cost(DevicePolicy(max_delta=1e-6).read(info))
    plain = _pop(delta=1e-6)
    assert DevicePolicy(max_delta=1e-6).cost(DevicePolicy(max_delta=1e-6).read(plain)) == 1.0


@pytest.mark.parametrize("bad", ["low-order", "equal", "short"])
def test_a_device_refuses_a_bad_key(bad):
    info, keys = _pop(), (KeyPair(), KeyPair())
    server_key = keys[1].public
    proxy_key = {"low-order": bytes(32), "equal": server_key, "short": b"\1" * 31}[bad]
    terms = replace(DevicePolicy().read(info), proxy_key=proxy_key)
    model = PopularityModel(server_key, np.zeros(0, np.int64))
    with pytest.raises(SecureSumError, match="refuse to seal|different keys"):
        info.deployment.client_step(terms, np.ones((1, D)), 0, np.random.default_rng(0), 1,
                                    lambda: model)


def test_a_hostile_model_artefact_is_refused():
    info, keys = _dpals(), (KeyPair(), KeyPair())
    terms = DevicePolicy().read(info)
    wrong = DpalsModel(keys[1].public, np.zeros((D + 1, 3)), np.zeros(0, np.int64))
    with pytest.raises(DprecError, match="shape"):
        info.deployment.decode_artefact(terms, wrong.to_bytes())
    with pytest.raises(DprecError, match="expected a DpalsModel"):
        info.deployment.decode_artefact(terms, PopularityModel(
            keys[1].public, np.zeros(0, np.int64)).to_bytes())
