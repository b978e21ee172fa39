"""DPLCF upload checks from public parameters (issue 26 §2, §4): the validity range refuses
honest uploads at most at the stated rate (exactly computed, and consistent with simulation),
refuses the all-ones vector, and the itemset screen flags a planted coalition and nothing
on honest uploads."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import binom, binomtest

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.systems.dplcf.bit_screens import (
    BitLaw,
    flagged_uploads,
    ones_counts,
    ones_range,
    refusal_probability,
    screen_threshold,
)

N = 200
MECH = BitFlip.symmetric(1.0)


def _honest(n_users: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """Packed flipped uploads of ``n_users`` histories of ``s`` random items each."""
    cols = np.concatenate([rng.choice(N, s, replace=False) for _ in range(n_users)])
    rows = np.repeat(np.arange(n_users), s)
    hist = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(n_users, N))
    return np.packbits(MECH.obfuscate_dense(hist, rng, dtype=np.uint8), axis=1)


@pytest.mark.parametrize("s", [0, 40])
def test_false_refusals_match_the_exact_rate(s):
    law = BitLaw(N, MECH.p, MECH.q, cap=40)
    bounds = ones_range(law, 1e-2)
    exact = refusal_probability(law, bounds, s)
    assert 0 < exact <= 1e-2  # the stated rate bounds it; s = 0 and s = L are the worst
    packed = _honest(40_000, s, np.random.default_rng(s))
    refused = int((~bounds.admits(packed)).sum())
    assert binomtest(refused, 40_000, exact).pvalue > 1e-4


def test_every_history_within_the_cap_is_refused_at_most_at_the_rate():
    law = BitLaw(N, MECH.p, MECH.q, cap=60)
    bounds = ones_range(law, 1e-3)
    worst = max(refusal_probability(law, bounds, s) for s in range(61))
    assert worst <= 1e-3
    # the bounds are the tightest that hold: one count further in breaks a tail's rate / 2
    assert binom.cdf(bounds.low, N, MECH.q) > 5e-4


def test_the_all_ones_vector_is_refused_with_or_without_a_cap():
    all_ones = np.packbits(np.ones((1, N), bool), axis=1)
    for cap in (N, 60):
        bounds = ones_range(BitLaw(N, MECH.p, MECH.q, cap), 1e-9)
        assert not bounds.admits(all_ones)[0]
        assert bounds.high < N
    assert ones_range(BitLaw(N, MECH.p, MECH.q, 60), 1e-9).high < \
        ones_range(BitLaw(N, MECH.p, MECH.q, N), 1e-9).high


def test_ones_counts_counts_set_bits():
    dense = np.random.default_rng(0).random((7, 13)) < 0.4
    assert ones_counts(np.packbits(dense, axis=1)).tolist() == dense.sum(axis=1).tolist()


def test_bad_parameters_are_refused():
    with pytest.raises(DprecError, match="cap"):
        BitLaw(10, 0.7, 0.3, cap=11)
    with pytest.raises(DprecError, match="rate"):
        ones_range(BitLaw(10, 0.7, 0.3, cap=5), 0.0)
    with pytest.raises(DprecError, match="z"):
        screen_threshold(100, 10, 0.7, 1, 1e-3)


def test_screen_flags_a_planted_coalition_and_no_honest_upload():
    rng = np.random.default_rng(1)
    n_honest, z = 600, 12
    honest = np.unpackbits(_honest(n_honest, 20, rng), axis=1, count=N).astype(bool)
    threshold = screen_threshold(n_honest, N, MECH.p, z, 1e-3)
    assert 1 < threshold < n_honest
    flagged, found = flagged_uploads(honest, z, threshold)
    assert not flagged.any() and found == []
    shared = rng.choice(N, z, replace=False)
    fake = rng.random((threshold + 5, N)) < MECH.q
    fake[:, shared] = True
    bits = np.vstack([honest, fake])
    flagged, found = flagged_uploads(bits, z, threshold)
    assert flagged[n_honest:].all()
    assert flagged[:n_honest].sum() <= 3  # only honest uploads that hold the whole grown set
    assert any(set(shared) <= set(s.tolist()) for s in found)
    # one attacker fewer than the threshold goes unseen: the screen's price
    flagged, _ = flagged_uploads(np.vstack([honest, fake[:threshold - 10]]), z, threshold)
    assert not flagged[n_honest:].all()
