"""dp-pop over the services on the cryptographic secure sum (issue 23 §1): ``dprec simulate
--transport http`` runs the clients as devices (their shares and samples from their own
CSPRNGs, the server from its own: the services never hold the simulation's generator) and
gives the in-process privacy JSON; the proxy refuses what it must; SIGKILL of the proxy or
the server mid-round loses no acknowledged upload and counts none twice."""

from __future__ import annotations

import json
import threading

import httpx
import numpy as np
import pytest
from device_runs import same_structure
from typer.testing import CliRunner

from dprec.cli import app
from dprec.client.http import ProxyAPI, ServerAPI, ServiceError
from dprec.data.synthetic import synthetic
from dprec.protocol.secure_sum.deploy import sealed_uploads
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.protocol.secure_sum.wire import ClientBlock, SumRelease, SumUpload
from dprec.services.auth import client_token
from dprec.services.launch import Loopback
from dprec.services.transport import HttpTransport
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.client import noisy_vectors
from dprec.systems.dp_pop.deploy import round_of
from dprec.systems.dp_pop.messages import PopularityModel
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.registry import make_system


@pytest.mark.slow
def test_simulate_gives_the_same_ranking_and_privacy_over_both_transports(tmp_path,
                                                                          monkeypatch):
    args = ["simulate", "dp-pop", "--dataset", "synthetic-300x200", "--param", "k=10",
            "--epsilon", "1", "--seeds", "1", "--json", "--out", str(tmp_path)]
    services = tmp_path / "services"
    monkeypatch.setenv("DPREC_SERVICES_DIR", str(services))
    docs = {}
    for transport in ("inproc", "http"):
        res = CliRunner().invoke(app, [*args, "--transport", transport])
        assert res.exit_code == 0, res.output[-3000:]
        docs[transport] = json.loads(res.stdout.strip().splitlines()[-1])
    a, b = docs["inproc"], docs["http"]
    for key in ("privacy", "parameters", "dataset", "protocol"):
        assert a[key] == b[key], key
    same_structure(a, b)
    privacy = b["privacy"]
    assert privacy["model"] == "secure-sum" and privacy["levels"]["user"]["epsilon"] <= 1.0
    assert privacy["adjacency"] == "zero_out"  # each device's noise share stays in the sum
    assert privacy["threat_model_assumptions"]["server_proxy_collusion"] is False
    ss = privacy["secure_sum"]
    assert (ss["m"], ss["gamma"], ss["batches"]) == (2, 1.0, 1)
    # issue 31: the server was handed the simulation's generator (PCG64), from which every
    # client's share was drawn; now it starts from its own CSPRNG and holds no PCG64 state
    held = [p for p in services.rglob("*") if p.is_file()]
    assert any(p.name == "server.log" for p in held)
    for p in held:
        assert b"PCG64" not in p.read_bytes() and b"bit_generator" not in p.read_bytes(), p
    assert ss["contributors"] == privacy["threat_model_assumptions"]["min_honest"]
    assert ss["contributors"] == privacy["threat_model_assumptions"]["contributors"]
    assert ss["q"] == 2 ** ss["q_bits"]


def _fit(train, params, transport=None):
    model = make_system("dp-pop", params)
    model.transport = transport
    return model.fit(train, np.random.default_rng(5))


