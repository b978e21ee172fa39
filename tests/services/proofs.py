"""A malicious client's proved upload, for the tests of the deployed Prio3 proofs of every
secure-sum system: any field elements as the measurement (bypassing the honest encoder), or
an honest zero vector whose proof is altered; shared, proved by the honest prover, sealed."""

from __future__ import annotations

import os

import numpy as np

from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, run_id
from dprec.protocol.secure_sum.proved import ProvedUpload, bound_data
from dprec.protocol.secure_sum.sealed import seal
from dprec.protocol.secure_sum.wire import SumUpload


def forge(check, proxy_key: bytes, server_key: bytes, meas: np.ndarray | None = None,
          tamper_proof: bool = False) -> bytes:
    """A malicious client's upload: the encoded measurement ``meas`` (any field elements,
    bypassing the honest encoder) or an honest zero vector whose proof is altered, shared,
    proved by the honest prover, and sealed."""
    vdaf, mid, run = check.vdaf, os.urandom(MESSAGE_ID_BYTES), run_id(proxy_key, server_key)
    if meas is None:
        meas = check.circuit.encode(np.zeros(check.circuit.dimension, np.int64))
    public, (leader, helper) = vdaf.shard_encoded(check.ctx, meas, mid,
                                                  os.urandom(check.rand_size))
    pub, lead = vdaf.encode_public_share(public), bytearray(vdaf.encode_input_share(leader))
    if tamper_proof:
        lead[8 * vdaf.flp.MEAS_LEN] ^= 1  # the first proof element
    body = ProvedUpload(0, mid, pub,
                        seal(proxy_key, vdaf.encode_input_share(helper),
                             bound_data(run, 0, mid, "proxy", pub)),
                        seal(server_key, bytes(lead),
                             bound_data(run, 0, mid, "server", pub))).to_bytes()
    return SumUpload(body).to_bytes()


def half_field(check) -> np.ndarray:
    """Every element of the encoded measurement at (p - 1)/2 - 1: the field's q/2 - 1."""
    field = check.vdaf.field
    return np.full(check.vdaf.flp.MEAS_LEN, (field.MODULUS - 1) // 2 - 1, np.uint64)
