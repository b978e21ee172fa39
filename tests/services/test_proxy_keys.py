"""The proxy's keys (issue 31 §4).

- Cells key (FMF-LDP ``cells=assigned``): a client's ``GET /v1/client/secret`` before the
  operator's ``POST /v1/secret`` made the proxy draw its own key and refuse the operator's
  from then on. The proxy is now not ready (503) until the operator's key is held.
- A corrupt key file let the proxy start, then answered every client 503 with the absolute
  state path. The proxy now refuses to start (exit 2, what to do), and no error a client
  reads names a path.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from svc import OPERATOR, OPERATOR_AUTH, SECRET, TOKEN_KEY, Stack, fmf_info, headers

from dprec.errors import DprecError
from dprec.protocol.messages import GradientReports
from dprec.protocol.secure_sum.relay import KEY_FILE as SUM_KEY
from dprec.services.proxy import ProxySettings, create_proxy_app
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.fmf.cells import client_tokens
from dprec.systems.fmf.proxy import KEY_FILE as CELLS_KEY

KEY = bytes(range(32))


def _dp_pop() -> ProtocolInfo:
    return ProtocolInfo("dp-pop", 20, DpPopConfig(epsilon=2.0, k=3, n_clients=30,
                                                  min_honest=20))


def test_the_proxy_is_not_ready_until_the_operator_gives_the_cells_key(tmp_path):
    with Stack(tmp_path, fmf_info(cells="assigned", mechanism="binary"), threshold=1) as s:
        s.start()
        r = s.proxy.get("/v1/client/secret", headers=headers(3))
        assert r.status_code == 503, r.text
        assert "not ready" in r.json()["error"] and "POST /v1/secret" in r.json()["error"]
        k = s.info.k
        upload = GradientReports(3, np.zeros(k, np.int64), np.zeros(k, np.int64),
                                 np.ones(k, np.uint8)).to_bytes()
        r = s.submit(0, 3, upload)
        assert r.status_code == 503 and "not ready" in r.json()["error"]
        assert not (tmp_path / "proxy" / CELLS_KEY).exists()  # nothing drew a key
        r = s.proxy.post("/v1/secret", headers=OPERATOR_AUTH, json={"cells_key": KEY.hex()})
        assert r.status_code == 200, r.text  # was 409: the proxy had drawn its own
        r = s.proxy.get("/v1/client/secret", headers=headers(3))
        assert r.status_code == 200
        assert r.json() == {"cells_token": client_tokens(KEY, np.array([3]))[0].hex()}


def _settings(root, info_state: str = "proxy") -> ProxySettings:
    return ProxySettings("http://server", root / info_state, SECRET, TOKEN_KEY,
                         operator_secret=OPERATOR)


def test_a_corrupt_cells_key_is_refused_at_start_with_what_to_do(tmp_path):
    with Stack(tmp_path, fmf_info(cells="assigned", mechanism="binary"), threshold=1) as s:
        s.start()
        assert s.proxy.post("/v1/secret", headers=OPERATOR_AUTH,
                            json={"cells_key": KEY.hex()}).status_code == 200
        s.proxy.get("/v1/round")
    (tmp_path / "proxy" / CELLS_KEY).write_bytes(b"short")
    try:
        create_proxy_app(_settings(tmp_path))
    except DprecError as e:
        message = str(e)
    else:
        raise AssertionError("a proxy with a corrupt cells key started")
    assert str(tmp_path / "proxy") in message and "restore it from a backup" in message
    assert "fresh --state" in message


@pytest.mark.slow  # dprec serve proxy as a process
def test_a_corrupt_secure_sum_key_stops_dprec_serve_proxy_with_exit_2(tmp_path):
    with Stack(tmp_path, _dp_pop(), threshold=20, batch_senders=20) as s:
        s.start()
        assert s.proxy.get("/v1/round").status_code == 200  # the proxy read the protocol
    key = tmp_path / "proxy" / SUM_KEY
    assert len(key.read_bytes()) == 32
    key.write_bytes(b"\0" * 7)
    env = {**os.environ, "DPREC_SHARED_SECRET": SECRET.decode(),
           "DPREC_TOKEN_KEY": TOKEN_KEY.decode()}
    # a proxy that started anyway would serve until the timeout: the test then fails
    res = subprocess.run([sys.executable, "-m", "dprec.cli", "serve", "proxy", "--server",
                          "http://127.0.0.1:9", "--state", str(tmp_path / "proxy"),
                          "--port", "0", "--threshold", "20", "--batch-senders", "20"],
                         capture_output=True, text=True, timeout=120, env=env,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stderr[-2000:]
    text = " ".join(res.stderr.split())
    assert "cannot be used" in text and "X25519 key" in text and "backup" in text
    assert "Traceback" not in res.stderr


def test_a_client_never_reads_the_state_path(tmp_path):
    # a state from before the proxy kept the protocol (nothing to check at start), whose
    # key file is corrupt: the proxy finds it at its first sync and tells clients no path
    (tmp_path / "proxy").mkdir()
    (tmp_path / "proxy" / SUM_KEY).write_bytes(b"\0" * 7)
    with Stack(tmp_path, _dp_pop(), threshold=20, batch_senders=20) as s:
        s.start()
        replies = [s.proxy.get("/v1/round"), s.submit(0, 1, b"\0" * 64),
                   s.proxy.get("/v1/client/secret", headers=headers(1)),
                   s.proxy.post("/v1/secret", headers=OPERATOR_AUTH, json={}), s.close(0)]
        assert {r.status_code for r in replies} == {503}
        for r in replies:
            assert str(tmp_path) not in r.text and SUM_KEY not in r.text, r.text
            assert "read the proxy's log" in r.json()["error"]
