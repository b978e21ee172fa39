"""A device in FMF-LDP ``cells=assigned`` (issue 26 §1): it fetches its own cells token
from the proxy (``GET /v1/client/secret``, its client credential) and the float64 broadcast,
reports on exactly the cells the proxy recomputes, pays k x eps per report as with chosen
cells, and refuses a malformed token before anything is charged."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import AUTH, OPERATOR_AUTH, TOKEN_KEY, Stack, fmf_info, headers  # noqa: E402

from dprec.client import DeviceClient, ProxyAPI, SeededSource, ServerAPI  # noqa: E402
from dprec.client.errors import BadReply  # noqa: E402
from dprec.client.http import ServiceError  # noqa: E402
from dprec.client.policy import DevicePolicy  # noqa: E402
from dprec.privacy.ledger import PrivacyLedger  # noqa: E402
from dprec.protocol.messages import ItemMatrix, ItemMatrix64, Message, MessageError  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402
from dprec.systems.fmf.cells import assigned_cells, client_tokens, round_seed  # noqa: E402
from dprec.systems.fmf.client import FederatedClients  # noqa: E402

KEY = bytes(range(32))
N, K = 30, 4


class LyingProxy(ProxyAPI):
    """A proxy whose token endpoint answers ``doc`` (a hostile or broken proxy)."""

    def __init__(self, client, doc) -> None:
        super().__init__("http://proxy", client=client)
        self.doc = doc

    def client_secret(self, client_id, token):
        return self.doc


def _device(stack, tmp_path, client_id, budget=100.0, proxy=None, source=None):
    return DeviceClient(client_id, client_token(TOKEN_KEY, client_id),
                        ServerAPI("http://server", client=stack.server),
                        proxy or ProxyAPI("http://proxy", client=stack.proxy),
                        tmp_path / f"device-{client_id}", budget, source)


def _history(items):
    h = np.zeros((1, N))
    h[0, items] = 1
    return sp.csr_matrix(h)


def _sent(tmp_path, client_id, round=0):
    (path,) = (tmp_path / f"device-{client_id}" / "sent").glob(f"*-{round}.msg")
    return Message.from_bytes(path.read_bytes())


@pytest.fixture
def assigned(tmp_path):
    with Stack(tmp_path, fmf_info(N, k=K, epochs=2, cells="assigned"), threshold=2,
               batch_senders=2) as s:
        s.start()
        r = s.proxy.post("/v1/secret", headers=OPERATOR_AUTH, json={"cells_key": KEY.hex()})
        assert r.status_code == 200, r.text
        yield s


def _V64(stack):
    return ItemMatrix64.from_bytes(stack.server.get("/v1/artefacts/item-matrix-f64").content).matrix


def test_devices_complete_assigned_rounds_on_the_cells_the_proxy_checks(assigned, tmp_path):
    cost = PrivacyLedger.cost(assigned.info.mechanism().dp_event(), K)
    ids = [100, 101, 102]
    devices = [_device(assigned, tmp_path, u, budget=3 * cost) for u in ids]
    hist = [_history([j, j + 1, 7]) for j in range(3)]
    for rnd in range(2):
        seed = round_seed(_V64(assigned))
        assert all(d.report(h) for d, h in zip(devices, hist, strict=True))
        assert assigned.proxy_app.state.service.store.senders(rnd) == 3  # all passed the check
        items, factors = assigned_cells(seed, client_tokens(KEY, np.array(ids)), K, N, 3)
        for j, u in enumerate(ids):
            m = _sent(tmp_path, u, rnd)
            assert np.array_equal(m.items, items[j]) and np.array_equal(m.factors, factors[j])
        assert all(d.ledger.spent == (rnd + 1) * cost for d in devices)  # k x eps, as chosen
        out = assigned.close(rnd).json()
        assert out["senders"] == 3 and out["server"]["updated"]
    assert devices[0].report(hist[0]) is False  # finished
    assert len(devices[0].recommend(hist[0], n=5)) == 5


def test_the_device_report_is_the_simulations_client_bit_for_bit(assigned, tmp_path):
    d = _device(assigned, tmp_path, 5, source=SeededSource(3))
    h = _history([1, 2, 3])
    assert d.report(h)
    (token,) = client_tokens(KEY, np.array([5]))
    sim = FederatedClients(h, factors=3, alpha=d.terms.alpha, reg=d.terms.regularization,
                           k=K, clip=d.terms.clip, exact=False,
                           mechanism=d.terms.build_mechanism(), ledger=None, batch_size=1,
                           cell_tokens=[token])
    (batch,) = list(sim.step(_V64(assigned), 0, SeededSource(3).generator()))
    m, want = _sent(tmp_path, 5), batch.to_messages()[0]
    assert np.array_equal(m.items, want.items) and np.array_equal(m.factors, want.factors)
    assert np.array_equal(m.bits, want.bits)


def test_a_wrong_token_gets_the_report_refused_and_still_paid(assigned, tmp_path):
    wrong = LyingProxy(assigned.proxy, {"cells_token": "ab" * 32})
    d = _device(assigned, tmp_path, 8, proxy=wrong)
    with pytest.raises(ServiceError) as e:
        d.report(_history([4]))
    assert e.value.status == 422 and "not the ones assigned" in e.value.message
    assert d.ledger.spent == PrivacyLedger.cost(assigned.info.mechanism().dp_event(), K)
    assert assigned.proxy_app.state.service.store.senders(0) == 0


@pytest.mark.parametrize("doc", [{"cells_token": "zz" * 32}, {"cells_token": "ab" * 31},
                                 {"cells_token": "ab" * 33}, {"cells_token": 7}, {},
                                 {"cells_token": "ab " * 21 + "a"}])
def test_a_malformed_token_is_refused_before_anything_is_charged(assigned, tmp_path, doc):
    d = _device(assigned, tmp_path, 9, proxy=LyingProxy(assigned.proxy, doc))
    with pytest.raises(BadReply, match="cells token"):
        d.report(_history([4]))
    assert d.ledger.spent == 0
    assert not list((tmp_path / "device-9" / "sent").glob("*.msg"))


def test_the_token_endpoint_answers_only_the_authenticated_client(assigned):
    r = assigned.proxy.get("/v1/client/secret", headers=headers(12))
    assert r.status_code == 200, r.text
    assert r.json() == {"cells_token": client_tokens(KEY, np.array([12]))[0].hex()}
    assert assigned.proxy.get("/v1/client/secret").status_code == 401
    wrong = {**headers(12), "Authorization": "Bearer " + client_token(TOKEN_KEY, 13)}
    assert assigned.proxy.get("/v1/client/secret", headers=wrong).status_code == 401
    assert assigned.proxy.get("/v1/client/secret", headers=AUTH).status_code == 401


def test_a_proxy_of_chosen_cells_hands_no_token(tmp_path):
    with Stack(tmp_path, fmf_info(N), threshold=1) as s:
        s.start()
        r = s.proxy.get("/v1/client/secret", headers=headers(12))
        assert r.status_code == 409 and "no secret" in r.text


def test_a_device_reads_assigned_cells_with_the_float64_broadcast():
    chosen = DevicePolicy().read(fmf_info(N, cells="chosen"))
    assert chosen.artefact == "item-matrix" and chosen.cells == "chosen"
    assert chosen.artefact_bytes == ItemMatrix.serialized_size(N, 3)
    t = DevicePolicy().read(fmf_info(N, cells="assigned"))
    assert t.artefact == "item-matrix-f64" and t.cells == "assigned"
    assert t.artefact_bytes == ItemMatrix64.serialized_size(N, 3)
    deployment = fmf_info(N, cells="assigned").deployment
    V = np.arange(N * 3, dtype=np.float64).reshape(N, 3) / 7
    assert np.array_equal(deployment.decode_artefact(t, ItemMatrix64(V).to_bytes()), V)
    with pytest.raises(MessageError, match="expected a ItemMatrix64 message"):
        deployment.decode_artefact(t, ItemMatrix(V.astype(np.float32)).to_bytes())
