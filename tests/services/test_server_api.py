"""The server service: start, artefacts with ETags, authenticated idempotent batches, rounds,
and a clear status for every kind of bad input (nothing else lost)."""

import hashlib

import numpy as np
import pytest
from starlette.testclient import TestClient
from svc import AUTH, SECRET, dplcf_info, fmf_info

from dprec.protocol.aggregation import MeanAggregator
from dprec.protocol.deployment import generator_to_json
from dprec.protocol.messages import (
    GradientReports,
    ItemMatrix,
    ItemMatrix64,
    ShuffledReports,
    ShuffledValues,
)
from dprec.services import roles
from dprec.services.server import ServerSettings, create_server_app
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits
from dprec.systems.fmf.server import FactorServer


@pytest.fixture
def server(tmp_path):
    app = create_server_app(ServerSettings(fmf_info(), tmp_path, SECRET, max_batch_bytes=4096))
    with TestClient(app) as c:
        yield c


def _start(c, seed=0):
    return c.post("/v1/start", headers=AUTH,
                  json={"generator": generator_to_json(np.random.default_rng(seed))})


def _batch(m=40, seed=1, n_items=30, factors=3) -> bytes:
    rng = np.random.default_rng(seed)
    return ShuffledReports(rng.integers(0, n_items, m), rng.integers(0, factors, m),
                           rng.integers(0, 2, m)).to_bytes()


def _post(c, body, key="key-00000001", round=0, auth=AUTH, **h):
    return c.post(f"/v1/rounds/{round}/batches", content=body,
                  headers={**auth, "Idempotency-Key": key, **h})


def test_start_draws_what_the_role_draws_in_process_and_is_idempotent(server):
    rng = np.random.default_rng(0)
    r = _start(server)
    assert r.status_code == 200
    expected = FactorServer(30, 3, 1e-3, 1e-6, 20, 1.0, 0.1, None).start(rng)
    art = server.get("/v1/artefacts/item-matrix-f64")
    assert art.status_code == 200
    np.testing.assert_array_equal(ItemMatrix64.from_bytes(art.content).matrix, expected)
    # the generator comes back advanced exactly as the role advanced it
    assert r.json()["generator"] == generator_to_json(rng)
    assert _start(server).json() == r.json()  # same request again: same answer
    assert _start(server, seed=5).status_code == 409  # another generator: conflict


def test_start_needs_the_secret_and_a_valid_generator(server):
    assert server.post("/v1/start").status_code == 401
    assert server.post("/v1/start", headers={"Authorization": "Bearer wrong"}).status_code == 401
    bad = server.post("/v1/start", headers=AUTH, json={"generator": {"bit_generator": "MT"}})
    assert bad.status_code == 422 and "bit_generator" in bad.json()["error"]
    assert server.get("/v1/round").json()["started"] is False


def test_artefacts_are_versioned_and_fetched_conditionally(server):
    assert server.get("/v1/artefacts/item-matrix").status_code == 404  # not started
    _start(server)
    r = server.get("/v1/artefacts/item-matrix")
    assert r.status_code == 200 and r.headers["X-Dprec-Version"] == "0"
    ItemMatrix.from_bytes(r.content).check_for(30, 3)
    etag = r.headers["ETag"]
    same = server.get("/v1/artefacts/item-matrix", headers={"If-None-Match": etag})
    assert same.status_code == 304 and same.content == b""
    assert server.get("/v1/artefacts/neighbours").status_code == 404  # not this protocol
    assert _post(server, _batch()).status_code == 201
    assert server.post("/v1/rounds/0/close", headers=AUTH).json()["updated"] is True
    new = server.get("/v1/artefacts/item-matrix", headers={"If-None-Match": etag})
    assert new.status_code == 200 and new.headers["ETag"] != etag
    assert new.headers["X-Dprec-Version"] == "1"


def test_a_replayed_batch_is_counted_once(server):
    _start(server)
    body = _batch()
    assert _post(server, body).status_code == 201
    again = _post(server, body)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert _post(server, _batch(seed=2)).status_code == 409  # same key, other batch
    assert _post(server, _batch(seed=2), key="key-00000002").status_code == 201
    out = server.post("/v1/rounds/0/close", headers=AUTH).json()
    assert out["batches"] == 2 and out["reports"] == 80
    # closing again is idempotent; the late replay of an accepted batch is still a duplicate
    assert server.post("/v1/rounds/0/close", headers=AUTH).json()["round"] == 0
    assert _post(server, body).status_code == 200
    assert _post(server, _batch(seed=3), key="key-00000003").status_code == 409  # round 0 shut


