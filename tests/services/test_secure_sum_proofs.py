"""dp-pop with ``validity=prio3`` over the real server and proxy apps (issue 31 §1): every
upload carries a Prio3 proof, verified jointly by the proxy (Helper) and the server
(Leader) at the close; an invalid upload is refused with its reason and the round releases
the honest sum exactly (the honest y's replayed from their seeded generators: a test hook).
Before, one client uploading q/2 - 1 on every coordinate shifted every published count."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from proofs import forge, half_field
from randomgen import ChaCha
from svc import Stack
from svc import headers as device_headers

from dprec.protocol.secure_sum.checks import check_terms
from dprec.protocol.secure_sum.deploy import proved_row, sealed_uploads
from dprec.protocol.secure_sum.messages import run_id
from dprec.protocol.secure_sum.proved import ProvedBatch, ProvedUpload, server_verify
from dprec.protocol.secure_sum.proved_relay import ProvedRelay
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.wire import ClientBlock, SumUpload
from dprec.services import roles
from dprec.services.auth import client_token
from dprec.services.launch import Loopback
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.deploy import check_of, round_of
from dprec.systems.dp_pop.draws import device_vector
from dprec.systems.dp_pop.messages import PopularityModel
from dprec.systems.dp_pop.system import DpPopConfig

N_ITEMS, K, N_HONEST = 16, 3, 11
DEVICE = Path(__file__).with_name("device_proc.py")


def proved_info(n_clients: int = 20, min_honest: int = 10) -> ProtocolInfo:
    return ProtocolInfo("dp-pop", N_ITEMS, DpPopConfig(
        epsilon=2.0, k=K, n_clients=n_clients, min_honest=min_honest, validity="prio3"))


class ProvedRound:
    def __init__(self, stack: Stack) -> None:
        stack.start()
        self.stack = stack
        self.check = check_of(stack.info)
        self.server_key = PopularityModel.from_bytes(
            stack.server.get("/v1/artefacts/model").content).server_key
        published = stack.proxy.get("/v1/round").json()["published"]
        self.published = published
        self.proxy_key = bytes.fromhex(published["secure_sum_proxy_key"])
        self.run = run_id(self.proxy_key, self.server_key)

    def honest(self, n: int) -> tuple[list[bytes], np.ndarray]:
        """``n`` honest devices' uploads and the plain sum of their ``y = v + z``, each
        drawn as a device draws it (:func:`device_vector`, from a seeded generator here)."""
        rng = np.random.default_rng(7)
        share = round_of(self.stack.info).share
        bodies, total = [], np.zeros(N_ITEMS, np.int64)
        for i in range(n):
            items = rng.choice(N_ITEMS, K, replace=False)
            y = device_vector(items, N_ITEMS, K, "uniform", share,
                              np.random.default_rng([i, 1]), self.check)
            bodies.append(proved_row(self.check, self.proxy_key, self.server_key, y, 0))
            total += y
        return bodies, total

    def forged(self, meas: np.ndarray | None = None, tamper_proof: bool = False) -> bytes:
        return forge(self.check, self.proxy_key, self.server_key, meas, tamper_proof)

    def counts(self) -> np.ndarray:
        return PopularityModel.from_bytes(
            self.stack.server.get("/v1/artefacts/model").content).counts


def test_a_client_at_half_the_field_is_refused_and_the_honest_sum_is_released(tmp_path):
    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        assert r.published["validity"] == {"kind": "prio3", **check_terms(r.check)}
        bodies, total = r.honest(N_HONEST)
        attack = r.forged(half_field(r.check))
        codes = [s.submit(0, i, b).status_code for i, b in enumerate([*bodies, attack])]
        assert codes == [202] * (N_HONEST + 1)
        out = s.close(0).json()
        assert out["outcomes"] == {"summed": N_HONEST, "refused": 1, "below_threshold": 0,
                                   "lost": 0}, out
        mid = SumUpload.from_bytes(attack).message_id.hex()
        assert out["uploads"][mid]["outcome"] == "refused"
        assert "invalid proof" in out["uploads"][mid]["reason"]
        counts = r.counts()
        np.testing.assert_array_equal(counts, total)  # exactly the honest y's
        assert np.abs(counts).max() < 1000


def test_a_tampered_proof_is_refused_with_its_reason(tmp_path):
    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        bodies, total = r.honest(10)
        bad = r.forged(tamper_proof=True)
        assert [s.submit(0, i, b).status_code for i, b in enumerate([*bodies, bad])] == \
            [202] * 11
        out = s.close(0).json()
        assert out["outcomes"]["summed"] == 10 and out["outcomes"]["refused"] == 1
        (reason,) = [o["reason"] for o in out["uploads"].values() if o["outcome"] == "refused"]
        assert "invalid proof" in reason or "InvalidProofError" in reason
        np.testing.assert_array_equal(r.counts(), total)


def test_a_ring_upload_is_refused_by_a_proved_round_at_the_proxy(tmp_path):
    """An upload without a proof (today's ring shares) does not parse as a proved one."""
    from dprec.systems.dp_pop.deploy import round_of

    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        rows = np.zeros((1, N_ITEMS), np.int64)
        block = ClientBlock(np.array([1]), rows[0], lambda: rows, 0, r.server_key,
                            r.proxy_key, round_of(s.info).params)
        (_, body), = sealed_uploads(block)
        assert s.submit(0, 1, body).status_code in (400, 413, 422)


@pytest.mark.slow  # a server, a proxy and 11 device processes
def test_device_processes_prove_and_a_malicious_upload_changes_no_count(tmp_path):
    """Real devices (the SDK, each its own process, its noise from its own CSPRNG) prove
    their uploads; one malicious client uploads half the field on every coordinate. It is
    refused with its reason; the counts are the devices' y's exactly (replayed from the
    planted keys: a test hook)."""
    n_items, n_devices = 20, 11
    params = {"k": "3", "epsilon": "1", "n_clients": "12", "min_honest": "10",
              "validity": "prio3"}
    rng = np.random.default_rng(3)
    histories = [np.sort(rng.choice(n_items, 3, replace=False)) for _ in range(n_devices)]
    planted = [secrets.token_bytes(32) for _ in range(n_devices)]
    with Loopback(tmp_path / "services") as lb:
        srv = lb.server("dp-pop", n_items, params)
        prx = lb.proxy(srv.url, 10, batch_senders=12)
        auth = {"Authorization": "Bearer " + lb.secret.decode()}
        operator = {"Authorization": "Bearer " + lb.operator_secret.decode()}
        assert httpx.post(srv.url + "/v1/start", json={}, headers=auth).status_code == 200
        procs = []
        for cid in range(n_devices):
            spec = {"server": srv.url, "proxy": prx.url, "client_id": cid,
                    "token": client_token(lb.token_key, cid),
                    "state_dir": str(tmp_path / "devices" / str(cid)), "budget": 1.5,
                    "items": histories[cid].tolist(), "n_items": n_items,
                    "planted": planted[cid].hex()}
            path = tmp_path / f"spec-{cid}.json"
            path.write_text(json.dumps(spec))
            procs.append(subprocess.Popen([sys.executable, str(DEVICE), str(path)],
                                          stdout=subprocess.PIPE, text=True))
        outs = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1])
                for p in procs]
        assert all(o.get("reported") is True for o in outs), outs
        info = ProtocolInfo.from_json(httpx.get(srv.url + "/v1/protocol").json())
        check = check_of(info)
        model = PopularityModel.from_bytes(httpx.get(srv.url + "/v1/artefacts/model").content)
        proxy_key = bytes.fromhex(httpx.get(prx.url + "/v1/round").json()["published"][
            "secure_sum_proxy_key"])
        attack = forge(check, proxy_key, model.server_key, half_field(check))
        r = httpx.post(prx.url + "/v1/rounds/0/reports", content=attack,
                       headers=device_headers(11, lb.token_key))
        assert r.status_code == 202, r.text
        closed = httpx.post(prx.url + "/v1/rounds/0/close", headers=operator).json()
        model = PopularityModel.from_bytes(httpx.get(srv.url + "/v1/artefacts/model").content)
    assert closed["outcomes"] == {"summed": n_devices, "refused": 1, "below_threshold": 0,
                                  "lost": 0}, closed
    assert "invalid proof" in closed["uploads"][SumUpload.from_bytes(attack).message_id.hex()][
        "reason"]
    total = np.zeros(n_items, np.int64)
    share = round_of(info).share
    for cid in range(n_devices):
        gen = np.random.Generator(ChaCha(key=np.frombuffer(planted[cid], np.uint64).copy(),
                                         counter=0, rounds=20))
        total += device_vector(histories[cid], n_items, 3, "uniform", share, gen, check)
    assert model.contributors == n_devices
    np.testing.assert_array_equal(model.counts, total)


