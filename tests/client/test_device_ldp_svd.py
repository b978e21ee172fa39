"""LDP-SVD devices (issue 32 §3): the device half lives in systems/ldp_svd/ alone. A device
perturbs its own ratings with the simulation's client step (bit for bit, same generator),
is charged N x eps before anything is sent, and ranks with the server's model, its own
factor folded in on the device. Laplace-RR (no finite guarantee) is refused by any policy."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import OPERATOR_AUTH, TOKEN_KEY, Stack  # noqa: E402

from dprec.client import DeviceClient, DevicePolicy, ProxyAPI, SeededSource, ServerAPI  # noqa: E402
from dprec.client.errors import BadReply, PolicyViolation  # noqa: E402
from dprec.mechanisms.numeric import PiecewiseMechanism  # noqa: E402
from dprec.protocol.messages import Message  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402
from dprec.systems.deployable import ProtocolInfo  # noqa: E402
from dprec.systems.ldp_svd.client import RatingClients  # noqa: E402
from dprec.systems.ldp_svd.messages import RatingModel, RatingUpload, Scale  # noqa: E402
from dprec.systems.ldp_svd.system import LaplaceRRSVDConfig, LDPSVDConfig  # noqa: E402

N, M = 12, 6


def _info(cfg) -> ProtocolInfo:
    return ProtocolInfo(cfg_name(cfg), N, cfg)


def cfg_name(cfg) -> str:
    return "laplace-rr-svd" if isinstance(cfg, LaplaceRRSVDConfig) else "ldp-svd"


def _ldp(**kw):
    return LDPSVDConfig(**{"factors": 3, "epochs": 4, "rating_min": 1.0, "rating_max": 5.0,
                           "n_users": M, "mechanism": "piecewise", "epsilon": 2.0, **kw})


def _device(stack, tmp_path, client_id, budget=1e9, source=None, policy=None):
    return DeviceClient(client_id, client_token(TOKEN_KEY, client_id),
                        ServerAPI("http://server", client=stack.server),
                        ProxyAPI("http://proxy", client=stack.proxy),
                        tmp_path / f"device-{client_id}", budget, source, policy)


def _ratings(u: int) -> sp.csr_matrix:
    h = np.zeros((1, N))
    h[0, [u, (u + 3) % N, (u + 7) % N]] = [5.0, 1.0 + u % 5, 3.0]
    return sp.csr_matrix(h)


@pytest.mark.parametrize("hide_items", [False, True])
def test_a_device_sends_what_the_simulation_sends_and_is_charged_n_times_eps(tmp_path,
                                                                             hide_items):
    with Stack(tmp_path, _info(_ldp(hide_items=hide_items)), threshold=1) as s:
        s.start()
        d = _device(s, tmp_path, 4, source=SeededSource(9))
        terms = d.describe()
        assert (terms.family, terms.count, terms.artefact) == ("ldp_svd", N, "model")
        assert terms.artefact_bytes == RatingModel.serialized_size(M, N, 3)
        assert d.report(_ratings(4))
        assert d.ledger.spent == pytest.approx(N * 2.0)
        (path,) = (tmp_path / "device-4" / "sent").glob("*-0.msg")
        sent = Message.from_bytes(path.read_bytes())
        sim = RatingClients(_ratings(4), Scale(1.0, 5.0), PiecewiseMechanism(2.0), 1,
                            0.0625 if hide_items else 0.0)
        (batch,) = list(sim.step(None, 0, SeededSource(9).generator()))
        assert isinstance(sent, RatingUpload) and sent.client_id == 4
        assert np.array_equal(sent.items, batch.items)
        assert np.array_equal(sent.values, batch.values)
        assert sent.k >= 3 and (hide_items or sent.k == 3)


def test_devices_rank_with_the_served_model_folding_in_their_own_ratings(tmp_path):
    with Stack(tmp_path, _info(_ldp()), threshold=1) as s:
        s.start()
        devices = [_device(s, tmp_path, u) for u in range(M)]
        assert all(d.report(_ratings(u)) for u, d in enumerate(devices))
        assert s.proxy.post("/v1/rounds/0/close", headers=OPERATOR_AUTH).json()["server"][
            "updated"]
        model = devices[2].artefact()
        assert isinstance(model, RatingModel) and model.user_factors.shape == (M, 3)
        scores = devices[2].scores(_ratings(2))
        assert scores.shape == (N,) and np.all(np.isfinite(scores))
        top = devices[2].recommend(_ratings(2), n=4)
        assert len(top) == 4 and not set(top) & {2, 5, 9}


def test_the_fold_in_recovers_a_user_the_model_fits_exactly():
    """Known answer: ratings made by mu + b_i + b_u + p.q_i are scored back (reg -> 0)."""
    from dprec.systems.ldp_svd.device import fold_in_scores

    rng = np.random.default_rng(0)
    Q, bi = rng.normal(size=(N, 3)), rng.normal(size=N)
    p, bu, mu = np.array([0.5, -1.0, 2.0]), 0.3, 3.0
    truth = mu + bi + bu + Q @ p
    model = RatingModel(mu, np.zeros((M, 3)), Q, np.zeros(M), bi, np.ones(M, np.uint8),
                        np.ones(N, np.uint8))
    h = sp.csr_matrix(np.where(np.arange(N) < 8, truth, 0.0)[None, :])

    class Terms:
        n_items, regularization = N, 0.0
        settings = {"biases": True}

    np.testing.assert_allclose(fold_in_scores(Terms, h, model), truth, atol=1e-8)


def test_laplace_rr_has_a_device_step_but_no_policy_accepts_its_charge(tmp_path):
    cfg = LaplaceRRSVDConfig(factors=3, epochs=2, rating_min=1.0, rating_max=5.0, n_users=M)
    with Stack(tmp_path, _info(cfg), threshold=1) as s:
        s.start()
        named = DevicePolicy(mechanisms={"ldp_svd": ["laplace-rr"]})
        for policy in (None, named):
            d = _device(s, tmp_path, 1, policy=policy)
            with pytest.raises((PolicyViolation, BadReply), match="laplace-rr|Laplace-RR"):
                d.report(_ratings(1))
            assert d.ledger.spent == 0
        terms = d.describe()
        info = d.info
        body = info.deployment.client_step(terms, _ratings(1), 0, SeededSource(2).generator(),
                                           1, lambda: None)
        sim = RatingClients(_ratings(1), Scale(1.0, 5.0), info.mechanism(), 1, 0.0)
        (batch,) = list(sim.step(None, 0, SeededSource(2).generator()))
        assert np.array_equal(RatingUpload.from_bytes(body).values, batch.values)
