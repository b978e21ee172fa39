"""The one noise calibration (dprec.privacy.calibrate.smallest_noise): known answers, the
shared bracket, soundness at the returned value, and its errors."""

from __future__ import annotations

import math

import pytest

from dprec.errors import DprecError, PrivacyParameterError
from dprec.privacy.calibrate import bisect, calibrate_to_target, smallest_noise
from dprec.privacy.skellam import calibrate_skellam_mu
from dprec.systems.dpals.accounting import Release, calibrate


@pytest.mark.parametrize("target", [1e-6, 0.3, 1.0, 7.0, 1e5])
def test_the_smallest_noise_of_a_known_curve(target):
    """eps(x) = 1 / x: the answer is 1 / target, rounded up to within rtol, and meets it."""
    calls: list[float] = []

    def eps_of(x: float) -> float:
        calls.append(x)
        return 1.0 / x

    x = smallest_noise(eps_of, target, rtol=1e-6)
    assert x in calls  # evaluated, hence sound by construction
    assert 1.0 / x <= target
    assert 1.0 / target <= x <= (1.0 / target) * (1 + 1e-6)


def test_the_bracket_is_powers_of_four_anchored_at_one():
    """Every caller brackets the same way: 1, 4, 16, ... up, or 1/4, 1/16, ... down."""
    seen: list[float] = []

    def eps_of(x: float) -> float:
        seen.append(x)
        return 100.0 / x

    smallest_noise(eps_of, 1.0)  # answer 100: misses at 1, 4, 16, 64; meets at 256
    assert seen[:5] == [1.0, 4.0, 16.0, 64.0, 256.0]
    seen.clear()
    smallest_noise(eps_of, 1e4)  # answer 0.01: meets at 1, 1/4, 1/16, 1/64; misses at 1/256
    assert seen[:5] == [1.0, 0.25, 0.0625, 0.015625, 0.00390625]


def test_the_floor_is_returned_when_it_meets_the_target():
    assert smallest_noise(lambda x: 1e-9, 1.0, lower=1e-3) == 1e-3
    x = smallest_noise(lambda x: 2e-3 / x, 1.0, lower=1e-3)  # answer 2e-3, inside [1e-3, 4^-4]
    assert 2e-3 <= x <= 2e-3 * (1 + 1e-6)


def test_calibrated_values_above_one_are_unchanged_by_the_shared_bracket():
    """Golden values of the brackets before calibrate.py (Skellam's and dpals' own bisections
    from (1e-3, 1), growing by 4): bit-identical wherever the answer is above 1."""
    assert calibrate_skellam_mu(1.0, 1e-6, 10, math.sqrt(10)) == 103.1981883544991
    rel = [Release("s", 40.0, 8.0, 1.0, 6), Release("g", 18.0, 11.7, 0.5, 6)]
    assert calibrate(rel, 2.0, 1e-6) == 13.050944775064155


def test_errors_name_the_parameter():
    with pytest.raises(PrivacyParameterError, match="epsilon must be finite and > 0"):
        smallest_noise(lambda x: 1.0, 0.0)
    with pytest.raises(DprecError, match="rtol"):
        smallest_noise(lambda x: 1.0, 1.0, rtol=0.0)
    with pytest.raises(PrivacyParameterError, match="no mu up to 1e\\+06 reaches epsilon"):
        smallest_noise(lambda x: 2.0, 1.0, upper=1e6, what="mu")


def test_calibrate_to_target_lands_in_the_band():
    cal = calibrate_to_target(2.0, lambda e: 0.3 * e ** 1.5)
    assert 0.98 * 2.0 <= cal.user_epsilon <= 2.0
    assert cal.probes[-1] == (cal.epsilon, cal.user_epsilon)


def test_bisect_keeps_the_threshold_between_lo_and_hi_to_the_tolerance():
    lo, hi = bisect(lambda x: x * x < 2.0, 0.0, 2.0, 1e-9)
    assert lo * lo < 2.0 <= hi * hi
    assert 0 < hi - lo <= 1e-9
    assert hi == pytest.approx(math.sqrt(2.0), abs=1e-9)


def test_bisect_does_nothing_when_the_bracket_is_already_narrow():
    assert bisect(lambda x: True, 1.0, 1.5, 1.0) == (1.0, 1.5)
