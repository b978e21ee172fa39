"""dprec's validity checks (vdaf.contribution): honest reports sum exactly; every way out
of bounds, and every tampered share, is refused; the sizes and the soundness are as
stated."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.protocol.secure_sum.errors import (
    InvalidProofError,
    MalformedUploadError,
    SecureSumError,
)
from dprec.protocol.secure_sum.vdaf.circuits import encode_range_checked
from dprec.protocol.secure_sum.vdaf.contribution import (
    ContributionCheck,
    Report,
    bounded_range_check,
    dp_pop_check,
    smallest_range_circuit,
)
from dprec.protocol.secure_sum.vdaf.dprec_circuits import BoundedVector
from dprec.protocol.secure_sum.vdaf.flp import Flp
from dprec.protocol.secure_sum.vdaf.noise_bounds import (
    choose_truncation,
    l2_bound_sq,
    truncated_noise_share,
)

D, K, CLIENTS = 40, 4, 50
KEY = bytes(range(32))
REFUSED = (InvalidProofError, MalformedUploadError)


def nonce(i: int) -> bytes:
    return i.to_bytes(16, "little")


def rand(chk: ContributionCheck, i: int) -> bytes:
    return np.random.default_rng(1000 + i).bytes(chk.rand_size)


def verify(chk: ContributionCheck, rep: Report, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Both aggregators' steps; the output shares, or the refusal."""
    sl, vl = chk.prep_init(0, KEY, nonce(i), rep.public_share, rep.leader_share)
    sh, vh = chk.prep_init(1, KEY, nonce(i), rep.public_share, rep.helper_share)
    msg = chk.prep_shares_to_prep(vl, vh)
    return chk.prep_finish(sl, msg), chk.prep_finish(sh, msg)


def forged(chk: ContributionCheck, meas: np.ndarray, i: int) -> Report:
    """A report of an arbitrary encoded measurement, proved as an honest client would."""
    v = chk.vdaf
    public, (leader, helper) = v.shard_encoded(chk.ctx, meas, nonce(i), rand(chk, i))
    return Report(v.encode_public_share(public), v.encode_input_share(leader),
                  v.encode_input_share(helper))


@pytest.fixture(scope="module")
def pop() -> ContributionCheck:
    return dp_pop_check(D, K, choose_truncation(0.05, D, CLIENTS))


def honest_pop_vector(chk: ContributionCheck, rng: np.random.Generator) -> np.ndarray:
    v = np.zeros(D, dtype=np.int64)
    v[rng.choice(D, K, replace=False)] = 1
    return v + truncated_noise_share(chk.truncation, rng, vector=v,
                                     l2_bound_sq=chk.circuit.l2_bound_sq)


def test_honest_reports_sum_exactly(pop) -> None:
    rng = np.random.default_rng(0)
    ys = [honest_pop_vector(pop, rng) for _ in range(4)]
    leader, helper = [], []
    for i, y in enumerate(ys):
        a, b = verify(pop, pop.shard(y, nonce(i), rand(pop, i)), i)
        leader.append(a)
        helper.append(b)
    total = pop.unshard([pop.aggregate(leader), pop.aggregate(helper)], len(ys))
    assert np.array_equal(total, np.sum(ys, axis=0))


def test_issue_attack_half_modulus_everywhere_is_refused(pop) -> None:
    """The probe of issue 31: q/2 - 1 on every coordinate (here 2^11 - 1)."""
    y = np.full(D, 2**11 - 1, dtype=np.int64)
    with pytest.raises(SecureSumError):
        pop.shard(y, nonce(1), rand(pop, 1))  # an honest client's encoder refuses it
    c = pop.circuit
    meas = c.field.from_ints(np.concatenate([y, np.zeros(c.sum_bits + c.l2_bits,
                                                         dtype=np.int64)]))
    with pytest.raises(REFUSED):
        verify(pop, forged(pop, meas, 1), 1)