def test_the_proxy_refutes_a_server_that_calls_an_invalid_upload_valid(tmp_path):
    """The proxy decides each report the server accepts from the server's verifier share:
    a forged "valid" with the true shares, or with none, is refused at the proxy."""

    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        bodies, _ = r.honest(3)
        rows = [*bodies, r.forged(half_field(r.check))]
        service = s.server_app.state.service  # the server's own key (a test hook)
        role = service._started_role()
        roles.restore(service.info, role, service.store.broadcast()[0])
        server = role.keys
    cal = round_of(s.info)
    relay = ProvedRelay(r.check, cal.params, tmp_path / "relay", 10, 20, lambda b: b)
    relay.keys = KeyPair.from_raw((tmp_path / "proxy" / "secure_sum_proxy.key").read_bytes())
    relay.server_key = r.server_key
    assert set(relay.verdicts(rows, 0).values()) == {None}  # the proxy alone cannot tell
    batch = ProvedBatch.from_bytes(relay.share_batch(rows, 0), r.check)
    verdicts, shares = server_verify(r.check, server, r.run, batch, 0)
    ids = [relay.message_id(b) for b in rows]
    assert [verdicts[m] is None for m in ids] == [True, True, True, False]  # the honest word
    lying = {mid: None for mid in ids}
    answer = {"verifier_shares": {m.hex(): v.hex() for m, v in shares.items()}}
    out = relay.confirm(lying, answer, 0)
    assert [out[m] is None for m in ids] == [True, True, True, False]
    assert "refutes" in out[ids[-1]]
    out = relay.confirm(lying, {}, 0)  # no verifier shares at all: nothing is accepted
    assert all("no verifier share" in out[m] for m in ids)


