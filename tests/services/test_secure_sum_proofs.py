"""dp-pop with ``validity=prio3`` over the real server and proxy apps (issue 31 §1): every
upload carries a Prio3 proof, verified jointly by the proxy (Helper) and the server
(Leader) at the close; an invalid upload is refused with its reason and the round releases
the honest sum exactly (the honest y's replayed from their seeded generators: a test hook).
Before, one client uploading q/2 - 1 on every coordinate shifted every published count."""

from __future__ import annotations

import os
from dataclasses import asdict

import numpy as np
from svc import Stack

from dprec.protocol.deployed import ProtocolInfo
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, run_id
from dprec.protocol.secure_sum.proved import ProvedUpload, bound_data
from dprec.protocol.secure_sum.sealed import seal
from dprec.protocol.secure_sum.vdaf.noise_bounds import truncated_noise_share
from dprec.systems.dp_pop.calibration import check_terms
from dprec.systems.dp_pop.deploy import check_of, proved_upload
from dprec.systems.dp_pop.messages import PopularityModel, SumUpload
from dprec.systems.dp_pop.system import DpPopConfig

N_ITEMS, K, N_HONEST = 16, 3, 11


def proved_info(n_clients: int = 20, min_honest: int = 10) -> ProtocolInfo:
    return ProtocolInfo("dp-pop", N_ITEMS, asdict(DpPopConfig(
        epsilon=2.0, k=K, n_clients=n_clients, min_honest=min_honest, validity="prio3")))


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
        """``n`` honest devices' uploads and the plain sum of their ``y = v + z``."""
        rng = np.random.default_rng(7)
        c = self.check.circuit
        bodies, total = [], np.zeros(N_ITEMS, np.int64)
        for i in range(n):
            v = np.zeros(N_ITEMS, np.int64)
            v[rng.choice(N_ITEMS, K, replace=False)] = 1
            bodies.append(proved_upload(self.check, self.proxy_key, self.server_key, v, 0,
                                        np.random.default_rng([i, 1])))
            z = truncated_noise_share(self.check.truncation, np.random.default_rng([i, 1]),
                                      vector=v, l2_bound_sq=c.l2_bound_sq)
            total += v + z
        return bodies, total

    def forged(self, meas: np.ndarray | None = None, tamper_proof: bool = False) -> bytes:
        """A malicious client's upload: the encoded measurement ``meas`` (any field
        elements, bypassing the honest encoder) or an honest one whose proof is altered,
        shared, proved by the honest prover, and sealed."""
        vdaf, mid = self.check.vdaf, os.urandom(MESSAGE_ID_BYTES)
        if meas is None:
            y = np.zeros(N_ITEMS, np.int64)
            meas = self.check.circuit.encode(y)
        public, (leader, helper) = vdaf.shard_encoded(self.check.ctx, meas, mid,
                                                      os.urandom(self.check.rand_size))
        pub, lead = vdaf.encode_public_share(public), bytearray(vdaf.encode_input_share(leader))
        if tamper_proof:
            lead[8 * vdaf.flp.MEAS_LEN] ^= 1  # the first proof element
        body = ProvedUpload(0, mid, pub,
                            seal(self.proxy_key, vdaf.encode_input_share(helper),
                                 bound_data(self.run, 0, mid, "proxy", pub)),
                            seal(self.server_key, bytes(lead),
                                 bound_data(self.run, 0, mid, "server", pub))).to_bytes()
        return SumUpload(body).to_bytes()

    def counts(self) -> np.ndarray:
        return PopularityModel.from_bytes(
            self.stack.server.get("/v1/artefacts/model").content).counts


def test_a_client_at_half_the_field_is_refused_and_the_honest_sum_is_released(tmp_path):
    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        assert r.published["validity"] == {"kind": "prio3", **check_terms(r.check)}
        bodies, total = r.honest(N_HONEST)
        field = r.check.vdaf.field
        huge = np.full(r.check.vdaf.flp.MEAS_LEN, (field.MODULUS - 1) // 2 - 1, np.uint64)
        attack = r.forged(huge)
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
    from dprec.systems.dp_pop.messages import NoisyVectors
    from dprec.systems.dp_pop.deploy import sealed_uploads

    with Stack(tmp_path, proved_info(), threshold=10, batch_senders=10) as s:
        r = ProvedRound(s)
        block = NoisyVectors(np.array([1]), np.zeros((1, N_ITEMS), np.int64), 0,
                             r.server_key, r.proxy_key, round_of(s.info).params)
        (_, body), = sealed_uploads(block)
        assert s.submit(0, 1, body).status_code in (400, 413, 422)
