"""A release the server's role refuses at the round's close (dp-pop: fewer contributors than
min_honest) answers 409 with the role's reason and leaves the round open (nothing
published); not a 500. The count is checked before any share is opened, and a proxy that
would release such a set refuses to start."""

from __future__ import annotations

import numpy as np
import pytest
from starlette.testclient import TestClient
from svc import AUTH, SECRET

from dprec.errors import DprecError
from dprec.protocol.secure_sum.deploy import sealed_uploads
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.protocol.secure_sum.wire import ClientBlock, SumRelease
from dprec.services.launch import Loopback
from dprec.services.server import ServerSettings, create_server_app
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.client import noisy_vectors
from dprec.systems.dp_pop.deploy import round_of
from dprec.systems.dp_pop.messages import PopularityModel
from dprec.systems.dp_pop.system import DpPopConfig


def _release_of(info: ProtocolInfo, server_key: bytes, relay: SecureSumRelay, n: int) -> bytes:
    """A proxy's release of ``n`` clients' uploads, sealed to ``server_key``."""
    cal = round_of(info)
    rows = np.zeros((n, info.n_items), np.int64)
    rows[:, :3] = 1
    vectors = noisy_vectors(rows, np.arange(n), 3, "uniform", cal.share, 77)
    block = ClientBlock(np.arange(n), vectors.sum(axis=0), lambda: vectors, 0, server_key,
                        relay.keys.public, cal.params)
    return relay.release([body for _, body in sealed_uploads(block)], 0, 2)


def test_the_server_answers_409_with_the_roles_reason_and_keeps_the_round_open(tmp_path):
    info = ProtocolInfo("dp-pop", 20, DpPopConfig(epsilon=2.0, k=3, n_clients=30,
                                                  min_honest=20, validity="none"))
    app = create_server_app(ServerSettings(info, tmp_path / "s", SECRET))
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.post("/v1/start", headers=AUTH, json={}).status_code == 200
        key = PopularityModel.from_bytes(c.get("/v1/artefacts/model").content).server_key
        relay = SecureSumRelay(round_of(info).params, tmp_path / "p")
        relay.see_broadcast(0, c.get("/v1/artefacts/model").content)
        release = _release_of(info, key, relay, 10)
        r = c.post("/v1/rounds/0/batches", content=SumRelease.from_bytes(release).to_bytes(),
                   headers={**AUTH, "Idempotency-Key": "release-key-1",
                            "Content-Type": "application/octet-stream"})
        assert r.status_code == 201, r.text
        closed = c.post("/v1/rounds/0/close", headers=AUTH)
        assert closed.status_code == 409, closed.text
        error = closed.json()["error"]
        assert "round 0 is not closed" in error and "fewer than min_honest = 20" in error
        assert "refused unopened" in error  # counted before any share was opened
        state = c.get("/v1/round").json()
        assert state["round"] == 0 and state["history"] == [] and state["version"] == 0


@pytest.mark.slow
def test_a_proxy_process_with_a_threshold_below_min_honest_refuses_to_start(tmp_path):
    """Issue 31 §2: before, such a proxy started, released 3 uploads against min_honest = 5,
    and the server decrypted the 3-client sum before it refused it."""
    with Loopback(tmp_path) as lb:
        srv = lb.server("dp-pop", 16, {"k": "3", "n_clients": "6", "min_honest": "5"})
        with pytest.raises(DprecError, match="min_honest = 5"):
            lb.proxy(srv.url, 2, 2)