@pytest.mark.slow  # two simulate runs, one through started services
def test_simulate_over_http_proves_every_upload_and_reports_the_truncation(tmp_path,
                                                                           monkeypatch):
    from typer.testing import CliRunner

    from dprec.cli import app

    args = ["simulate", "dp-pop", "--dataset", "synthetic-300x200", "--param", "k=10",
            "--param", "validity=prio3", "--epsilon", "1", "--seeds", "1", "--json",
            "--out", str(tmp_path)]
    monkeypatch.setenv("DPREC_SERVICES_DIR", str(tmp_path / "services"))
    docs = {}
    for transport in ("inproc", "http"):
        res = CliRunner().invoke(app, [*args, "--transport", transport])
        assert res.exit_code == 0, res.output[-3000:]
        docs[transport] = json.loads(res.stdout.strip().splitlines()[-1])
    assert docs["inproc"]["privacy"] == docs["http"]["privacy"]
    validity = docs["http"]["privacy"]["validity"]
    assert validity["kind"] == "prio3" and validity["k"] == 10 and validity["proofs"] >= 3
    assert 0 < validity["truncation_delta"] < 1e-9
    assert validity["delta_total"] == 1e-6 + validity["truncation_delta"]
    (run,) = docs["http"]["diagnostics"]
    assert run["upload_outcomes"] == {"summed": 300, "refused": 0, "below_threshold": 0,
                                      "lost": 0}


def test_the_close_checks_in_chunks_and_releases_only_the_aggregate_and_the_ids(tmp_path,
                                                                                monkeypatch):
    """Bounded memory (issue 31 §4): the proxy checks the held uploads a chunk at a time
    (here 3 uploads) and keeps no chunk's verify states after it; the server keeps its
    output shares by id; the release is the proxy's aggregate share and the 11 ids (8 d +
    16 bytes each), not the reports; the counts are still exactly the honest sum."""
    from dprec.protocol.messages import HEADER
    from dprec.protocol.secure_sum.proved import ProvedRelease

    held_states: list[int] = []
    fold = ProvedRelay.fold

    def counting_fold(self, ids, round):
        held_states.append(len(self._prepared.get(round, {})))
        fold(self, ids, round)
        assert round not in self._prepared

    monkeypatch.setattr(ProvedRelay, "fold", counting_fold)
    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        bodies, total = r.honest(N_HONEST)
        attack = r.forged(half_field(r.check))
        for i, b in enumerate([*bodies, attack]):
            assert s.submit(0, i, b).status_code == 202
        s.proxy_app.state.service._check_chunk = 3 * ProvedUpload.size(r.check) - 1
        seen = []
        server = s.server_app.state.service
        check_shares = server.check_shares
        monkeypatch.setattr(server, "check_shares",
                            lambda rnd, body: seen.append(len(body)) or check_shares(rnd, body))
        out = s.close(0).json()
        assert out["outcomes"] == {"summed": N_HONEST, "refused": 1, "below_threshold": 0,
                                   "lost": 0}, out
        np.testing.assert_array_equal(r.counts(), total)
        (release,) = [bytes(b) for (b,) in server.store.db.execute("SELECT body FROM batches")]
        kept = server.store.db.execute("SELECT COUNT(*) FROM kept").fetchone()[0]
    assert held_states == [3, 3, 3, 3] and len(seen) == 4
    assert len(release) == HEADER.size + ProvedRelease.size(r.check, N_HONEST)
    assert kept == 0  # forgotten when the round closed
