"""TypeScript dp-pop devices complete a round against the real services (issue 34 §1): each
reads the protocol and the server's broadcast, checks the proxy's published Prio3 check,
draws its truncated share, proves and seals (clients/js/src/systems/dp_pop.ts) and submits;
the proxy (Helper) and the server (Leader) verify every proof, and the released counts are
exactly the sum of the devices' noised vectors. Needs the built SDK (``npm test`` in
clients/js, which ``make test`` runs first)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import numpy as np
import pytest

from dprec.client.http import ServerAPI
from dprec.protocol.secure_sum.checks import check_terms
from dprec.protocol.secure_sum.published import PUBLISHED_KEY
from dprec.services.auth import client_token
from dprec.services.launch import Loopback
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.deploy import check_of, round_of
from dprec.systems.dp_pop.messages import PopularityModel

ROOT = Path(__file__).parents[3]
SDK = ROOT / "clients" / "js" / "dist" / "src" / "index.js"
DRIVER = Path(__file__).with_name("ts_dp_pop.mjs")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None or not SDK.exists(),
                       reason="needs node and the built SDK: cd clients/js && npm ci && npm test"),
]


def _post(url: str, path: str, secret: bytes, doc: dict) -> dict:
    r = httpx.post(url + path, json=doc, headers={"Authorization": "Bearer " + secret.decode()},
                   timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def _calibration(info: ProtocolInfo) -> dict:
    """What the device's code ships with for the config (Python's calibration)."""
    check = check_of(info)
    tr = check.truncation
    return {"muShare": round_of(info).share.mu, "terms": check_terms(check),
            "truncationTv": tr.clients * (tr.per_client_tv + check.l2_tv)}


def test_ts_dp_pop_devices_complete_a_proved_round(tmp_path):
    n_items, senders = 30, 3
    params = {"k": "3", "epsilon": "2", "n_clients": "4", "min_honest": "3"}
    with Loopback(tmp_path / "services") as lb:
        srv = lb.server("dp-pop", n_items, params, wait=False)
        prx = lb.proxy(srv.url, senders, senders, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        _post(srv.url, "/v1/start", lb.secret, {})
        info = ProtocolInfo.from_json(ServerAPI(srv.url).protocol_doc())
        published = httpx.get(prx.url + "/v1/round", timeout=30).json()["published"]
        assert PUBLISHED_KEY in published and published["validity"]["kind"] == "prio3"
        ys = []
        for u in range(senders):
            spec = {"sdk": SDK.as_uri(), "server": srv.url, "proxy": prx.url,
                    "clientId": 100 + u, "token": client_token(lb.token_key, 100 + u),
                    "items": [u, u + 5, 11, 20 + u], "calibration": _calibration(info)}
            path = tmp_path / f"spec-{u}.json"
            path.write_text(json.dumps(spec))
            r = subprocess.run(["node", str(DRIVER), str(path)], capture_output=True, text=True,
                               timeout=120)
            assert r.returncode == 0, r.stderr[-3000:]
            out = json.loads(r.stdout.strip().splitlines()[-1])
            assert out["round"] == 0
            ys.append(out["y"])
        closed = _post(prx.url, "/v1/rounds/0/close", lb.operator_secret, {})
        assert closed["server"]["updated"], closed
        model = PopularityModel.from_bytes(ServerAPI(srv.url).artefact("model").data)
    assert model.contributors == senders
    np.testing.assert_array_equal(model.counts, np.sum(np.asarray(ys, np.int64), axis=0))
