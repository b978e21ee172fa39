"""Guarantee and PrivacyReport: validation, JSON round trips and human-readable lines."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.privacy.guarantee import Guarantee, PrivacyReport


def from_json(d: dict) -> Guarantee:
    eps = d["epsilon"]
    return Guarantee(**{**d, "epsilon": math.inf if eps == "inf" else eps, "notes": d["notes"]})


@pytest.mark.parametrize(
    "g",
    [
        Guarantee(1.0),
        Guarantee(0.0, delta=1e-6, level="user", sides="two", model="shuffled", mechanism="m"),
        Guarantee(math.inf, sides="none", notes=("a", "b")),
        Guarantee(2.5, sides="one", model="central", notes=("p = 1: an observed 0 ...",)),
    ],
)
def test_to_json_round_trips_through_json_text(g):
    d = g.to_json()
    text = json.dumps(d, allow_nan=False)  # strict JSON: no Infinity literal
    back = from_json(json.loads(text))
    assert back == g
    assert isinstance(d["notes"], list)


def test_infinite_epsilon_is_the_string_inf():
    d = Guarantee(math.inf, sides="none").to_json()
    assert d["epsilon"] == "inf"
    assert Guarantee(3.0).to_json()["epsilon"] == 3.0


def test_numpy_numbers_become_plain_floats():
    g = Guarantee(np.float32(0.5), delta=np.float64(1e-5))
    assert type(g.epsilon) is float and type(g.delta) is float
    json.dumps(g.to_json())


@pytest.mark.parametrize("delta", [-1e-9, 1.5, math.nan, math.inf])
def test_invalid_delta_raises(delta):
    with pytest.raises(DprecError, match=r"delta must be in \[0, 1\], got"):
        Guarantee(1.0, delta=delta)


@pytest.mark.parametrize("eps", [-1.0, -math.inf, math.nan])
def test_invalid_epsilon_raises(eps):
    # -inf used to slip through the "or isinf" branch
    with pytest.raises(DprecError, match=r"epsilon must be >= 0 \(or inf\), got"):
        Guarantee(eps)


def test_errors_are_value_errors_for_old_callers():
    with pytest.raises(ValueError):
        Guarantee(1.0, delta=2.0)
    with pytest.raises(DprecError, match="must be numbers"):
        Guarantee("one")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "field,value", [("level", "interaction"), ("sides", "both"), ("model", "trusted")]
)
def test_unknown_level_sides_or_model_raise(field, value):
    with pytest.raises(DprecError, match=rf"{field} must be one of .*, got '{value}'"):
        Guarantee(1.0, **{field: value})


def test_zero_and_infinite_epsilon_are_allowed():
    assert Guarantee(0.0).epsilon == 0.0
    assert Guarantee(math.inf).epsilon == math.inf


def test_frozen_and_hashable_even_with_list_notes():
    g = Guarantee(1.0, notes=["x"])  # type: ignore[arg-type]
    assert g.notes == ("x",)
    assert hash(g) == hash(Guarantee(1.0, notes=("x",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.epsilon = 2.0  # type: ignore[misc]


def test_describe():
    assert Guarantee(1.0).describe() == "ε=1 (event-level, two-sided, local model)"
    d = Guarantee(math.inf, delta=1e-6, level="user", sides="none", model="shuffled").describe()
    assert d == "ε=∞, δ=1e-06 (user-level, none-sided, shuffled model)"


def test_privacy_report_json_and_lines():
    true = Guarantee(1.0, sides="one", notes=("p = 1: an observed 0 proves absence",))
    claimed = Guarantee(1.0, sides="two")
    report = PrivacyReport(
        system="dplcf-ap",
        threat_model="untrusted server",
        true=true,
        claimed=claimed,
        mechanisms=({"name": "bitflip-asymmetric", "p": 1.0, "q": 0.37},),
        extra={"user_level": Guarantee(math.inf, level="user", sides="none").to_json()},
    )
    d = json.loads(json.dumps(report.to_json(), allow_nan=False))
    assert d["system"] == "dplcf-ap" and d["threat_model"] == "untrusted server"
    assert from_json(d["true"]) == true and from_json(d["claimed"]) == claimed
    assert d["mechanisms"] == [{"name": "bitflip-asymmetric", "p": 1.0, "q": 0.37}]
    assert d["user_level"]["epsilon"] == "inf"

    lines = report.lines()
    assert lines[0] == "Privacy report — dplcf-ap"
    assert "  mechanism: name=bitflip-asymmetric, p=1.0, q=0.37" in lines
    assert "  published claim: ε=1 (event-level, two-sided, local model)" in lines
    assert "  true guarantee:  ε=1 (event-level, one-sided, local model)" in lines
    assert "  note: p = 1: an observed 0 proves absence" in lines


def test_privacy_report_without_claim():
    report = PrivacyReport(system="s", threat_model="t", true=Guarantee(0.5))
    assert report.to_json()["claimed"] is None
    assert not any("published claim" in line for line in report.lines())
