"""PrivRec and DP-PrivRec devices (issue 32 §3): the device half lives in systems/privrec/.
A selected device trains the broadcast model on its own ratings and side features with the
simulation's step (bit for bit, same generator) and sends its update in the clear to the
trusted aggregator, which a device policy refuses unless it sets ``trust_aggregator``; with
it the ledger charges DP-PrivRec's Gaussian release before sending and notes that the
guarantee rests on that server."""

import base64
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parents[2] / "services"))
from svc import AUTH, OPERATOR_AUTH, TOKEN_KEY, Stack  # noqa: E402

from dprec.client import DeviceClient, DevicePolicy, ProxyAPI, SeededSource, ServerAPI  # noqa: E402
from dprec.client.errors import PolicyViolation  # noqa: E402
from dprec.data.features import SideFeatures, side_features  # noqa: E402
from dprec.data.synthetic import synthetic  # noqa: E402
from dprec.errors import DprecError  # noqa: E402
from dprec.models.local_training import LocalTrainer  # noqa: E402
from dprec.models.side_net import SideFeatureNet, UserRows, parameters_of, to_vector  # noqa: E402
from dprec.privacy.gaussian import gaussian_rdp_epsilon  # noqa: E402
from dprec.protocol.deployment import generator_to_json  # noqa: E402
from dprec.protocol.messages import Message  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402
from dprec.systems.deployable import ProtocolInfo  # noqa: E402
from dprec.systems.privrec.accounting import privrec_noise_multipliers  # noqa: E402
from dprec.systems.privrec.client import SideNetClients  # noqa: E402
from dprec.systems.privrec.config import PrivRecConfig  # noqa: E402
from dprec.systems.privrec.messages import InitialModel, ModelBroadcast, UpdateUpload  # noqa: E402
from dprec.systems.registry import make_config  # noqa: E402

TINY = {"rounds": 2, "clients_per_round": 5, "local_epochs": 1, "finetune_epochs": 1,
        "embedding_dim": 4, "hidden_width": 8, "hidden_layers": 2, "initial_clip": 0.5}
DS = synthetic(40, 30, 800, rng=7)
FEATURES = side_features(DS)
RATINGS = sp.csr_matrix(DS.matrix)
TRUST = DevicePolicy(trust_aggregator=True)
NO_DP = DevicePolicy(trust_aggregator=True, accept_no_dp=True)


def _net(cfg: PrivRecConfig) -> SideFeatureNet:
    return SideFeatureNet(FEATURES, DS.n_items, dim=cfg.embedding_dim, hidden=cfg.hidden,
                          seed=3)


def _info(name: str) -> tuple[ProtocolInfo, SideFeatureNet]:
    cfg = make_config(name, TINY)
    net = _net(cfg)
    n = int(sum(p.numel() for p in net.parameters()))
    return ProtocolInfo(name, DS.n_items, make_config(name, {**TINY, "n_params": n})), net


def _start(stack: Stack, net: SideFeatureNet) -> ModelBroadcast:
    theta0 = to_vector(parameters_of(net)).numpy()
    enrolled = np.flatnonzero(np.diff(RATINGS.indptr) > 0)
    initial = base64.b64encode(InitialModel(theta0, enrolled).to_bytes()).decode()
    r = stack.server.post("/v1/start", headers=AUTH, json={
        "generator": generator_to_json(np.random.default_rng(1)), "initial": initial})
    assert r.status_code == 200, r.text
    return ModelBroadcast.from_bytes(stack.server.get("/v1/artefacts/model").content)


def _device(stack, tmp_path, client_id, policy=TRUST, budget=1e9, seed=9):
    return DeviceClient(client_id, client_token(TOKEN_KEY, client_id),
                        ServerAPI("http://server", client=stack.server),
                        ProxyAPI("http://proxy", client=stack.proxy),
                        tmp_path / f"device-{client_id}", budget, SeededSource(seed), policy)


def _own(u: int) -> SideFeatures:
    return SideFeatures(users=FEATURES.users.take([u]), items=FEATURES.items)


