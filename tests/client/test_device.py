"""The SDK on a device: conditional artefact fetches, reports through the proxy under the
ledger, idempotent re-sends after a crash, on-device ranking."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import OPERATOR_AUTH, TOKEN_KEY, Stack, dplcf_info, fmf_info  # noqa: E402

from dprec.client import DeviceClient, ProxyAPI, SeededSource, ServerAPI  # noqa: E402
from dprec.client.http import ServiceError  # noqa: E402
from dprec.privacy.ledger import PrivacyLedger  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402


def _device(stack, tmp_path, client_id, budget, source=None):
    return DeviceClient(client_id, client_token(TOKEN_KEY, client_id),
                        ServerAPI("http://server", client=stack.server),
                        ProxyAPI("http://proxy", client=stack.proxy),
                        tmp_path / f"device-{client_id}", budget, source)


def _history(n_items, items):
    h = np.zeros((1, n_items))
    h[0, items] = 1
    return sp.csr_matrix(h)


@pytest.fixture
def fmf(tmp_path):
    with Stack(tmp_path, fmf_info(n_items=30, k=4, epochs=2), threshold=2,
               batch_senders=2) as s:
        s.start()
        yield s


def test_fmf_device_reports_charges_once_and_ranks_locally(fmf, tmp_path):
    cost = PrivacyLedger.cost(fmf.info.mechanism().dp_event(), 4)  # k x eps = 10
    devices = [_device(fmf, tmp_path, 100 + u, budget=25.0) for u in range(3)]
    hist = [_history(30, [u, u + 1, 7]) for u in range(3)]
    assert all(d.report(h) for d, h in zip(devices, hist, strict=True))
    assert devices[0].ledger.spent == cost
    assert devices[0].report(hist[0])  # again (a retry): no new charge, the proxy keeps one
    assert devices[0].ledger.spent == cost
    assert fmf.proxy_app.state.service.store.senders(0) == 3
    out = fmf.close(0).json()
    assert out["senders"] == 3 and out["server"]["updated"]
    # round 1: 20 of 25 spent after it; a third round would not fit (the ledger refuses)
    assert all(d.report(h) for d, h in zip(devices, hist, strict=True))
    assert devices[0].ledger.spent == 2 * cost and devices[0].ledger.remaining == 5.0
    fmf.close(1)
    assert devices[0].report(hist[0]) is False  # finished
    top = devices[0].recommend(hist[0], n=5)
    assert len(top) == 5 and not set(top) & {0, 1, 7}
    v1 = devices[0].server.not_modified
    devices[0].scores(hist[0])
    assert devices[0].server.not_modified == v1 + 1  # V unchanged: a 304, no download


def test_the_ledger_refuses_before_anything_is_sent(fmf, tmp_path):
    d = _device(fmf, tmp_path, 7, budget=5.0)  # one report costs 10
    assert d.report(_history(30, [1])) is False
    assert d.ledger.spent == 0 and fmf.proxy_app.state.service.store.senders(0) == 0


def test_a_restarted_device_resends_the_same_bytes(fmf, tmp_path):
    d = _device(fmf, tmp_path, 9, budget=100.0, source=SeededSource(1))
    d.report(_history(30, [2, 3]))
    (sent,) = (tmp_path / "device-9" / "sent").glob("*-0.msg")
    stored = sent.read_bytes()
    again = _device(fmf, tmp_path, 9, budget=100.0, source=SeededSource(2))
    assert again.report(_history(30, [2, 3]))  # 409 on the re-send = it had arrived
    assert sent.read_bytes() == stored
    assert again.ledger.spent == d.ledger.spent
    forged = _device(fmf, tmp_path / "other", 9, budget=100.0)
    with pytest.raises(ServiceError) as e:  # a fresh device with the same id: refused
        forged.report(_history(30, [4]))
    assert e.value.status == 409


def test_dplcf_device(tmp_path):
    with Stack(tmp_path, dplcf_info(n_items=20, neighbours=3), threshold=2,
               batch_senders=2) as s:
        s.start()
        devices = [_device(s, tmp_path, u, budget=1e9) for u in range(4)]
        hist = [_history(20, [u, u + 5, u + 10]) for u in range(4)]
        assert all(d.report(h) for d, h in zip(devices, hist, strict=True))
        assert devices[0].ledger.spent == pytest.approx(20 * 1.0)  # N bits x eps
        assert s.proxy.post("/v1/rounds/0/close", headers=OPERATOR_AUTH).json()["server"]["updated"]
        top = devices[1].recommend(hist[1], n=3)
        assert len(top) == 3 and not set(top) & {1, 6, 11}
        with pytest.raises(Exception, match="one row of 20"):
            devices[1].scores(np.ones((2, 20)))
