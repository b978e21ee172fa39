"""Write the dp-pop conformance fixtures the TypeScript SDK's tests read
(clients/js/fixtures/python/): prio3_*.json, for dp-pop's validity check at a fixed noised
vector, nonce and client randomness, the public share, both input shares, the proofs and the
preparation messages (verifier shares, verifier message) under a fixed verify key (the 1,682
item one with the round's calibration and sizes); dp_pop_model.json, the server's broadcast
before and after the round.

    PYTHONPATH=src python scripts/write_prio3_fixtures.py [--check]

``--check`` rewrites nothing and exits 1 if a fixture differs from what this code writes
(tests/clients/js/test_ts_prio3.py runs the same comparison).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from dprec.protocol.messages import HEADER
from dprec.protocol.secure_sum.checks import check_terms
from dprec.protocol.secure_sum.vdaf.contribution import DP_POP_ID, ContributionCheck, dp_pop_check
from dprec.protocol.secure_sum.vdaf.dprec_circuits import BoundedVector
from dprec.protocol.secure_sum.vdaf.noise_bounds import (
    NoiseTruncation,
    choose_truncation,
    truncated_noise_share,
)
from dprec.systems.dp_pop.calibration import calibrate, contribution_check
from dprec.systems.dp_pop.config import DpPopConfig
from dprec.systems.dp_pop.deploy import DEPLOYMENT
from dprec.systems.dp_pop.messages import PopularityModel

OUT = Path(__file__).resolve().parent.parent / "clients" / "js" / "fixtures" / "python"
VERIFY_KEY = bytes(range(32))
FULL = 4096
"""Shares longer than this many bytes are stored as their SHA-256 (the 1,682-item case)."""


def _noised(check: ContributionCheck, k: int, seed: int) -> np.ndarray:
    """A k-hot vector plus a truncated share meeting ``check`` (seeded: a fixture)."""
    rng = np.random.default_rng(seed)
    d = check.circuit.dimension
    v = np.zeros(d, np.int64)
    v[rng.choice(d, k, replace=False)] = 1
    z = truncated_noise_share(check.truncation, rng, vector=v,
                              l2_bound_sq=check.circuit.l2_bound_sq)
    return v + z


def _bytes(data: bytes) -> dict[str, str]:
    if len(data) > FULL:
        return {"sha256": hashlib.sha256(data).hexdigest(), "length": str(len(data))}
    return {"hex": data.hex()}


def fixture(check: ContributionCheck, y: np.ndarray, seed: int) -> dict:
    """Everything one report of ``y`` gives, from randomness fixed by ``seed``."""
    rng = np.random.default_rng(seed + 1)
    nonce = rng.bytes(16)
    rand = rng.bytes(check.rand_size)
    rep = check.shard(y, nonce, rand)
    v = check.vdaf
    leader = v.decode_input_share(0, rep.leader_share)
    helper = v.decode_input_share(1, rep.helper_share)
    proofs = v.field.add(leader.proofs, v.helper_proofs_share(check.ctx, 1, helper.seed))
    s0, vs0 = check.prep_init(0, VERIFY_KEY, nonce, rep.public_share, rep.leader_share)
    s1, vs1 = check.prep_init(1, VERIFY_KEY, nonce, rep.public_share, rep.helper_share)
    message = check.prep_shares_to_prep(vs0, vs1)
    out0, out1 = check.prep_finish(s0, message), check.prep_finish(s1, message)
    total = check.unshard([check.aggregate([out0]), check.aggregate([out1])], 1)
    assert np.array_equal(total, y)
    c = check.circuit
    return {
        "system": "dp-pop", "dimension": int(c.dimension), "terms": check_terms(check),
        "circuit": {"low": c.low, "high": c.high, "sum_range": list(c.sum_range),
                    "l2_bound_sq": c.l2_bound_sq, "range_proof": c.range_proof,
                    "meas_len": v.flp.MEAS_LEN, "proof_len": v.flp.PROOF_LEN,
                    "gadget_calls": list(c.GADGET_CALLS),
                    "chunks": [g.count for g in c.GADGETS]},
        "ctx": check.ctx.hex(), "y": [int(x) for x in y], "nonce": nonce.hex(),
        "rand": rand.hex(), "verify_key": VERIFY_KEY.hex(),
        "public_share": rep.public_share.hex(), "helper_share": rep.helper_share.hex(),
        "leader_share": _bytes(rep.leader_share), "proofs": _bytes(v.field.encode(proofs)),
        "verifier_shares": [_bytes(vs0), _bytes(vs1)], "verifier_message": message.hex(),
    }


def fixtures() -> dict[str, dict]:
    """The fixtures by file name: a small polynomial-range check, a bits-range one (large
    noise), and dp-pop at ML-100K's 1,682 items as a device computes it from its config."""
    out = {}
    small = dp_pop_check(40, 5, choose_truncation(0.5, 40, 100))
    out["prio3_dp_pop_small.json"] = fixture(small, _noised(small, 5, 1), 1)
    wide = dp_pop_check(12, 3, choose_truncation(60.0, 12, 10))
    out["prio3_dp_pop_bits.json"] = fixture(wide, _noised(wide, 3, 2), 2)
    config = DpPopConfig(epsilon=1.0, n_clients=943)
    ml = contribution_check(config, 1682, 943)
    out["prio3_dp_pop_1682.json"] = {**fixture(ml, _noised(ml, 50, 3), 3),
                                     "round": _round_numbers(config, ml, 1682)}
    out["dp_pop_model.json"] = _models(1682)
    out["prio3_layouts.json"] = _layouts()
    return out


