"""dpals and dp-fedavg with ``validity=prio3`` over the real server and proxy apps (issue 31
§1, the layer's one proved-upload path): every upload proves that each coordinate of its
noised vector is within the round's clip plus the noise bound and ``||y||^2 <= B^2``; the
proxy (Helper) and the server (Leader) verify it jointly. One client uploading half the
field on every coordinate is refused with "invalid proof" and the round releases exactly
the honest sum (the honest ``y``'s replayed from their seeded generators: a test hook)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from proofs import forge, half_field
from svc import Stack

from dprec.client.policy import DevicePolicy
from dprec.errors import DprecError
from dprec.protocol.secure_sum.checks import validity_terms
from dprec.protocol.secure_sum.deploy import proved_upload, truncated_share
from dprec.protocol.secure_sum.wire import ExactSum, SumUpload
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_fedavg.deploy import DEPLOYMENT as FEDAVG
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.dp_fedavg.serve import server_of as fedavg_server
from dprec.systems.dp_fedavg.system import DpFedAvgConfig
from dprec.systems.dpals.deploy import DEPLOYMENT as DPALS
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.system import DpalsConfig

N_ITEMS, N_CLIENTS, MIN_HONEST, N_HONEST = 8, 14, 10, 11


def dpals_info() -> ProtocolInfo:
    """dpals with a DP count round (round 0: a count vector over the items) and one step."""
    return ProtocolInfo("dpals", N_ITEMS, DpalsConfig(
        epsilon=2.0, k=3, factors=2, steps=1, weighting="tail", n_clients=N_CLIENTS,
        min_honest=MIN_HONEST, validity="prio3"))


def fedavg_info() -> ProtocolInfo:
    return ProtocolInfo("dp-fedavg", N_ITEMS, DpFedAvgConfig(
        epsilon=2.0, rounds=1, factors=2, n_clients=N_CLIENTS, min_honest=MIN_HONEST,
        validity="prio3"))


class Round0:
    """Round 0 of a started stack: the keys, the published check, honest proved uploads."""

    def __init__(self, stack: Stack, deployment, model_type) -> None:
        stack.start()
        self.stack, self.deployment, self.model_type = stack, deployment, model_type
        info = stack.info
        self.checks = deployment.checks(info.config, info.n_items)
        self.check = self.checks[0]
        self.segments = deployment.device_round(info.config, info.n_items, 0).segments
        self.model = self.artefact()
        published = stack.proxy.get("/v1/round").json()["published"]
        self.validity = published["validity"]
        self.proxy_key = bytes.fromhex(published["secure_sum_proxy_key"])

    def artefact(self):
        return self.model_type.from_bytes(self.stack.server.get("/v1/artefacts/model").content)

    def honest(self, vectors: list[np.ndarray]) -> tuple[list[bytes], np.ndarray]:
        """Each vector's proved upload, and the plain sum of their ``y = v + z``."""
        bodies, total = [], np.zeros(self.check.circuit.dimension, np.int64)
        for i, v in enumerate(vectors):
            bodies.append(proved_upload(self.check, self.proxy_key, self.model.server_key, v,
                                        0, np.random.default_rng([i, 5]), self.segments))
            total += v + truncated_share(self.check, v, np.random.default_rng([i, 5]),
                                         self.segments)
        return bodies, total

    def run(self, bodies: list[bytes]) -> dict:
        """Every body plus one client at half the field; the close's answer."""
        attack = forge(self.check, self.proxy_key, self.model.server_key,
                       half_field(self.check))
        codes = [self.stack.submit(0, i, b).status_code
                 for i, b in enumerate([*bodies, attack])]
        assert codes == [202] * (len(bodies) + 1)
        out = self.stack.close(0).json()
        assert out["outcomes"] == {"summed": len(bodies), "refused": 1, "below_threshold": 0,
                                   "lost": 0}, out
        mid = SumUpload.from_bytes(attack).message_id.hex()
        assert out["uploads"][mid]["outcome"] == "refused"
        assert "invalid proof" in out["uploads"][mid]["reason"]
        return out


