"""The services as real processes on loopback: the HTTP run gives the in-process model bit
for bit (both protocols, and through ``dprec simulate``), SIGKILL and restart lose nothing
and count nothing twice, the OpenAPI documents are the committed ones, and the proxy keeps
no client token or id in its store or logs."""

from __future__ import annotations

import functools
import json
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.client.http import ProxyAPI, keepalive_client
from dprec.data.synthetic import synthetic
from dprec.protocol.deployment import generator_to_json
from dprec.protocol.engine import ShufflingProxy
from dprec.protocol.messages import GradientReports
from dprec.random import derive_generator
from dprec.services.auth import client_token
from dprec.services.launch import Loopback, LoopbackTransport
from dprec.services.transport import HttpTransport
from dprec.systems.fmf import system as fmf_system
from dprec.systems.registry import make_system

OPENAPI = Path(__import__("dprec.services", fromlist=["x"]).__file__).parent / "openapi"


def _fit(system: str, params: dict[str, str], train, transport=None):
    model = make_system(system, params)
    model.transport = transport
    return model.fit(train, derive_generator(7, "system", system))


@pytest.mark.slow
@pytest.mark.parametrize("system, params", [
    ("fmf-ldp", {"epochs": "2", "k": "20", "shuffle_threshold": "50"}),
    ("dplcf-sp", {"neighbours": "10"}),
])
def test_http_gives_the_in_process_model_bit_for_bit(tmp_path, system, params, monkeypatch):
    train = synthetic(300, 120, 6000, rng=0).binary()
    one_batch = _fit(system, params, train)
    # the same batches in process as the services' proxy forwards: 300 senders, threshold
    # 50, batch_senders 100 -> three shuffles of 100 senders
    monkeypatch.setattr(fmf_system, "ShufflingProxy",
                        functools.partial(ShufflingProxy, batch_senders=100))
    here = _fit(system, params, train)
    with Loopback(tmp_path) as lb:
        net = LoopbackTransport(lb, system, params, batch_senders=100)
        try:
            there = _fit(system, params, train, net)
        finally:
            net.close()
        assert net.remote is not None and net.remote[1].requests == 300 * (
            2 if system == "fmf-ldp" else 1)
    if system == "fmf-ldp":
        np.testing.assert_array_equal(here.V, there.V)
        assert here._diag["epochs_without_update"] == there._diag["epochs_without_update"] == 0
    else:
        assert here.broadcast == there.broadcast
        assert here.diagnostics()["clipped_pairs"] == there.diagnostics()["clipped_pairs"]
    assert here.privacy_report().to_json() == there.privacy_report().to_json()
    if system == "fmf-ldp":  # charged a shuffle of 100, not of the round's 300 senders
        np.testing.assert_array_equal(one_batch.V, there.V)
        assert [e.n for e, _ in there.events.keys()] == [100]
        assert [e.n for e, _ in one_batch.events.keys()] == [300]
        assert there.privacy_report().true.epsilon > one_batch.privacy_report().true.epsilon


