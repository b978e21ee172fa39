"""Reported epsilons are rounded outward to 6 significant digits, so the last bits of the
accountants' SIMD exp/log (which differ between CPUs) never reach a result file."""

import math

import pytest

from dprec.privacy.guarantee import Guarantee, reported_epsilon


@pytest.mark.parametrize(("raw", "up", "down"), [
    (152.7653248901672, 152.766, 152.765),   # AVX-512
    (152.765324875121, 152.766, 152.765),    # the same PLD without AVX-512
    (59.80622744267976, 59.8063, 59.8062),
    (0.0001234567, 0.000123457, 0.000123456),
])
def test_rounds_outward(raw, up, down):
    assert reported_epsilon(raw) == up and reported_epsilon(raw, upper=False) == down
    assert reported_epsilon(raw) >= raw >= reported_epsilon(raw, upper=False)


def test_values_on_the_grid_stay_and_specials_pass_through():
    for v in (2.5, 945.699, 1.0, 2.5 + 4e-16, 2.5 - 4e-16):
        assert reported_epsilon(v) == reported_epsilon(v, upper=False) == round(v, 6)
    assert reported_epsilon(0.0) == 0.0 and math.isinf(reported_epsilon(math.inf))


def test_guarantee_json_reports_the_rounded_upper_bound():
    g = Guarantee(152.7653248901672, 1e-6, level="user")
    assert g.to_json()["epsilon"] == 152.766
    assert g.epsilon == 152.7653248901672  # the object keeps the exact value
    assert Guarantee(math.inf, sides="none").to_json()["epsilon"] == "inf"