@pytest.mark.parametrize("why, body, key, auth, status", [
    ("no secret", None, "key-00000001", {}, 401),
    ("wrong secret", None, "key-00000001", {"Authorization": "Bearer nope"}, 401),
    ("no idempotency key", None, None, AUTH, 400),
    ("odd idempotency key", None, "k y", AUTH, 400),
    ("garbage", b"not a message at all", "key-00000001", AUTH, 400),
    ("truncated", _batch()[:-3], "key-00000001", AUTH, 400),
    ("client message, not a batch",
     GradientReports(7, [1, 2], [0, 1], [1, 0]).to_bytes(), "key-00000001", AUTH, 422),
    ("item out of range", ShuffledReports([30], [0], [1]).to_bytes(), "key-00000001", AUTH, 422),
    ("factor out of range", ShuffledReports([0], [3], [1]).to_bytes(), "key-00000001", AUTH,
     422),
    ("real values for a one-bit protocol", ShuffledValues([0], [0], [0.5]).to_bytes(),
     "key-00000001", AUTH, 422),
    ("empty batch", ShuffledReports([], [], []).to_bytes(), "key-00000001", AUTH, 422),
    ("oversized", b"DPRC" + bytes(5000), "key-00000001", AUTH, 413),
])
def test_bad_batches_are_refused_and_nothing_else_is_lost(server, why, body, key, auth, status):
    _start(server)
    good = _batch()
    assert _post(server, good, key="key-good0001").status_code == 201
    h = {**auth, **({"Idempotency-Key": key} if key else {})}
    r = server.post("/v1/rounds/0/batches", content=good if body is None else body, headers=h)
    assert r.status_code == status, (why, r.text)
    assert set(r.json()) == {"error"} and r.json()["error"]
    out = server.post("/v1/rounds/0/close", headers=AUTH).json()
    assert out["batches"] == 1 and out["reports"] == 40


def test_oversized_bodies_are_refused_before_they_are_read(server):
    _start(server)
    r = _post(server, b"x", **{"Content-Length": str(10**9)})
    assert r.status_code == 413 and "Content-Length" in r.json()["error"]

    def chunks():  # no Content-Length: the running cap refuses it
        for _ in range(100):
            yield b"y" * 1000

    r = server.post("/v1/rounds/0/batches", content=chunks(),
                    headers={**AUTH, "Idempotency-Key": "key-00000009"})
    assert r.status_code == 413


def test_wrong_round_and_finished_protocol(server):
    assert _post(server, _batch()).status_code == 409  # not started
    _start(server)
    assert _post(server, _batch(), round=1).status_code == 409
    assert server.post("/v1/rounds/1/close", headers=AUTH).status_code == 409
    for r in range(3):
        assert server.post(f"/v1/rounds/{r}/close", headers=AUTH).status_code == 200
    state = server.get("/v1/round").json()
    assert state["finished"] and [h["updated"] for h in state["history"]] == [False] * 3
    assert _post(server, _batch(), round=3, key="key-00000004").status_code == 409
    assert server.post("/v1/rounds/3/close", headers=AUTH).status_code == 409
    assert server.get("/v1/rounds/x/close").status_code in (404, 405)
    assert server.post("/v1/rounds/-1/close", headers=AUTH).status_code == 422


def test_the_aggregate_depends_on_the_reports_not_their_order_or_batching(tmp_path):
    """Why the HTTP run equals the in-process run although the proxy shuffles on a CSPRNG."""
    info = fmf_info(n_items=50, epsilon=1.0)  # eps = 1: sums of +-C are order-sensitive
    rng = np.random.default_rng(0)
    m = 20_000
    items, factors, bits = rng.integers(0, 50, m), rng.integers(0, 3, m), rng.integers(0, 2, m)
    results = []
    for split in ([m], [5000, 15000], [1, 7000, 12999]):
        perm = rng.permutation(m)
        bounds = np.cumsum([0, *split])
        batches = [ShuffledReports(items[perm[a:b]], factors[perm[a:b]], bits[perm[a:b]])
                   for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        role = roles.server_role(info, MeanAggregator())
        role.start(np.random.default_rng(1))
        results.append(role.aggregate(batches, 0))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_dplcf_server_publishes_neighbour_lists(tmp_path):
    app = create_server_app(ServerSettings(dplcf_info(), tmp_path, SECRET))
    with TestClient(app) as c:
        assert _start(c).json()["version"] is None  # nothing published before the round
        rng = np.random.default_rng(0)
        rows = rng.integers(0, 2, (12, 20))
        for i, part in enumerate(np.split(rows, [5])):
            assert _post(c, ObfuscatedBits.pack(part).to_bytes(),
                         key=f"key-dplcf-{i}").status_code == 201
        bad = ObfuscatedBits.pack(rng.integers(0, 2, (2, 21))).to_bytes()
        assert _post(c, bad, key="key-dplcf-bad").status_code == 422  # wrong item count
        out = c.post("/v1/rounds/0/close", headers=AUTH).json()
        assert out["updated"] and out["reports"] == 12 and out["finished"] is True
        assert out["diagnostics"]["users_received"] == 12
        lists = NeighbourLists.from_bytes(c.get("/v1/artefacts/neighbours").content)
        lists.check_for(20)
        assert c.get("/v1/round").json()["finished"] is True


def test_state_survives_a_new_process_and_refuses_another_protocol(tmp_path):
    app = create_server_app(ServerSettings(fmf_info(), tmp_path, SECRET))
    with TestClient(app) as c:
        _start(c)
        assert _post(c, _batch()).status_code == 201
        digest = hashlib.sha256(c.get("/v1/artefacts/item-matrix-f64").content).hexdigest()
    again = create_server_app(ServerSettings(fmf_info(), tmp_path, SECRET))
    with TestClient(again) as c:
        assert _post(c, _batch()).json()["duplicate"] is True
        assert hashlib.sha256(c.get("/v1/artefacts/item-matrix-f64").content
                              ).hexdigest() == digest
    with pytest.raises(Exception, match="another protocol"):
        create_server_app(ServerSettings(fmf_info(k=5), tmp_path, SECRET))
