"""An acknowledged submission is never lost silently (issue 21 §2): a batch the server
refuses is kept and sent again, a round the server closed is refused, and the round's
outcome and the proxy's status say what was forwarded and what was lost."""

import time

import numpy as np
import pytest
from svc import AUTH, OPERATOR_AUTH, TOKEN_KEY, Stack, fmf_info

from dprec.client.http import ProxyAPI
from dprec.errors import DprecError
from dprec.protocol.engine import ShufflingProxy
from dprec.protocol.messages import GradientReports
from dprec.services.limits import batch_bytes
from dprec.services.transport import RemoteProxy


def _report(client_id: int, k: int = 4) -> bytes:
    rng = np.random.default_rng(client_id)
    return GradientReports(client_id, rng.integers(0, 30, k), rng.integers(0, 3, k),
                           rng.integers(0, 2, k)).to_bytes()


def _wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _server_senders(s: Stack, round: int = 0) -> int:
    return s.server_app.state.service.store.batch_count(round)[1] // s.info.k


def test_a_batch_the_server_refuses_is_kept_and_never_counted_as_forwarded(tmp_path):
    # a server whose limit takes one submission, not a batch, and does not publish it
    # (an older or lying server): the proxy learns it from the 413
    s = Stack(tmp_path, fmf_info(), server={"max_batch_bytes": batch_bytes(fmf_info(), 1)},
              threshold=3, batch_senders=3)
    s.server_app.state.service.description.pop("limits", None)  # (absent before)
    with s:
        s.start()
        for u in range(6):  # the 6th forms a batch of 3, which the server refuses (413)
            assert s.submit(0, u, _report(u)).status_code == 202
        _wait_for(lambda: not s.proxy.get("/v1/round").json()["accepting"])
        for u in range(6, 10):  # once the server refused a batch, the proxy takes no more
            r = s.submit(0, u, _report(u))
            assert r.status_code == 503 and "the server refused" in r.json()["error"]
        acknowledged = range(6)
        status = s.proxy.get("/v1/round").json()
        assert status["accepting"] is False and "413" in status["problem"]
        # before: "forwarded": true, "forwarded_senders": 10 with the server holding 0
        refused = s.close(0)
        assert refused.status_code == 409, refused.text
        assert "is not closed" in refused.json()["error"]
        assert _server_senders(s) == 0
        assert s.server.get("/v1/round").json()["round"] == 0  # the round is still open
        # the operator fixes the server; the kept batches go through on the next close
        s.server_app.state.service.settings.max_batch_bytes = 1 << 20
        out = s.close(0).json()
        assert out["senders"] == len(acknowledged) == out["forwarded_senders"]
        assert out["forwarded"] is True and out["lost_senders"] == 0
        assert _server_senders(s) == len(acknowledged) == sum(out["server"]["batch_senders"])
        assert out["batch_senders"] == out["server"]["batch_senders"]


def test_a_proxy_whose_batches_cannot_fit_the_servers_limit_takes_no_submission(tmp_path):
    limit = batch_bytes(fmf_info(), 4)  # the proxy's largest batch: 3 + 3 - 1 = 5 senders
    with Stack(tmp_path, fmf_info(), server={"max_batch_bytes": limit}, threshold=3,
               batch_senders=3) as s:
        s.start()
        r = s.submit(0, 1, _report(1))
        assert r.status_code == 503
        assert f"at most {limit} bytes" in r.json()["error"]
        assert "lower --batch-senders" in r.json()["error"]
        assert s.proxy.get("/v1/round").json()["accepting"] is False


def test_a_round_closed_on_the_server_is_refused_and_its_held_submissions_counted_lost(
        tmp_path):
    with Stack(tmp_path, fmf_info(), threshold=3, batch_senders=3, watch_seconds=0) as s:
        s.start()
        for u in range(3):
            assert s.submit(0, u, _report(u)).status_code == 202
        # the operator closes round 0 on the server while the proxy holds 3
        assert s.server.post("/v1/rounds/0/close", headers=AUTH).status_code == 200
        r = s.submit(0, 10, _report(10))  # before: 202, then dropped
        assert r.status_code == 409 and "round 0 is closed" in r.json()["error"]
        status = s.proxy.get("/v1/round").json()
        assert status["round"] == 1 and status["accepting"] is True
        out = s.close(0).json()
        assert out["senders"] == 3 and out["forwarded_senders"] == 0
        assert out["lost_senders"] == 3 and out["forwarded"] is False
        assert "closed round 0" in out["lost_reason"]
        assert s.submit(1, 10, _report(10)).status_code == 202


def test_submissions_acknowledged_before_the_proxy_learns_of_the_close_are_counted_lost(
        tmp_path):
    # the proxy asks the server only when a batch goes out (watch_seconds: an hour)
    with Stack(tmp_path, fmf_info(), threshold=3, batch_senders=3, watch_seconds=3600) as s:
        s.start()
        for u in range(3):
            assert s.submit(0, u, _report(u)).status_code == 202
        assert s.server.post("/v1/rounds/0/close", headers=AUTH).status_code == 200
        for u in range(3, 6):  # the 6th forms a batch, which the server refuses (409)
            assert s.submit(0, u, _report(u)).status_code == 202
        _wait_for(lambda: s.proxy.get("/v1/round").json()["round"] == 1)
        r = s.submit(0, 100, _report(100))
        assert r.status_code == 409 and "round 0 is closed" in r.json()["error"]
        out = s.close(0).json()
        # before: "forwarded": true with the server holding none of the 6
        assert out["forwarded"] is False and out["forwarded_senders"] == 0
        assert out["lost_senders"] == out["senders"] == 6
        assert _server_senders(s) == 0



def test_a_simulation_whose_round_lost_submissions_fails_with_the_reason(tmp_path):
    with Stack(tmp_path, fmf_info(), threshold=3, batch_senders=3) as s:
        s.start()
        for u in range(3):
            assert s.submit(0, u, _report(u)).status_code == 202
        assert s.server.post("/v1/rounds/0/close", headers=AUTH).status_code == 200
        s.proxy.headers.update(OPERATOR_AUTH)  # the operator's client
        remote = RemoteProxy(ShufflingProxy(3), ProxyAPI("http://proxy"), s.proxy, TOKEN_KEY,
                             retry_for=5)
        with pytest.raises(DprecError, match="round 0: 3 of the 3 submissions the proxy "
                                             "acknowledged never reached the server"):
            list(remote.forward([]))