LAYOUTS = ((1, 0, 0, 1, 1), (7, 2, 3, 2, 20), (50, 14, 52, 5, 482), (300, 30, 120, 20, 9000),
           (301, 31, 130, 20, 9100), (1682, 15, 351, 50, 2974), (4000, 9, 400, 100, 12000),
           (12, 102, 311, 3, 249554), (64, 3, 0, 64, 500), (100, 5, 40, 10, 0))
"""(d, T, S, k, B2) of dp-pop checks whose circuit layout the TS side must compute alike:
tiny, both sides of the polynomial/bits switch (2T + 3 <= 64), ML-100K's, a larger d, no
sum slack (S = 0, k = d), no L2 slack (B2 = 0)."""


def _layouts() -> dict:
    """Each check's layout: ranges, the gadgets' calls and chunks, lengths and proofs."""
    rows = []
    for d, t, s, k, b2 in LAYOUTS:
        truncation = NoiseTruncation(0.5, d, 1, t, s, 0.0)
        check = ContributionCheck(BoundedVector(d, -t, 1 + t, sum_range=(-s, k + s),
                                                l2_bound_sq=b2), DP_POP_ID, "dp-pop",
                                  truncation=truncation)
        c, v = check.circuit, check.vdaf
        rows.append({"dimension": d, "terms": check_terms(check), "range_proof": c.range_proof,
                     "meas_len": v.flp.MEAS_LEN, "proof_len": v.flp.PROOF_LEN,
                     "joint_rand_len": v.flp.JOINT_RAND_LEN,
                     "gadget_calls": list(c.GADGET_CALLS), "chunks": [g.count for g in c.GADGETS],
                     "degrees": [g.DEGREE for g in c.GADGETS],
                     "leader_share": check.sizes()["leader_share"]})
    return {"layouts": rows}


def _round_numbers(config: DpPopConfig, check: ContributionCheck, d: int) -> dict:
    """What a device needs besides the published terms (the calibration of the config) and
    the sizes Python's deployment computes from it."""
    tr = check.truncation
    return {"mu_share": calibrate(config, d, int(config.n_clients)).share.mu,
            "truncation_tv": tr.clients * (tr.per_client_tv + check.l2_tv),
            "delta_cost_eps1": check.delta_cost(1.0),
            "upload_bytes": HEADER.size + DEPLOYMENT.device_upload_bytes(config, d, 0),
            "model_bytes": DEPLOYMENT.largest_model(config, d)}


def _models(d: int) -> dict:
    """PopularityModel bytes before the round (the key) and after it (the counts)."""
    key = bytes(range(7, 39))
    counts = (np.arange(d, dtype=np.int64) * 37 % 101) - 20
    before = PopularityModel(key, np.zeros(0, np.int64))
    after = PopularityModel(key, counts, contributors=943)
    return {"n_items": d, "server_key": key.hex(), "before": before.to_bytes().hex(),
            "after": after.to_bytes().hex(), "counts": [int(c) for c in counts],
            "contributors": 943}


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    stale = []
    for name, data in fixtures().items():
        path = OUT / name
        text = render(data)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"stale fixtures: {stale}; rerun scripts/write_prio3_fixtures.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
