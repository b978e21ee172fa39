"""The exact user-level eps of a bit vector flipped bit by bit, against brute force."""

import itertools
import math

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.privacy.bit_vector import bit_vector_delta, bit_vector_epsilon
from dprec.privacy.events import BitFlipDpEvent, EventLog
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant


def _brute_delta(eps, p, q, bits):
    """max over all pairs of input vectors of the hockey-stick divergence of the 2^bits
    report laws."""
    vectors = list(itertools.product((0, 1), repeat=bits))
    laws = []
    for x in vectors:
        law = np.array([math.prod((p if xi else q) if yi else (1 - p if xi else 1 - q)
                                  for xi, yi in zip(x, y, strict=True)) for y in vectors])
        laws.append(law)
    return max(float(np.maximum(a - math.exp(eps) * b, 0).sum()) for a in laws for b in laws)


def _brute_epsilon(p, q, bits, delta):
    lo, hi = 0.0, bits * max(math.log(p / q), math.log((1 - q) / (1 - p)))
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _brute_delta(mid, p, q, bits) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("p, q", [(0.5, 1 / (math.e + 1)), (0.9, 0.3), (0.7, 0.3)])
@pytest.mark.parametrize("bits", [1, 3, 5])
def test_matches_brute_force_over_all_vector_pairs(p, q, bits):
    for eps in (0.0, 0.3, 1.0):
        assert bit_vector_delta(eps, p, q, bits) == pytest.approx(
            _brute_delta(eps, p, q, bits), rel=1e-9, abs=1e-15)
    for delta in (1e-2, 1e-4):
        assert bit_vector_epsilon(p, q, bits, delta) == pytest.approx(
            _brute_epsilon(p, q, bits, delta), rel=1e-8, abs=1e-10)


def test_oue_user_level_on_ml_100k_matches_the_outside_audit():
    """1682 OUE bits at eps = 1: 298.6 exactly (the per-bit symmetrised PLD said 341.5)."""
    log = EventLog(2)
    oue = BitFlipDpEvent(0.5, 1 / (math.e + 1))
    log.record(0, oue, [0, 1], count=1682, unit="interaction")
    levels = account(log, 1e-6)
    assert levels.user.epsilon == pytest.approx(298.56, abs=0.01)
    assert "exact worst case" in levels.user.notes[1]
    symmetrised = PldAccountant()._compose_pld({oue: 1682}, 1e-6, "two", "two")
    assert symmetrised.epsilon == pytest.approx(341.51, abs=0.01)
    assert levels.user_basic is not None and levels.user_basic.epsilon == pytest.approx(
        1682 * math.log(0.5 * (math.e + 1)))


def test_symmetric_flips_match_the_pld_and_bad_arguments():
    p = math.e / (1 + math.e)
    exact = bit_vector_epsilon(p, 1 - p, 200, 1e-6)
    # eps = 1 per bit lies on the PLD's grid, so its symmetric-pair composition is exact too
    pld = PldAccountant(1e-5)._compose_pld({BitFlipDpEvent(p, 1 - p): 200}, 1e-6, "two", "two")
    assert exact == pytest.approx(pld.epsilon, rel=1e-9)
    with pytest.raises(DprecError, match="0 < q < p < 1"):
        bit_vector_epsilon(1.0, 0.2, 3, 1e-6)
    with pytest.raises(DprecError, match="bits"):
        bit_vector_epsilon(0.5, 0.2, 0, 1e-6)
