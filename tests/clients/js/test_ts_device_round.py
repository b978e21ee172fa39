"""The TypeScript SDK against the real services (issue 34 §1): Node devices built from
clients/js read the published protocol, run the dplcf-sp and fmf-ldp device steps and submit
through the proxy with their tokens; the server accepts every report (its own checks) and
the round completes (FMF-LDP with cells=assigned: the proxy recomputes each device's
cells from the token it issued and refuses any other); a device then fetches DPLCF's
neighbour lists by ETag. Needs the built
SDK (``make test-js`` / ``npm test`` in clients/js, which ``make test`` runs first)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dprec.protocol.deployment import generator_to_json
from dprec.services.auth import client_token
from dprec.services.launch import Loopback

ROOT = Path(__file__).parents[3]
SDK = ROOT / "clients" / "js" / "dist" / "src" / "index.js"
DRIVER = Path(__file__).with_name("ts_device.mjs")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None or not SDK.exists(),
                       reason="needs node and the built SDK: cd clients/js && npm ci && npm test"),
]


def _node(tmp_path: Path, mode: str, spec: dict) -> dict:
    path = tmp_path / f"spec-{mode}-{spec['clientId']}.json"
    path.write_text(json.dumps({"sdk": SDK.as_uri(), **spec}))
    r = subprocess.run(["node", str(DRIVER), mode, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _post(url: str, path: str, secret: bytes, doc: dict) -> dict:
    import httpx
    r = httpx.post(url + path, json=doc, headers={"Authorization": "Bearer " + secret.decode()},
                   timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("system, params", [
    ("dplcf-sp", {"neighbours": "3", "epsilon": "2"}),
    ("fmf-ldp", {"epochs": "2", "k": "5", "factors": "3", "shuffle_threshold": "3"}),
    ("fmf-ldp", {"epochs": "2", "k": "5", "factors": "3", "shuffle_threshold": "3",
                 "cells": "assigned", "mechanism": "piecewise"}),
], ids=["dplcf-sp", "fmf-ldp", "fmf-ldp-assigned-piecewise"])
def test_ts_devices_complete_a_round_against_the_services(tmp_path, system, params):
    n_items, senders = 20, 3
    with Loopback(tmp_path / "services") as lb:
        srv = lb.server(system, n_items, params, wait=False)
        prx = lb.proxy(srv.url, senders, senders, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        if params.get("cells") == "assigned":  # the proxy checks each device's cells
            _post(prx.url, "/v1/secret", lb.operator_secret, {"cells_key": "5a" * 32})
        _post(srv.url, "/v1/start", lb.secret,
              {"generator": generator_to_json(np.random.default_rng(0))})
        for u in range(senders):
            spec = {"server": srv.url, "proxy": prx.url, "clientId": 100 + u,
                    "token": client_token(lb.token_key, 100 + u), "items": [u, u + 5, 11]}
            out = _node(tmp_path, "report", spec)
            assert out["reported"] and out["round"] == 0
        closed = _post(prx.url, "/v1/rounds/0/close", lb.operator_secret, {})
        assert closed["server"]["updated"], closed
        if system == "dplcf-sp":
            got = _node(tmp_path, "fetch", {"server": srv.url, "proxy": prx.url,
                                            "clientId": 100, "items": []})
            assert (got["nItems"], got["k"]) == (n_items, 3)
            assert got["same"] and got["notModified"] == 1