def test_one_coordinate_out_of_range_is_refused(pop) -> None:
    c = pop.circuit
    y = np.zeros(D, dtype=np.int64)
    y[0] = c.high + 1  # T + 2: one step past the range, sum still within its range
    slack = encode_range_checked(c.field, np.array([int(y.sum()) - c.sum_range[0]]), c.sum_max)
    l2_slack = encode_range_checked(c.field, np.array([c.l2_bound_sq - int(y @ y)]),
                                    c.l2_bound_sq)
    meas = np.concatenate([c.field.from_ints(y), slack, l2_slack])
    with pytest.raises(InvalidProofError):
        verify(pop, forged(pop, meas, 2), 2)


def test_many_coordinates_at_the_top_of_the_range_are_refused(pop) -> None:
    """Net sum within range (+high on half, -T on the other half) but ||y||^2 too large:
    the L2 bound stops it, the sum range alone would not."""
    c = pop.circuit
    y = np.where(np.arange(D) % 2 == 0, c.high, c.low).astype(np.int64)
    assert c.sum_range[0] <= y.sum() <= c.sum_range[1] and int(y @ y) > c.l2_bound_sq
    sum_slack = encode_range_checked(c.field, np.array([int(y.sum()) - c.sum_range[0]]),
                                     c.sum_max)
    meas = np.concatenate([c.field.from_ints(y), sum_slack, c.field.zeros(c.l2_bits)])
    with pytest.raises(InvalidProofError):
        verify(pop, forged(pop, meas, 9), 9)


def test_weight_above_k_plus_slack_is_refused(pop) -> None:
    """Every coordinate in range but the sum too large: the k-hot weight check."""
    c = pop.circuit
    y = np.full(D, c.high, dtype=np.int64)  # sum = D (T + 1) > k + S
    assert y.sum() > c.sum_range[1]
    meas = np.concatenate([c.field.from_ints(y), c.field.from_ints(np.ones(c.sum_bits,
                                                                           dtype=np.int64)),
                           c.field.zeros(c.l2_bits)])
    with pytest.raises(InvalidProofError):
        verify(pop, forged(pop, meas, 3), 3)


def test_tampered_shares_are_refused(pop) -> None:
    rng = np.random.default_rng(4)
    rep = pop.shard(honest_pop_vector(pop, rng), nonce(4), rand(pop, 4))
    flip = bytearray(rep.helper_share)
    flip[0] ^= 1  # the helper's seed: its measurement and proof shares change
    with pytest.raises(REFUSED):
        verify(pop, Report(rep.public_share, rep.leader_share, bytes(flip)), 4)
    flip = bytearray(rep.public_share)
    flip[40] ^= 1  # the helper's joint-randomness part as the client announced it
    with pytest.raises(REFUSED):
        verify(pop, Report(bytes(flip), rep.leader_share, rep.helper_share), 4)
    flip = bytearray(rep.leader_share)
    flip[8] ^= 1  # one measurement element of the leader's share
    with pytest.raises(REFUSED):
        verify(pop, Report(rep.public_share, bytes(flip), rep.helper_share), 4)
    with pytest.raises(MalformedUploadError):  # an element >= p
        verify(pop, Report(rep.public_share, b"\xff" * 8 + rep.leader_share[8:],
                           rep.helper_share), 4)
    with pytest.raises(MalformedUploadError):
        verify(pop, Report(rep.public_share, rep.leader_share[:-1], rep.helper_share), 4)


def test_sizes_soundness_and_proofs(pop) -> None:
    rep = pop.shard(honest_pop_vector(pop, np.random.default_rng(5)), nonce(5), rand(pop, 5))
    sizes = pop.sizes()
    assert (len(rep.public_share), len(rep.leader_share), len(rep.helper_share)) == \
        (sizes["public_share"], sizes["leader_share"], sizes["helper_share"]) == \
        (64, 8 * (sizes["measurement_elements"] + sizes["proof_elements"]) + 32, 64)
    assert pop.proofs >= 3 and pop.soundness_log2 <= -128
    tr = pop.truncation
    assert pop.delta_cost(1.0) == pytest.approx(
        (1 + np.e) * tr.clients * (tr.per_client_tv + pop.l2_tv))