@pytest.mark.slow
def test_sigkill_of_the_proxy_and_the_server_mid_round_changes_nothing(tmp_path):
    """Kill the proxy twice while clients upload, and the server once every upload is
    acknowledged (the proxy then releases to a restarted server): the same counts."""
    params = {"k": "5", "epsilon": "2", "min_honest": "200"}
    train = synthetic(240, 50, 4800, rng=2).binary()
    expected = _fit(train, params)
    with Loopback(tmp_path) as lb:
        srv = lb.server("dp-pop", 50, {**params, "n_clients": "240"}, wait=False)
        prx = lb.proxy(srv.url, 200, batch_senders=200, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        net = HttpTransport(srv.url, prx.url, lb.secret, lb.token_key, retry_for=240,
                            operator_secret=lb.operator_secret)
        # the simulation's seeded clients (kept in this process; the server gets no
        # generator either way), so that a restart's effect shows against in-process counts
        net.device_clients = False
        out: dict[str, object] = {}

        def drive() -> None:
            try:
                out["model"] = _fit(train, params, net)
            except BaseException as e:  # noqa: BLE001 - reported below
                out["error"] = e

        th = threading.Thread(target=drive, daemon=True)
        th.start()
        for at, svc in [(60, prx), (150, prx), (240, srv)]:
            while th.is_alive() and (net.remote is None or net.remote[1].requests < at):
                th.join(0.005)
            assert th.is_alive(), f"the run ended before {at} requests: {out}"
            svc.kill()
            svc.start()
        th.join(600)
        net.close()
        assert not th.is_alive()
        assert "error" not in out, out.get("error")
        assert (srv.starts, prx.starts) == (2, 3)
        history = ServerAPI(srv.url).round()["history"]
    model = out["model"]
    np.testing.assert_array_equal(model.noisy_counts, expected.noisy_counts)
    assert model.privacy_report().to_json() == expected.privacy_report().to_json()
    assert history[0]["batch_senders"] == [240] and history[0]["batches"] == 1


def _release(info, server_key, relay, admin, round=0, n=None):
    """A proxy's release of ``n`` clients' uploads sealed to ``server_key`` (and the exact
    sum it must give), after the server (``admin``) checked and kept their shares."""
    cal = round_of(info)
    n = cal.n_clients if n is None else n
    rows = synthetic(n, info.n_items, 20 * n, rng=4).binary()
    vectors = noisy_vectors(rows, np.arange(n), 3, "uniform", cal.share, 77)
    block = ClientBlock(np.arange(n), vectors.sum(axis=0), lambda: vectors, round, server_key,
                        relay.keys.public, cal.params)
    uploads = [body for _, body in sealed_uploads(block)]
    checked = admin.post(f"/v1/rounds/{round}/shares", content=relay.share_batch(uploads, round),
                         headers={"Content-Type": "application/octet-stream"})
    assert checked.status_code == 200 and not any(checked.json()["verdicts"].values())
    return relay.release(uploads, round, 2), vectors.sum(axis=0)


@pytest.mark.slow
def test_a_killed_server_applies_its_acknowledged_release_once(tmp_path):
    config = {"k": "3", "epsilon": "2", "n_clients": "30", "min_honest": "20",
              "validity": "none"}  # a ring release, made by hand below
    info = ProtocolInfo("dp-pop", 20, DpPopConfig(epsilon=2.0, k=3, n_clients=30,
                                                  min_honest=20, validity="none"))
    with Loopback(tmp_path) as lb:
        srv = lb.server("dp-pop", 20, config)
        admin = httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer "
                                                        + lb.secret.decode()})
        assert admin.post("/v1/start", json={}).status_code == 200
        key = PopularityModel.from_bytes(ServerAPI(srv.url).artefact("model").data).server_key
        relay = SecureSumRelay(round_of(info).params, tmp_path / "p")
        relay.see_broadcast(0, ServerAPI(srv.url).artefact("model").data)
        release, want = _release(info, key, relay, admin)
        body = SumRelease.from_bytes(release).to_bytes()

        def post(k: str) -> httpx.Response:
            return admin.post("/v1/rounds/0/batches", content=body,
                              headers={"Idempotency-Key": k,
                                       "Content-Type": "application/octet-stream"})

        assert post("release-key-1").status_code == 201
        srv.kill()  # after the acknowledgement, before the round is closed
        srv.start()
        assert post("release-key-1").status_code == 200  # the proxy's retry: a duplicate
        again = post("release-key-2")  # a second release of the round: refused
        assert again.status_code == 409 and "one batch" in again.json()["error"]
        closed = admin.post("/v1/rounds/0/close")
        assert closed.status_code == 200, closed.text
        assert closed.json()["batch_senders"] == [30]
        model = PopularityModel.from_bytes(ServerAPI(srv.url).artefact("model").data)
        admin.close()
    np.testing.assert_array_equal(model.counts, want)
    assert model.contributors == 30 and model.server_key == key


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with Loopback(tmp_path_factory.mktemp("dp-pop")) as lb:
        srv = lb.server("dp-pop", 16, {"k": "3", "n_clients": "6", "min_honest": "3",
                                       "validity": "none"}, wait=False)  # ring uploads
        prx = lb.proxy(srv.url, 3, 3, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        with httpx.Client(base_url=srv.url,
                          headers={"Authorization": "Bearer " + lb.secret.decode()}) as a:
            assert a.post("/v1/start", json={}).status_code == 200
        yield lb, srv, prx


@pytest.mark.slow
def test_the_proxy_publishes_its_key_and_refuses_bad_uploads(running):
    lb, srv, prx = running
    api, server = ProxyAPI(prx.url), ServerAPI(srv.url)
    state = api.round()
    assert state["one_batch"] is True
    proxy_key = bytes.fromhex(state["published"]["secure_sum_proxy_key"])
    info = ProtocolInfo.from_json(server.protocol_doc())
    model = PopularityModel.from_bytes(server.artefact("model").data)
    cal = round_of(info)

    def upload(round: int = 0) -> bytes:
        rows = np.zeros((1, 16), np.int64)
        block = ClientBlock(np.array([0]), rows[0], lambda: rows, round, model.server_key,
                            proxy_key, cal.params)
        return next(sealed_uploads(block))[1]

    def submit(client: int, body: bytes) -> int:
        try:
            api.submit(0, client, client_token(lb.token_key, client), body)
        except ServiceError as e:
            return e.status
        return 202

    good = upload()
    assert submit(1, good) == 202
    assert submit(1, upload()) == 409  # a second upload of the sender
    assert submit(2, good) == 409  # another client replaying the first one's upload
    assert submit(3, upload(round=1)) == 422  # sealed for another round
    data = bytearray(SumUpload.from_bytes(good).data)
    data[40] ^= 1  # the seed box: refused at the proxy
    assert submit(4, SumUpload(bytes(data)).to_bytes()) == 422
    assert submit(5, good + b"\0") == 413  # oversized
    assert submit(5, good[:-1]) == 422  # truncated
    assert api.round()["accepting"] is True
    closed = httpx.post(prx.url + "/v1/rounds/0/close",
                        headers={"Authorization": "Bearer " + lb.operator_secret.decode()}
                        ).json()
    assert closed["senders"] == 1 and closed["below_threshold"] == 1
    assert closed["forwarded"] is False and closed["batch_senders"] == []
    api.close()
    server.close()


def test_the_stores_refuse_a_replay_and_a_second_batch_across_a_restart(tmp_path):
    from dprec.services.store import Duplicate, ProxyStore, Replayed, ServerStore, StoreConflict

    store = ProxyStore(tmp_path / "p.sqlite3")
    store.hold(0, b"tag-a", b"upload-a", b"id-1")
    store.close_db()
    store = ProxyStore(tmp_path / "p.sqlite3")  # a restarted proxy
    with pytest.raises(Replayed):
        store.hold(0, b"tag-b", b"upload-b", b"id-1")
    with pytest.raises(Duplicate):
        store.hold(0, b"tag-a", b"upload-c", b"id-2")
    # the same sender resending its acknowledged upload after a lost answer (a proxy killed
    # between its commit and its 202) is a duplicate, which the client reads as accepted,
    # not a replay, which ends its run
    with pytest.raises(Duplicate) as resend:
        store.hold(0, b"tag-a", b"upload-a", b"id-1")
    assert not isinstance(resend.value, Replayed)
    store.hold(0, b"tag-b", b"upload-b", b"id-2")
    assert store.held(0) == 2 and store.senders(0) == 2
    server = ServerStore(tmp_path / "s.sqlite3", "fp")
    server.start({"input": "secure"}, None, None)
    assert server.accept("key-1", 0, "d1", 5, b"batch", 1, one_batch=True)
    assert not server.accept("key-1", 0, "d1", 5, b"batch", 1, one_batch=True)
    with pytest.raises(StoreConflict, match="one batch"):
        server.accept("key-2", 0, "d2", 5, b"other", 1, one_batch=True)
    assert server.accept("key-3", 0, "d3", 5, b"other", 1)  # other protocols: many batches
