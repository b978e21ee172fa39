"""The token bucket refuses a rate or burst it cannot honour, naming it."""

from __future__ import annotations

import math

import pytest

from dprec.errors import InvalidParameterError
from dprec.services.limits import RateLimiter, TokenBucket


@pytest.mark.parametrize(("rate", "burst", "name"), [
    (0, 1, "rate"), (-1.0, 1, "rate"), (math.nan, 1, "rate"), (math.inf, 1, "rate"),
    ("2", 1, "rate"), (1.0, 0.5, "burst"), (1.0, math.inf, "burst"), (True, 1, "rate"),
])
def test_bad_rate_or_burst_is_refused(rate, burst, name):
    with pytest.raises(InvalidParameterError, match=f"^{name} must be a finite number"):
        TokenBucket(rate, burst)
    with pytest.raises(InvalidParameterError, match=f"^{name}"):
        RateLimiter(rate, burst)


def test_the_smallest_burst_is_one_request():
    b = TokenBucket(0.5, 1, clock=lambda: 0.0)
    assert b.take() == 0.0 and b.take() == pytest.approx(2.0)
