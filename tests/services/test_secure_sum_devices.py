"""Real devices of a secure-sum system (issue 31 §3): the services and every device client
are separate processes; each device draws its noise share and its sampling from its own
CSPRNG, and the server's and the proxy's state folders, logs, messages and arguments hold
nothing from which a device's share can be computed (the planted generator keys are looked
for in all of them). The released counts are the plain sum of the devices' quantised
vectors plus their shares (replayed here from the planted keys, a test hook only)."""

from __future__ import annotations

import base64
import json
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from randomgen import ChaCha

from dprec.client.http import ProxyAPI, ServerAPI
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.device import proxy_key_of, segment_noise
from dprec.services.auth import client_token
from dprec.services.launch import Loopback
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.messages import PopularityModel

DEVICE = Path(__file__).with_name("device_proc.py")
N_ITEMS, N_CLIENTS, K = 20, 12, 3


def _forms(key: bytes) -> list[bytes]:
    """The ways a 32-byte key could be written down: raw, hex, base64, its words."""
    words = np.frombuffer(key, dtype=np.uint64)
    return [key, key.hex().encode(), key.hex().upper().encode(), base64.b64encode(key),
            *(str(int(w)).encode() for w in words)]


def _everything(folder: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in folder.rglob("*") if p.is_file()]


@pytest.mark.slow  # a server, a proxy and 13 device processes
def test_device_processes_report_and_the_services_hold_nothing_of_their_noise(tmp_path):
    params = {"k": str(K), "epsilon": "1", "n_clients": str(N_CLIENTS), "min_honest": "10",
              "validity": "none"}  # the ring shares are replayed below
    rng = np.random.default_rng(3)
    histories = [np.sort(rng.choice(N_ITEMS, K, replace=False)) for _ in range(N_CLIENTS)]
    planted = [secrets.token_bytes(32) for _ in range(N_CLIENTS)]
    with Loopback(tmp_path / "services") as lb:
        srv = lb.server("dp-pop", N_ITEMS, params)
        prx = lb.proxy(srv.url, 10, batch_senders=N_CLIENTS)
        auth = {"Authorization": "Bearer " + lb.secret.decode()}
        operator = {"Authorization": "Bearer " + lb.operator_secret.decode()}
        assert httpx.post(srv.url + "/v1/start", json={}, headers=auth).status_code == 200
        procs = []
        for cid in range(N_CLIENTS):
            spec = {"server": srv.url, "proxy": prx.url, "client_id": cid,
                    "token": client_token(lb.token_key, cid),
                    "state_dir": str(tmp_path / "devices" / str(cid)), "budget": 1.5,
                    "items": histories[cid].tolist(), "n_items": N_ITEMS,
                    "planted": planted[cid].hex()}
            path = tmp_path / f"spec-{cid}.json"
            path.write_text(json.dumps(spec))
            # device 0 runs as two processes on one folder: one message, one charge
            for _ in range(2 if cid == 0 else 1):
                procs.append(subprocess.Popen([sys.executable, str(DEVICE), str(path)],
                                              stdout=subprocess.PIPE, text=True))
        outs = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1])
                for p in procs]
        assert all(o.get("reported") is True for o in outs), outs
        assert all(o["spent"] == 1.0 for o in outs)  # epsilon 1, charged once per run
        closed = httpx.post(prx.url + "/v1/rounds/0/close", headers=operator).json()
        assert closed["senders"] == N_CLIENTS and closed["forwarded"] is True, closed
        server, proxy = ServerAPI(srv.url), ProxyAPI(prx.url)
        info = ProtocolInfo.from_json(server.protocol_doc())
        model = PopularityModel.from_bytes(server.artefact("model").data)
        proxy_key = proxy_key_of(proxy.round()["published"])
        server.close()
        proxy.close()
        cmdlines = [Path(f"/proc/{p.process.pid}/cmdline").read_bytes() for p in (srv, prx)]
        services = _everything(srv.state_dir) + _everything(prx.state_dir)
    assert model.contributors == N_CLIENTS and model.counts.size == N_ITEMS
    # the test hook: replay each device's draws from its planted key
    rd = info.deployment.device_round(info.config, N_ITEMS, 0)
    client = SecureSumClient(rd.params, proxy_key, model.server_key)
    total = np.zeros(N_ITEMS, np.int64)
    for cid in range(N_CLIENTS):
        x = np.zeros(N_ITEMS)
        x[histories[cid]] = 1.0
        gen = np.random.Generator(ChaCha(key=np.frombuffer(planted[cid], np.uint64).copy(),
                                         counter=0, rounds=20))
        total += client.prepare(x, gen, segment_noise(rd.segments))
    np.testing.assert_array_equal(model.counts, total)
    plain = np.bincount(np.concatenate(histories), minlength=N_ITEMS)
    assert not np.array_equal(model.counts, plain)  # the shares are in the sum
    assert services and any(p.suffix == ".log" for p, _ in services)
    for key in planted:
        for form in _forms(key):
            for path, data in services:
                assert form not in data, f"{path.name} holds a device's generator key"
            assert all(form not in c for c in cmdlines)
    for cid in range(N_CLIENTS):
        folder = tmp_path / "devices" / str(cid)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((folder / "ledger.json").stat().st_mode) == 0o600


@pytest.mark.slow  # a server, a proxy and every round of two systems
@pytest.mark.parametrize(("system", "params"), [
    ("dp-fedavg", {"rounds": "2", "rate": "0.5", "factors": "2", "epsilon": "2"}),
    ("dpals", {"k": "4", "weighting": "tail", "factors": "2", "steps": "1", "epsilon": "2"}),
])
def test_devices_take_part_in_every_round_of_a_multi_round_system(tmp_path, system, params):
    """dp-fedavg and dpals devices (the SDK, on their own histories) upload in every round
    the services open; each round is released and the model moves; the run is charged its
    epsilon once."""
    from dprec.client import DeviceClient

    n, d = 10, 12
    rng = np.random.default_rng(5)
    with Loopback(tmp_path / "services") as lb:
        srv = lb.server(system, d, {**params, "n_clients": str(n), "min_honest": str(n)})
        prx = lb.proxy(srv.url, n, batch_senders=n)
        auth = {"Authorization": "Bearer " + lb.secret.decode()}
        operator = {"Authorization": "Bearer " + lb.operator_secret.decode()}
        assert httpx.post(srv.url + "/v1/start", json={}, headers=auth).status_code == 200
        devices = [DeviceClient(c, client_token(lb.token_key, c), srv.url, prx.url,
                                tmp_path / "devices" / str(c), 2.0) for c in range(n)]
        histories = [(rng.random(d) < 0.4).astype(float) for _ in range(n)]
        rounds = devices[0].describe().rounds
        before = None
        for r in range(rounds):
            for dev, h in zip(devices, histories, strict=True):
                assert dev.report(h) is True, (system, r)
            closed = httpx.post(prx.url + f"/v1/rounds/{r}/close", headers=operator).json()
            assert closed["senders"] == n and closed["forwarded"] is True, closed
            for dev in devices:
                dev.describe()
            model = devices[0].artefact()
            assert model.contributors == n
            if before is not None and hasattr(model, "factors_matrix"):
                assert not np.array_equal(model.factors_matrix, before)
            before = getattr(model, "factors_matrix", None)
        assert all(dev.ledger.spent == 2.0 for dev in devices)
        scores = devices[0].scores(histories[0])
        assert scores.shape == (d,) and np.isfinite(scores).all()