@pytest.mark.parametrize("name", ["privrec", "dp-privrec"])
def test_by_default_a_device_refuses_to_send_its_update_in_the_clear(tmp_path, name):
    info, net = _info(name)
    with Stack(tmp_path, info, threshold=1) as s:
        b = _start(s, net)
        u = int(b.clients[0])
        d = _device(s, tmp_path, u, policy=None)
        with pytest.raises(PolicyViolation, match="trust_aggregator = true"):
            d.report(RATINGS[u], features=_own(u))
        assert d.ledger.spent == 0 and not list((tmp_path / f"device-{u}" / "sent").iterdir())
        terms = d.describe()
        assert terms.trusted_aggregator and terms.family == "privrec"
        assert terms.artefact_bytes == ModelBroadcast.serialized_size(b.params.size, 5)


def test_a_selected_device_sends_the_simulations_update_and_is_charged_before_sending(
        tmp_path):
    """DP-PrivRec: the device's update is the simulation's for the same generator; the
    ledger charges the Gaussian release eps(1) at z_eff, then eps(2) - eps(1), each with
    its note; a device the round did not select sends nothing and is not charged."""
    info, net = _info("dp-privrec")
    cfg = info.config
    z = privrec_noise_multipliers(cfg.noise_multiplier, cfg.budget_balance, cfg.server_lr)[2]
    with Stack(tmp_path, info, threshold=1) as s:
        b = _start(s, net)
        u = int(b.clients[0])
        d = _device(s, tmp_path, u)
        assert d.report(RATINGS[u], features=_own(u))
        one = gaussian_rdp_epsilon(z, 1.0, 1, cfg.delta)
        assert d.ledger.spent == pytest.approx(one) and 0.5 < one < 5
        (note,) = d.ledger.notes.values()
        assert "trusted aggregator" in note and "never against it" in note
        (path,) = (tmp_path / f"device-{u}" / "sent").glob("*-0.msg")
        sent = Message.from_bytes(path.read_bytes())
        alone = ModelBroadcast(b.params, np.array([u]), 0, b.clip)
        sim = SideNetClients(LocalTrainer(net), parameters_of(net), RATINGS,
                             UserRows.from_block(FEATURES.users), cfg, None, None)
        (batch,) = list(sim.step(alone, 0, SeededSource(9).generator()))
        assert isinstance(sent, UpdateUpload) and sent.client_id == u
        assert np.array_equal(sent.delta, batch.deltas[0]) and np.any(sent.delta != 0)
        assert sent.unclipped == bool(batch.unclipped[0])
        outsider = int(np.setdiff1d(np.arange(DS.n_users), b.clients)[0])
        other = _device(s, tmp_path, outsider)
        assert not other.report(RATINGS[outsider], features=_own(outsider))
        assert other.ledger.spent == 0
        for c in b.clients[1:]:
            assert _device(s, tmp_path, int(c)).report(RATINGS[int(c)], features=_own(int(c)))
        assert s.proxy.post("/v1/rounds/0/close", headers=OPERATOR_AUTH).json()["server"][
            "updated"]
        b1 = ModelBroadcast.from_bytes(s.server.get("/v1/artefacts/model").content)
        assert b1.round == 1 and not np.array_equal(b1.params, b.params)
        (again, *_) = sorted(set(b.clients.tolist()) & set(b1.clients.tolist()))
        twice = _device(s, tmp_path, again)  # its second report of the run costs what it adds
        assert twice.report(RATINGS[again], features=_own(again))
        two = gaussian_rdp_epsilon(z, 1.0, 2, cfg.delta)
        assert twice.ledger.spent == pytest.approx(two) and two - one < one
        assert len(twice.ledger.notes) == 2
        scores = d.scores(RATINGS[u], features=_own(u))
        assert scores.shape == (DS.n_items,) and np.all(np.isfinite(scores))
        top = d.recommend(RATINGS[u], n=5, features=_own(u))
        assert len(top) == 5 and not set(top) & set(RATINGS[u].indices)


def test_privrec_without_noise_is_refused_unless_accepted_then_noted_without_a_guarantee(
        tmp_path):
    info, net = _info("privrec")
    with Stack(tmp_path, info, threshold=1) as s:
        b = _start(s, net)
        u = int(b.clients[1])
        with pytest.raises(PolicyViolation, match="no DP guarantee .* accept_no_dp = true"):
            _device(s, tmp_path, u).report(RATINGS[u], features=_own(u))
        d = _device(s, tmp_path, u, policy=NO_DP)
        assert d.report(RATINGS[u], features=_own(u))
        assert d.ledger.spent == 0
        (note,) = d.ledger.notes.values()
        assert "no DP guarantee" in note
        doc = json.loads((tmp_path / f"device-{u}" / "ledger.json").read_text())
        assert list(doc["notes"].values()) == [note]


