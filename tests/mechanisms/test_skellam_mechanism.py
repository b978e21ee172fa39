"""The Skellam mechanism: its noise is Sk(mu), shares sum to Sk(mu), it emits its event."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.privacy.skellam import SkellamDpEvent


def _chi2_p(draws: np.ndarray, mu: float) -> float:
    """Chi-square p-value of integer draws against the Sk(mu) pmf (tails pooled)."""
    lo, hi = int(stats.skellam.ppf(1e-3, mu, mu)), int(stats.skellam.ppf(1 - 1e-3, mu, mu))
    clipped = np.clip(draws, lo, hi)
    observed = np.bincount(clipped - lo, minlength=hi - lo + 1)
    support = np.arange(lo, hi + 1)
    expected = stats.skellam.pmf(support, mu, mu)
    expected[0] = stats.skellam.cdf(lo, mu, mu)
    expected[-1] = stats.skellam.sf(hi - 1, mu, mu)
    return float(stats.chisquare(observed, expected * draws.size / expected.sum()).pvalue)


def test_noise_is_skellam() -> None:
    rng = np.random.default_rng(0)
    draws = SkellamMechanism(3.0).noise(200_000, rng)
    assert draws.dtype == np.int64
    assert _chi2_p(draws, 3.0) > 1e-4
    assert draws.var() == pytest.approx(6.0, rel=0.02)


def test_shares_sum_to_the_central_noise() -> None:
    """50 clients adding Sk(mu / 50) each: the sum is Sk(mu) (chi-square, p > 1e-4), and a
    wrong share (mu / 25) is rejected by the same test."""
    rng = np.random.default_rng(1)
    central = SkellamMechanism(4.0)
    share = central.share(50)
    assert share.mu == pytest.approx(4.0 / 50)
    total = share.noise((50, 100_000), rng).sum(axis=0)
    assert _chi2_p(total, 4.0) > 1e-4
    wrong = SkellamMechanism(4.0 / 25).noise((50, 100_000), rng).sum(axis=0)
    assert _chi2_p(wrong, 4.0) < 1e-6


def test_min_honest_shares_alone_reach_mu() -> None:
    share = SkellamMechanism(12.0).share(100, min_honest=30)
    assert share.mu * 30 == pytest.approx(12.0)
    with pytest.raises(DprecError, match="min_honest must be <="):
        SkellamMechanism(1.0).share(10, min_honest=11)


def test_adds_to_integers_only_and_emits_its_event() -> None:
    mech = SkellamMechanism(2.0)
    rng = np.random.default_rng(2)
    x = np.array([0, 1, 5])
    y = mech(x, rng)
    assert y.shape == (3,) and y.dtype == np.int64
    with pytest.raises(DprecError, match="quantise"):
        mech(np.array([0.5]), rng)
    assert mech.dp_event(4, 2) == SkellamDpEvent(2.0, 4.0, 2.0)
    with pytest.raises(DprecError):
        SkellamMechanism(0.0)
    with pytest.raises(DprecError, match="Generator"):
        mech.noise(3, np.random.RandomState(0))  # type: ignore[arg-type]


def test_k_hot_event_carries_the_unit_shifts() -> None:
    """A k-hot release's event admits the exact PLD analysis (unit_shifts = k)."""
    mech = SkellamMechanism(2.0)
    assert mech.k_hot_event(4) == SkellamDpEvent(2.0, 4.0, 2.0, 4)
    assert mech.dp_event(4, 2, 4) == mech.k_hot_event(4)
    assert mech.dp_event(4, 2).unit_shifts is None
    with pytest.raises(DprecError, match="unit_shifts"):
        mech.dp_event(4, 1, 4)