@pytest.mark.slow
def test_simulate_reports_the_enforced_threshold_and_the_servers_batches(tmp_path):
    # 300 senders, threshold 20, batches of 70: the server stores 70 x 4 and 20
    args = ["simulate", "fmf-ldp", "--transport", "http", "--dataset", "synthetic-300x200",
            "--param", "epochs=1", "--param", "k=10", "--threshold", "20",
            "--batch-senders", "70", "--seeds", "1", "--json", "--out", str(tmp_path)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output[-3000:]
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["parameters"]["shuffle_threshold"] == 20
    privacy = doc["privacy"]
    assert privacy["rounds"]["shuffle_threshold_senders"] == 20
    assert [e["event"]["n"] for e in privacy["events"]["events"]] == [20]
    assert privacy["true"]["mechanism"] == "10 x ShuffledReportDpEvent(epsilon0=2.5, n=20)"


@pytest.mark.slow  # a server and a proxy as processes
def test_a_running_proxy_states_the_threshold_the_report_uses(running, capsys):
    from dprec.cli.serve import _enforced_threshold

    _, srv, prx = running  # the protocol publishes 100 (FMFConfig's default); the proxy runs 5
    assert _enforced_threshold({"k": "5"}, 100, None, srv.url, prx.url) == {
        "k": "5", "shuffle_threshold": 5}
    warning = " ".join(capsys.readouterr().err.split())  # the console wraps lines
    assert "enforces a threshold of 5 senders, below the 100 the protocol publishes" in warning
    assert "below the 100 senders the protocol publishes" in prx.log_tail(20_000)


@pytest.mark.slow
def test_sigkill_and_restart_mid_round_lose_nothing_and_count_nothing_twice(tmp_path,
                                                                            monkeypatch):
    system, params = "fmf-ldp", {"epochs": "3", "k": "10", "shuffle_threshold": "20"}
    train = synthetic(400, 60, 8000, rng=1).binary()
    monkeypatch.setattr(fmf_system, "ShufflingProxy",  # the proxy's batches, in process
                        functools.partial(ShufflingProxy, batch_senders=50))
    expected = _fit(system, params, train)
    with Loopback(tmp_path) as lb:
        srv = lb.server(system, 60, params, wait=False)
        prx = lb.proxy(srv.url, 20, batch_senders=50, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        net = HttpTransport(srv.url, prx.url, lb.secret, lb.token_key, retry_for=240,
                            operator_secret=lb.operator_secret)
        out: dict[str, object] = {}

        def drive() -> None:
            try:
                out["model"] = _fit(system, params, train, net)
            except BaseException as e:  # noqa: BLE001 - reported below
                out["error"] = e

        th = threading.Thread(target=drive, daemon=True)
        th.start()
        # 400 clients x 3 rounds = 1200 submissions; kill at points spread over the rounds
        plan = [(150, prx), (420, srv), (700, prx), (980, srv)]
        for at, svc in plan:
            while th.is_alive() and (net.remote is None or net.remote[1].requests < at):
                th.join(0.01)
            assert th.is_alive(), f"the run ended before {at} requests: {out}"
            svc.kill()
            svc.start()
        th.join(600)
        net.close()
        assert not th.is_alive()
        assert "error" not in out, out.get("error")
        assert (srv.starts, prx.starts) == (3, 3)
    model = out["model"]
    np.testing.assert_array_equal(model.V, expected.V)
    assert model.privacy_report().to_json() == expected.privacy_report().to_json()
    assert [e.n for e, _ in model.events.keys()] == [50]  # 8 batches of 50 per round


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with Loopback(tmp_path_factory.mktemp("services")) as lb:
        srv = lb.server("fmf-ldp", 40, {"epochs": "2", "k": "5", "factors": "3"},
                        extra=["--log-level", "debug"], wait=False)
        prx = lb.proxy(srv.url, 5, 5, extra=["--log-level", "debug"], wait=False)
        srv.wait_ready()
        prx.wait_ready()
        yield lb, srv, prx


@pytest.mark.slow  # a server and a proxy as processes
@pytest.mark.parametrize("name", ["server", "proxy"])
def test_the_committed_openapi_documents_are_the_running_apps(running, name):
    _, srv, prx = running
    svc = srv if name == "server" else prx
    live = keepalive_client(svc.url).get("/openapi.json").json()
    committed = json.loads((OPENAPI / f"{name}.json").read_text())
    assert live == committed, (f"regenerate with `dprec serve openapi` "
                               f"(src/dprec/services/openapi/{name}.json is stale)")


@pytest.mark.slow  # a server and a proxy as processes
def test_the_proxy_keeps_no_token_or_client_id_in_its_store_or_logs(running):
    lb, srv, prx = running
    admin = keepalive_client(srv.url, headers={"Authorization": "Bearer " + lb.secret.decode()})
    assert admin.post("/v1/start", json={"generator": generator_to_json(
        np.random.default_rng(0))}).status_code == 200
    ids = [7_345_678_901 + 977 * u for u in range(12)]
    tokens = [client_token(lb.token_key, i) for i in ids]
    api = ProxyAPI(prx.url)
    rng = np.random.default_rng(3)
    for i, t in zip(ids, tokens, strict=True):
        body = GradientReports(i, rng.integers(0, 40, 5), rng.integers(0, 3, 5),
                               rng.integers(0, 2, 5)).to_bytes()
        api.submit(0, i, t, body)
    bad = api.client.post("/v1/rounds/0/reports", content=b"junk",
                          headers={"Authorization": f"Bearer {tokens[0]}x",
                                   "X-Dprec-Client": str(ids[0])})
    assert bad.status_code == 401

    def leaks() -> list[str]:
        found = []
        for f in sorted(prx.state_dir.rglob("*")):
            if not f.is_file():
                continue
            data = f.read_bytes()
            for i, t in zip(ids, tokens, strict=True):
                for pattern in (t.encode(), str(i).encode(), struct.pack("<q", i),
                                struct.pack(">q", i)):
                    if pattern in data:
                        found.append(f"{f.name}: {pattern!r}")
        return found

    assert (prx.state_dir / "proxy.log").exists()
    assert not leaks(), "mid-round"  # held in the open round
    closed = keepalive_client(prx.url, headers={"Authorization": "Bearer "
                                                + lb.operator_secret.decode()}
                              ).post("/v1/rounds/0/close")
    assert closed.status_code == 200 and closed.json()["senders"] == 12
    assert not leaks(), "after forwarding"