def test_dpals_refuses_an_out_of_range_upload_and_publishes_the_honest_counts(tmp_path):
    rng = np.random.default_rng(1)
    vectors = []
    for _ in range(N_HONEST):
        v = np.zeros(N_ITEMS, np.int64)
        v[rng.choice(N_ITEMS, 3, replace=False)] = 1
        vectors.append(v)
    with Stack(tmp_path, dpals_info(), threshold=MIN_HONEST, batch_senders=MIN_HONEST) as s:
        r = Round0(s, DPALS, DpalsModel)
        assert r.validity == validity_terms(r.checks) and "rounds" in r.validity  # 2 checks
        assert r.check.circuit.dimension == N_ITEMS  # the count round
        bodies, total = r.honest(vectors)
        r.run(bodies)
        model = r.artefact()
        assert model.contributors == N_HONEST
        np.testing.assert_array_equal(model.counts, total)  # exactly the honest y's


def test_dp_fedavg_refuses_an_out_of_range_upload_and_descends_on_the_honest_sum(tmp_path):
    info = fedavg_info()
    d = N_ITEMS * 2
    rng = np.random.default_rng(2)
    vectors = [np.where(rng.random(d) < 0.3, rng.integers(-1, 2, d), 0).astype(np.int64)
               for _ in range(N_HONEST)]
    with Stack(tmp_path, info, threshold=MIN_HONEST, batch_senders=MIN_HONEST) as s:
        r = Round0(s, FEDAVG, FedAvgModel)
        assert r.validity == validity_terms(r.checks) and "rounds" not in r.validity
        bodies, total = r.honest(vectors)
        r.run(bodies)
        model = r.artefact()
    local = fedavg_server(info.config, N_ITEMS, N_CLIENTS)
    local.V, local._rng = r.model.factors_matrix.copy(), np.random.default_rng(0)
    want = local.aggregate([ExactSum(total, N_HONEST)], 0)
    assert model.contributors == N_HONEST
    np.testing.assert_array_equal(model.factors_matrix, want.factors_matrix)


def test_a_device_refuses_a_proxy_that_publishes_another_check():
    """The check is computed on the device from the config it validated: a proxy whose
    published terms differ (here: a wider coordinate range) gets no upload."""
    info = fedavg_info()
    mine = validity_terms(FEDAVG.checks(info.config, info.n_items))
    theirs = {**mine, "high": mine["high"] + 1000}

    class Terms:
        settings, n_items, proxy_published = info.config, N_ITEMS, {"validity": theirs}

    with pytest.raises(DprecError, match="publishes the validity check"):
        FEDAVG.client_step(Terms(), np.zeros((1, N_ITEMS)), 0, np.random.default_rng(0), 0,
                           lambda: None)


def test_the_proved_uploads_are_sized_by_the_rounds_check():
    info = dpals_info()
    checks = DPALS.checks(info.config, info.n_items)
    sizes = [DPALS.device_upload_bytes(info.config, N_ITEMS, r) for r in range(len(checks))]
    assert sizes[0] < sizes[1]  # the count round's vector is the shorter
    assert DPALS.upload_size(info) > max(sizes)  # with the message header


@pytest.mark.parametrize("system", ["dpals", "dp-fedavg"])
def test_device_steps_prove_their_uploads_and_every_proof_verifies(tmp_path, system):
    """The device's own step (the SDK's ``client_step``: its vector on its history, clipped,
    quantised, its truncated share from its generator, proved against the check it computed
    from the validated config) over the real apps: every device's upload verifies, the one
    at half the field does not."""
    info, model_type = (dpals_info(), DpalsModel) if system == "dpals" else \
        (fedavg_info(), FedAvgModel)
    rng = np.random.default_rng(3)
    with Stack(tmp_path, info, threshold=MIN_HONEST, batch_senders=MIN_HONEST) as s:
        r = Round0(s, info.deployment, model_type)
        published = s.proxy.get("/v1/round").json()["published"]
        terms = replace(DevicePolicy().read(info), proxy_key=r.proxy_key,
                        proxy_published=published)
        bodies = []
        for cid in range(N_HONEST):
            history = np.zeros((1, N_ITEMS))
            history[0, rng.choice(N_ITEMS, 3, replace=False)] = 1.0
            bodies.append(info.deployment.client_step(terms, history, 0, rng, cid,
                                                      lambda: r.model))
            assert len(bodies[-1]) == terms.upload_bytes(0)
        r.run(bodies)
        assert r.artefact().contributors == N_HONEST
