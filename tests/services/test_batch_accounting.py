"""What the services' accounting reads (issue 20 section 1): the proxy states the threshold
it enforced and the batches it formed, the server records the senders of every batch it
accepted, and the simulation's remote proxy charges the round's smallest batch, as the
in-process proxy does with the same batches."""

import logging

import numpy as np
from svc import AUTH, OPERATOR_AUTH, Stack, fmf_info

from dprec.client.http import ProxyAPI
from dprec.privacy.events import LocalReportDpEvent, ShuffledReportDpEvent
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import ShufflingProxy, forwarded_batch_sizes
from dprec.protocol.messages import ShuffledReports
from dprec.services.transport import RemoteProxy

K = 4  # fmf_info's reports per client


def _reports(n: int, seed: int = 0) -> ReportBatch:
    rng = np.random.default_rng(seed)
    items = rng.integers(0, 30, (n, K))
    return ReportBatch(np.arange(n), items, rng.integers(0, 3, (n, K)).astype(np.uint8),
                       bits=rng.integers(0, 2, (n, K)).astype(np.uint8))


def _remote(stack: Stack, local: ShufflingProxy) -> RemoteProxy:
    """The simulation's stub of the proxy, reaching the in-process apps (no submissions go
    through it: the test submits through the stack)."""
    stack.proxy.headers.update(OPERATOR_AUTH)  # the operator's (submissions send their own)
    return RemoteProxy(local, ProxyAPI("http://proxy", client=stack.proxy), stack.proxy,
                       b"t" * 32, retry_for=5.0)


def test_http_batches_are_accounted_as_the_in_process_proxy_with_the_same_batches(tmp_path):
    n, t, b = 13, 3, 4  # 13 = 2 x 4 + 5: batches of 4, 4 and 5 senders
    batch = _reports(n)
    with Stack(tmp_path, fmf_info(shuffle_threshold=t), threshold=t, batch_senders=b) as s:
        s.start()
        remote = _remote(s, ShufflingProxy(t))
        remote.start(np.random.default_rng(0))
        for m in batch.to_messages():
            assert s.submit(0, m.client_id, m.to_bytes()).status_code == 202
        assert list(remote.forward([])) == []  # closes the round at the proxy
        out = s.proxy.get("/v1/round").json()
        assert out["threshold"] == t and out["batch_senders"] == b
        outcome = s.server.get("/v1/round").json()["history"][0]
    assert sorted(forwarded_batch_sizes(n, t, b), reverse=True) == [5, 4, 4]
    assert outcome["batch_senders"] == [5, 4, 4]  # the server's own record
    assert remote.batches == [5, 4, 4] and remote.threshold == t and remote.forwarded
    http = remote.account(LocalReportDpEvent(2.5))

    inproc = ShufflingProxy(t, batch_senders=b)
    inproc.start(np.random.default_rng(0))
    assert len(list(inproc.forward([batch]))) == 3
    assert http == inproc.account(LocalReportDpEvent(2.5)) == ShuffledReportDpEvent(2.5, 4)


def test_the_proxy_states_its_batches_and_threshold_with_the_round(fmf_stack):
    s = fmf_stack  # threshold 3, batch_senders 3
    s.start()
    for m in _reports(10).to_messages():
        assert s.submit(0, m.client_id, m.to_bytes()).status_code == 202
    out = s.close(0).json()
    assert out["threshold"] == 3 and out["batch_senders"] == [4, 3, 3]
    assert out["server"]["batch_senders"] == [4, 3, 3]
    # stored with the round: the same when read back (and after the proxy closed it)
    assert s.server.get("/v1/round").json()["history"][0]["batch_senders"] == [4, 3, 3]
    assert s.close(0).json()["batch_senders"] == [4, 3, 3]


def test_the_server_refuses_a_batch_that_is_not_whole_submissions(fmf_stack):
    s = fmf_stack
    s.start()
    rng = np.random.default_rng(0)
    for m, status in ((4 * K + 1, 422), (4 * K, 201)):
        body = ShuffledReports(rng.integers(0, 30, m), rng.integers(0, 3, m),
                               rng.integers(0, 2, m)).to_bytes()
        r = s.server.post("/v1/rounds/0/batches", content=body,
                          headers={**AUTH, "Idempotency-Key": f"key-{m:08d}"})
        assert r.status_code == status, r.text
    assert r.json()["senders"] == 4


def test_a_proxy_below_the_published_threshold_is_reported(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    # the protocol publishes shuffle_threshold 100 (FMFConfig's default); the proxy runs 3
    with Stack(tmp_path, fmf_info(), threshold=3, batch_senders=3) as s:
        s.start()
        assert s.proxy.get("/v1/round").json()["published_threshold"] == 100
        remote = _remote(s, ShufflingProxy(100))
        remote.start(np.random.default_rng(0))
    assert remote.threshold == 3
    text = caplog.text
    assert "enforces --threshold 3, below the 100 senders the protocol publishes" in text
    assert "enforces a threshold of 3 senders, below the protocol's 100" in text
