"""dprec's Prio3 against the published test vectors of draft-irtf-cfrg-vdaf-20
(vdaf_vectors/README.md): XofTurboShake128, Prio3Count, Sum, SumVec, SumVecWithMultiproof,
Histogram, MultihotCountVec and a degree-3 gadget; the bad_* vectors must be rejected."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dprec.protocol.secure_sum.errors import InvalidProofError, MalformedUploadError
from dprec.protocol.secure_sum.vdaf import spec_instances as spec
from dprec.protocol.secure_sum.vdaf.field import Field64, Field128
from dprec.protocol.secure_sum.vdaf.flp import Circuit
from dprec.protocol.secure_sum.vdaf.gadgets import PolyEval
from dprec.protocol.secure_sum.vdaf.prio3 import Prio3
from dprec.protocol.secure_sum.vdaf.xof import XofTurboShake128

VECTORS = Path(__file__).parent / "vdaf_vectors"
REJECTED = (InvalidProofError, MalformedUploadError)


class HigherDegree(Circuit):
    """The reference's test circuit: ``x (x - 1) (x - 2) = 0`` with a degree-3 gadget."""

    field = Field64
    MEAS_LEN, JOINT_RAND_LEN, OUTPUT_LEN, EVAL_OUTPUT_LEN = 1, 0, 1, 1

    def __init__(self) -> None:
        self.GADGETS = [PolyEval([0, 2, -3, 1])]
        self.GADGET_CALLS = [1]

    def encode(self, measurement):
        return Field64.from_ints([measurement])

    def gadget_inputs(self, meas, joint_rand, num_shares):
        return [meas.reshape(1, 1)]

    def outputs(self, meas, joint_rand, num_shares, gadget_outputs):
        return gadget_outputs[0]

    def truncate(self, meas):
        return meas

    def decode(self, output, num_measurements):
        return int(output[0])


def instance(name: str, tv: dict) -> Prio3:
    s = tv["shares"]
    if name.startswith("Prio3Count"):
        return spec.prio3_count(s)
    if name.startswith("Prio3SumVecWithMultiproof"):
        field = Field64 if name.endswith(("_0.json", "_1.json")) else Field128
        return spec.prio3_sum_vec_with_multiproof(s, field, 3, tv["length"],
                                                  tv["max_measurement"], tv["chunk_length"])
    if name.startswith("Prio3SumVec"):
        return spec.prio3_sum_vec(s, tv["length"], tv["max_measurement"], tv["chunk_length"])
    if name.startswith("Prio3Sum"):
        return spec.prio3_sum(s, tv["max_measurement"])
    if name.startswith("Prio3Histogram"):
        return spec.prio3_histogram(s, tv["length"], tv["chunk_length"])
    if name.startswith("Prio3MultihotCountVec"):
        return spec.prio3_multihot_count_vec(s, tv["length"], tv["max_weight"],
                                             tv["chunk_length"])
    if name.startswith("Prio3HigherDegree"):
        return Prio3(HigherDegree(), 1, 0xFFFFFFFF, s)
    raise AssertionError(name)


def run_vector(vdaf: Prio3, tv: dict) -> None:
    """Replay the vector's operations; each must succeed or fail as recorded."""
    key, ctx = bytes.fromhex(tv["verify_key"]), bytes.fromhex(tv["ctx"])
    f = vdaf.field
    states: dict[tuple[int, int], object] = {}
    out_shares: dict[int, list[np.ndarray]] = {}
    for op in tv["operations"]:
        kind, ok = op["operation"], op["success"]
        rep = tv["reports"][op["report_index"]] if "report_index" in op else None
        try:
            if kind == "shard":
                public, shares = vdaf.shard(ctx, rep["measurement"], bytes.fromhex(rep["nonce"]),
                                            bytes.fromhex(rep["rand"]))
                assert vdaf.encode_public_share(public).hex() == rep["public_share"]
                assert [vdaf.encode_input_share(x).hex() for x in shares] == rep["input_shares"]
            elif kind == "verify_init":
                a = op["aggregator_id"]
                public = vdaf.decode_public_share(bytes.fromhex(rep["public_share"]))
                share = vdaf.decode_input_share(a, bytes.fromhex(rep["input_shares"][a]))
                state, vshare = vdaf.verify_init(key, ctx, a, bytes.fromhex(rep["nonce"]),
                                                 public, share)
                assert vdaf.encode_verifier_share(vshare).hex() == rep["verifier_shares"][0][a]
                states[(op["report_index"], a)] = state
            elif kind == "verifier_shares_to_message":
                vshares = [vdaf.decode_verifier_share(bytes.fromhex(x))
                           for x in rep["verifier_shares"][op["round"]]]
                msg = vdaf.verifier_shares_to_message(ctx, vshares)
                assert vdaf.encode_verifier_message(msg).hex() == \
                    rep["verifier_messages"][op["round"]]
            elif kind == "verify_next":
                a = op["aggregator_id"]
                state = states.get((op["report_index"], a))
                msg = vdaf.decode_verifier_message(
                    bytes.fromhex(rep["verifier_messages"][op["round"] - 1]))
                out = vdaf.verify_next(state, msg)
                assert f.encode(out).hex() == rep["out_shares"][a]
                out_shares.setdefault(a, []).append(out)
            elif kind == "aggregate":
                a = op["aggregator_id"]
                agg = vdaf.aggregate(out_shares[a])
                assert f.encode(agg).hex() == tv["agg_shares"][a]
            elif kind == "unshard":
                aggs = [f.decode(bytes.fromhex(x)) for x in tv["agg_shares"]]
                assert vdaf.unshard(aggs, len(tv["reports"])) == tv["agg_result"]
        except REJECTED:
            assert not ok, f"{kind} was rejected but the vector says it succeeds"
            continue
        assert ok, f"{kind} succeeded but the vector says it fails"


NAMES = sorted(p.name for p in VECTORS.glob("Prio3*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_prio3_vector(name: str) -> None:
    tv = json.loads((VECTORS / name).read_text())
    run_vector(instance(name, tv), tv)


def test_bad_vectors_are_present() -> None:
    """The rejection vectors are part of the suite (they must be rejected, not skipped)."""
    assert sum("_bad_" in n for n in NAMES) == 8


def test_xof_turboshake128_vector() -> None:
    tv = json.loads((VECTORS / "XofTurboShake128.json").read_text())
    seed, dst, binder = (bytes.fromhex(tv[k]) for k in ("seed", "dst", "binder"))
    assert XofTurboShake128.derive_seed(seed, dst, binder).hex() == tv["derived_seed"]
    vec = XofTurboShake128.expand_into_vec(Field128, seed, dst, binder, tv["length"])
    assert Field128.encode(vec).hex() == tv["expanded_vec_field128"]
