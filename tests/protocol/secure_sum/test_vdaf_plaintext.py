"""The plaintext predicate (``ContributionCheck.refusals``, what the in-process simulation
applies) and the Prio3 proof agree on every vector: honest ones, hostile ones inside the
bounds, and hostile ones outside them (forged as an attacker would: the vector encoded as
is, each slack value clamped to its range, proved like an honest client)."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.protocol.secure_sum.errors import InvalidProofError
from dprec.protocol.secure_sum.vdaf.circuits import encode_range_checked
from dprec.protocol.secure_sum.vdaf.contribution import (
    ContributionCheck,
    bounded_range_check,
    dp_pop_check,
)
from dprec.protocol.secure_sum.vdaf.noise_bounds import (
    choose_truncation,
    l2_bound_sq,
    truncated_noise_share,
)

D, K, CLIENTS = 40, 4, 50
KEY = bytes(range(32))


def attacker_encoding(chk: ContributionCheck, y: np.ndarray) -> np.ndarray:
    """``y`` as the range proof carries it (polynomial: as is; digits: base-B digits of
    ``y - low`` with the overflow, or a negative value, in the top digit), with the slack
    values the honest encoding would use, clamped into their checked ranges."""
    c, f = chk.circuit, chk.circuit.field
    if c.range_proof == "polynomial":
        parts = [f.from_ints(y)]
    else:
        assert c.range_proof == "digits"
        rest, digits = y - c.low, []
        for _ in range(c.digits - 1):
            digits.append(rest % c.base)
            rest = rest // c.base
        parts = [f.from_ints(np.stack([*digits, rest], axis=1).ravel())]
    if c.sum_range is not None and c.sum_bits:
        slack = min(max(int(y.sum()) - c.sum_range[0], 0), c.sum_max)
        parts.append(encode_range_checked(f, np.array([slack]), c.sum_max))
    if c.l2_bound_sq is not None and c.l2_bits:
        slack = min(max(c.l2_bound_sq - int(y @ y), 0), c.l2_bound_sq)
        parts.append(encode_range_checked(f, np.array([slack]), c.l2_bound_sq))
    return np.concatenate(parts)


def proof_accepts(chk: ContributionCheck, y: np.ndarray, i: int) -> bool:
    v = chk.vdaf
    nonce = i.to_bytes(16, "little")
    rand = np.random.default_rng(500 + i).bytes(chk.rand_size)
    public, (leader, helper) = v.shard_encoded(chk.ctx, attacker_encoding(chk, y), nonce, rand)
    pub = v.encode_public_share(public)
    sl, vl = chk.prep_init(0, KEY, nonce, pub, v.encode_input_share(leader))
    sh, vh = chk.prep_init(1, KEY, nonce, pub, v.encode_input_share(helper))
    try:
        msg = chk.prep_shares_to_prep(vl, vh)
        chk.prep_finish(sl, msg)
        chk.prep_finish(sh, msg)
    except InvalidProofError:
        return False
    return True


def pop_vectors(chk: ContributionCheck, rng: np.random.Generator) -> dict[str, np.ndarray]:
    c, t = chk.circuit, chk.truncation.coordinate_bound
    v = np.zeros(D, np.int64)
    v[rng.choice(D, K, replace=False)] = 1
    honest = v + truncated_noise_share(chk.truncation, rng, vector=v,
                                       l2_bound_sq=c.l2_bound_sq)
    edge = np.zeros(D, np.int64)
    edge[:2] = 1 + t  # two full-range coordinates: inside every bound
    over_l2 = np.zeros(D, np.int64)
    over_l2[:30] = np.tile([1 + t, -t], 15)  # each coordinate in range, sum small, L2 huge
    over_sum = np.full(D, 1, np.int64)
    over_sum[: c.sum_range[1] - D + 1] += 1  # sum = k + S + 1, all small
    return {"honest": honest, "zero": np.zeros(D, np.int64), "edge": edge,
            "out_of_range": np.full(D, 2047, np.int64),
            "one_over": np.where(np.arange(D) == 3, 2 + t, 0).astype(np.int64),
            "below": np.where(np.arange(D) == 5, -t - 1, 0).astype(np.int64),
            "over_l2": over_l2, "over_sum": over_sum}


def test_the_pop_predicate_and_the_proof_agree() -> None:
    chk = dp_pop_check(D, K, choose_truncation(0.05, D, CLIENTS))
    cases = pop_vectors(chk, np.random.default_rng(0))
    why = chk.refusals(np.stack(list(cases.values())))
    expected = {"honest": "", "zero": "", "edge": "", "out_of_range": "range",
                "one_over": "range", "below": "range", "over_l2": "l2", "over_sum": "sum"}
    assert dict(zip(cases, why, strict=True)) == expected
    for i, (name, y) in enumerate(cases.items()):
        assert proof_accepts(chk, y, i) == (why[i] == ""), name
        assert chk.valid_plaintext(y) == (why[i] == "")


def test_the_bounded_range_predicate_and_the_proof_agree() -> None:
    tr = choose_truncation(0.5, D, CLIENTS)
    bound_sq, eta = l2_bound_sq(3.0, tr)
    chk = bounded_range_check(D, 3, tr, l2_bound_sq=bound_sq, l2_tv=eta)
    c = chk.circuit
    assert c.range_proof == "digits" and c.high > 3 + tr.coordinate_bound  # checks a bit more
    rng = np.random.default_rng(1)
    v = np.zeros(D, np.int64)
    v[:3] = [2, -1, 1]
    honest = v + truncated_noise_share(tr, rng, check_sum=False, vector=v,
                                       l2_bound_sq=bound_sq)
    wide = np.full(D, c.high, np.int64)  # every coordinate at the edge: breaks L2
    cases = {"honest": honest, "edge": np.where(np.arange(D) == 0, c.low, 0),
             "over": np.where(np.arange(D) == 0, c.high + 1, 0), "wide": wide}
    why = chk.refusals(np.stack([np.asarray(y, np.int64) for y in cases.values()]))
    assert why.tolist() == ["", "", "range", "l2"]
    for i, y in enumerate(cases.values()):
        assert proof_accepts(chk, np.asarray(y, np.int64), 100 + i) == (why[i] == "")


def test_the_predicate_refuses_what_the_client_cannot_encode() -> None:
    chk = dp_pop_check(D, K, choose_truncation(0.05, D, CLIENTS))
    with pytest.raises(ValueError, match="integer vectors"):
        chk.refusals(np.zeros((2, D + 1), np.int64))
    huge = np.full((1, D), 2**62, np.int64)  # no overflow in the norm: refused for range
    assert chk.refusals(huge).tolist() == ["range"]