@pytest.mark.parametrize("range_proof", ["polynomial", "digits", "bits"])
def test_bounded_range_with_l2(range_proof) -> None:
    tr = choose_truncation(0.5, D, CLIENTS)
    bound_sq, _ = l2_bound_sq(20.0, tr)
    r = 6 + tr.coordinate_bound

    def circuit(l2):
        return BoundedVector(D, -r, r, l2_bound_sq=l2, range_proof=range_proof, digits=2)

    chk = ContributionCheck(circuit(bound_sq), 0xFFFF0D02, range_proof)
    assert chk.circuit.high >= r and chk.circuit.low == -r
    rng = np.random.default_rng(6)
    y = rng.integers(-3, 4, D) + truncated_noise_share(tr, rng, check_sum=False)
    a, b = verify(chk, chk.shard(y, nonce(6), rand(chk, 6)), 6)
    assert np.array_equal(chk.unshard([chk.aggregate([a]), chk.aggregate([b])], 1), y)
    # every coordinate in range but ||y||^2 above the bound: the slack cannot be encoded,
    # so forge it as zero
    c = chk.circuit
    big = np.full(D, r, dtype=np.int64)
    assert int(big @ big) > bound_sq
    coords = circuit(None).encode(big)
    meas = np.concatenate([coords, c.field.zeros(c.l2_bits)])
    with pytest.raises(InvalidProofError):
        verify(chk, forged(chk, meas, 7), 7)
    # a digit out of its range (the value it encodes may still look small)
    if range_proof == "digits":
        meas = chk.circuit.encode(y).copy()
        meas[0] = c.field.from_ints([c.base])[0]  # digit B: one past the largest
        with pytest.raises(InvalidProofError):
            verify(chk, forged(chk, meas, 8), 8)


def test_bounded_range_check_picks_the_smallest_upload() -> None:
    """dp-fedavg's range at d = 1,682 (gamma C = 4,100 plus the noise): 3 digits beat the
    15-bit decomposition by more than half."""
    best = smallest_range_circuit(1682, -12002, 12002)
    bits = BoundedVector(1682, -12002, 12002, range_proof="bits")
    assert best.range_proof == "digits"

    def upload(c):
        return c.MEAS_LEN + 3 * Flp(c).PROOF_LEN
    assert upload(best) < upload(bits) / 2
    tr = choose_truncation(352.0, 1682, 1000)
    chk = bounded_range_check(1682, 4100, tr)
    assert chk.circuit.low == -(4100 + tr.coordinate_bound) <= chk.circuit.high - 2 * (
        4100 + tr.coordinate_bound)


def test_an_invalid_report_is_dropped_and_the_round_goes_on(pop) -> None:
    """Three honest reports and one out of range: the aggregators refuse that one, with its
    reason, and sum the rest exactly."""
    rng = np.random.default_rng(10)
    ys = [honest_pop_vector(pop, rng) for _ in range(3)]
    reports = [pop.shard(y, nonce(20 + i), rand(pop, 20 + i)) for i, y in enumerate(ys)]
    c = pop.circuit
    bad = np.full(D, 2**11 - 1, dtype=np.int64)
    reports.insert(1, forged(pop, c.field.from_ints(np.concatenate(
        [bad, np.zeros(c.sum_bits + c.l2_bits, dtype=np.int64)])), 99))
    nonces = [nonce(20), nonce(99), nonce(21), nonce(22)]
    leader, helper, refused = [], [], []
    for i, rep in enumerate(reports):
        sl, vl = pop.prep_init(0, KEY, nonces[i], rep.public_share, rep.leader_share)
        sh, vh = pop.prep_init(1, KEY, nonces[i], rep.public_share, rep.helper_share)
        try:
            msg = pop.prep_shares_to_prep(vl, vh)
        except InvalidProofError as e:
            refused.append((i, str(e)))
            continue
        leader.append(pop.prep_finish(sl, msg))
        helper.append(pop.prep_finish(sh, msg))
    assert [i for i, _ in refused] == [1] and "refuse" in refused[0][1]
    total = pop.unshard([pop.aggregate(leader), pop.aggregate(helper)], len(leader))
    assert np.array_equal(total, np.sum(ys, axis=0))
