"""Every mechanism audited: the lower bound never exceeds the true eps (at 99% confidence),
and comes within 20% of it where the likelihood-ratio test is known to be tight."""

from __future__ import annotations

import math

import pytest

from dprec.audit import TARGETS, AuditSettings, audit
from dprec.audit.mechanisms import audit_bitflip
from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip

MECHANISMS = [n for n, t in TARGETS.items() if t.kind == "mechanism"]
SETTINGS = AuditSettings(trials=60_000, alpha=0.01, seed=1)


def test_every_mechanism_module_is_covered():
    assert set(MECHANISMS) == {"bitflip-sp", "bitflip-ap", "bitflip-oue", "oue-replace",
                               "binary", "piecewise", "laplace", "laplace-rr", "gaussian",
                               "skellam"}


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_lower_bound_below_true_and_tight_where_known(name, eps):
    kw = ({"params": {"eps1": str(eps), "eps2": "1"}} if name == "laplace-rr" else
          {"params": {"noise_multiplier": str(1 / eps)}} if name == "gaussian" else
          {"params": {"mu": str(1 / eps)}} if name == "skellam" else
          {"epsilon": eps})
    r = audit(name, settings=SETTINGS, **kw)
    doc = r.to_json()
    assert set(doc) >= {"claimed_epsilon", "true_epsilon", "empirical_lower", "confidence",
                        "trials", "level"}
    assert doc["confidence"] == 0.99 and doc["trials"] == 60_000 and doc["level"] == "event"
    assert r.empirical_lower <= r.true_epsilon
    for d in r.directions.values():
        true = math.inf if d["true_epsilon"] == "inf" else d["true_epsilon"]
        assert d["empirical_lower"] <= true
        if r.tight and math.isfinite(true):
            assert d["empirical_lower"] >= 0.8 * true, (name, d)


def test_one_sided_ap_is_finite_on_presence_and_unbounded_on_absence():
    r = audit("bitflip-ap", epsilon=1.0, settings=SETTINGS)
    assert r.directions["presence"]["empirical_lower"] == pytest.approx(1.0, rel=0.1)
    assert r.directions["absence"]["false_positives"] == 0
    assert r.directions["absence"]["empirical_lower"] > 8 * 1.0
    assert r.claimed_epsilon == 1.0 and r.to_json()["true_epsilon"] == "inf"


def test_laplace_rr_bound_grows_with_the_trials_past_the_claim():
    small = audit("laplace-rr", settings=AuditSettings(trials=2_000, seed=2))
    large = audit("laplace-rr", settings=AuditSettings(trials=200_000, seed=2))
    assert small.claimed_epsilon == 2.0
    assert large.empirical_lower > small.empirical_lower + math.log(100) - 0.5
    assert large.empirical_lower > large.claimed_epsilon  # the published claim is violated


def test_oue_per_bit_is_below_wangs_eps_which_is_tight_for_a_replacement():
    bit = audit("bitflip-oue", epsilon=1.0, settings=SETTINGS)
    rep = audit("oue-replace", epsilon=1.0, settings=SETTINGS)
    assert bit.true_epsilon < 1.0 and bit.empirical_lower <= bit.true_epsilon
    assert rep.true_epsilon == pytest.approx(1.0)
    assert 0.85 < rep.empirical_lower <= 1.0


def test_an_understated_claim_is_caught():
    # a flip whose true eps is 2 published as eps = 1: the bound passes the claim
    r = audit_bitflip(BitFlip.symmetric(2.0), SETTINGS, claimed=1.0, name="mislabelled")
    assert r.empirical_lower > 1.5 * r.claimed_epsilon


def test_bad_requests_name_the_problem():
    with pytest.raises(DprecError, match="no option"):
        audit("binary", params={"bogus": "1"}, settings=SETTINGS)
    with pytest.raises(DprecError, match="eps1"):
        audit("laplace-rr", epsilon=1.0, settings=SETTINGS)
    with pytest.raises(DprecError, match="unknown audit target"):
        audit("nope", settings=SETTINGS)
    with pytest.raises(DprecError, match="trials"):
        AuditSettings(trials=0)
    with pytest.raises(DprecError, match="user-level|event-level"):
        audit("binary", level="user", settings=SETTINGS)