def test_hostile_or_mismatched_side_features_are_refused_before_anything_is_sent(tmp_path):
    info, net = _info("dp-privrec")
    with Stack(tmp_path, info, threshold=1) as s:
        b = _start(s, net)
        u = int(b.clients[0])
        d = _device(s, tmp_path, u)
        two_users = SideFeatures(users=FEATURES.users.take([u, u + 1]), items=FEATURES.items)
        short = SideFeatures(users=FEATURES.users.take([u]),
                             items=FEATURES.items.take(np.arange(5)))
        other_fields = SideFeatures(users=FEATURES.items.take([0]), items=FEATURES.items)
        for bad, match in ((None, "side features"), ({"taste": 3}, "got dict"),
                           (two_users, "1 user row"), (short, "1 user row"),
                           (other_fields, "n_params")):
            with pytest.raises(DprecError, match=match):
                d.report(RATINGS[u], features=bad)
        assert d.ledger.spent == 0 and not list((tmp_path / f"device-{u}" / "sent").iterdir())


def test_the_policy_option_is_a_boolean_and_travels_in_policy_files(tmp_path):
    with pytest.raises(DprecError, match="trust_aggregator must be true or false"):
        DevicePolicy(trust_aggregator="yes")
    path = tmp_path / "policy.toml"
    path.write_text("trust_aggregator = true\n")
    assert DevicePolicy.load(path).trust_aggregator is True
    assert DevicePolicy().to_dict()["trust_aggregator"] is False


@pytest.mark.parametrize("field, value, match", [
    ("hidden_layers", 10**6, "hidden_layers must be an integer in"),
    ("local_epochs", 10**9, "local_epochs must be an integer in"),
    ("finetune_epochs", -1, "finetune_epochs must be an integer"),
    ("dp", "yes", "dp must be true or false"),
    ("algorithm", "sgd", "algorithm must be .reptile. or .maml."),
    ("n_params", 0, "n_params must be an integer"),
    ("local_lr", float("nan"), "local_lr must be .*finite"),
])
def test_a_hostile_config_is_a_bad_reply_before_anything_is_built(field, value, match):
    """The published config as a device receives it: decoded into PrivRecConfig (its own
    checks), then the sizes that bound the device's work read under the policy."""
    from dprec.client.errors import BadReply
    from dprec.client.http import ServerAPI

    info, _ = _info("dp-privrec")
    doc = info.to_json()
    doc["config"] = {**doc["config"], field: value}
    api = ServerAPI.__new__(ServerAPI)
    api.protocol_doc = lambda: doc  # type: ignore[method-assign]
    with pytest.raises(BadReply, match=match):
        TRUST.read(api.protocol())


def test_simulated_clients_drawing_as_devices_train_each_alone_from_its_own_generator(
        monkeypatch):
    """``devices=True`` (over the services): each selected client is the population-of-one
    step from its own generator (here a planted seed in place of the CSPRNG)."""
    import dprec.systems.privrec.client as clients_module

    cfg = make_config("dp-privrec", TINY)
    net = _net(cfg)
    like, users = parameters_of(net), UserRows.from_block(FEATURES.users)
    theta = to_vector(like).numpy()
    b = ModelBroadcast(theta, np.array([7, 2, 11]), 0, 0.05)
    monkeypatch.setattr(clients_module, "secure_generator", lambda: np.random.default_rng(4))
    devices = SideNetClients(LocalTrainer(net), like, RATINGS, users, cfg, None, None,
                             devices=True)
    (batch,) = list(devices.step(b, 0, np.random.default_rng(0)))
    assert batch.clients.tolist() == [2, 7, 11]
    seeded = SideNetClients(LocalTrainer(net), like, RATINGS, users, cfg, None, None)
    for j, c in enumerate(batch.clients):
        (one,) = list(seeded.step(ModelBroadcast(theta, np.array([c]), 0, 0.05), 0,
                                  np.random.default_rng(4)))
        assert np.array_equal(batch.deltas[j], one.deltas[0])
        assert batch.unclipped[j] == one.unclipped[0]
    assert np.all(np.linalg.norm(batch.deltas, axis=1) <= 0.05 * (1 + 1e-6))
