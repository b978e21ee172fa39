"""Protocol audits: the shuffled FMF-LDP slot against the tight shuffled accountant, DPLCF at
user level at the audit's ceiling, and systems mapped to their mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprec.audit import AuditSettings, audit, audit_ceiling
from dprec.audit.protocols import pair_epsilon
from dprec.errors import DprecError

SETTINGS = AuditSettings(trials=40_000, alpha=0.01, seed=4)


def test_pair_epsilon_of_randomized_response_is_its_eps():
    p = 1 / (1 + math.exp(-1.3))
    assert pair_epsilon(np.array([p, 1 - p]), np.array([1 - p, p]), 0.0) == pytest.approx(
        1.3, abs=1e-5)
    assert pair_epsilon(np.array([0.5, 0.5]), np.array([0.5, 0.5]), 0.0) == 0.0
    assert math.isinf(pair_epsilon(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 0.1))


@pytest.mark.parametrize("n_users", [10, 100])
def test_shuffled_slot_bound_is_below_the_exact_pair_which_is_below_the_accountant(n_users):
    r = audit("shuffle-binary", params={"n_users": str(n_users)}, settings=SETTINGS)
    exact = r.extra["pair_epsilon"]
    assert r.empirical_lower <= exact <= r.true_epsilon + 1e-6
    assert r.claimed_epsilon == 2.5 and r.delta == 1e-6
    if n_users == 10:  # few users: no amplification and a tight audit
        assert r.empirical_lower >= 0.8 * r.true_epsilon


def test_shuffling_amplifies_what_the_audit_can_see():
    few = audit("shuffle-binary", params={"n_users": "10"}, settings=SETTINGS)
    many = audit("shuffle-binary", params={"n_users": "943"}, settings=SETTINGS)
    assert many.true_epsilon < few.true_epsilon and many.empirical_lower < few.empirical_lower


@pytest.mark.parametrize("flip", ["symmetric", "asymmetric"])
def test_dplcf_user_level_reaches_the_ceiling_far_below_n_eps(flip):
    r = audit("dplcf-user", epsilon=1.0, params={"n_items": "300", "flip": flip},
              settings=SETTINGS)
    # N x eps; for p = 1 that is the presence side only (all zeros is told apart surely)
    assert r.level == "user" and r.true_epsilon == pytest.approx(300.0)
    assert r.directions["all zeros"]["true_epsilon"] == (300.0 if flip == "symmetric"
                                                         else "inf")
    assert r.empirical_lower == pytest.approx(audit_ceiling(40_000, 0.01))
    assert r.empirical_lower == pytest.approx(r.ceiling) and r.ceiling < math.log(40_000)


@pytest.mark.slow  # three systems' audits
def test_systems_audit_their_local_mechanism():
    sp_ = audit("dplcf-sp", epsilon=1.0, settings=SETTINGS)
    assert sp_.name == "dplcf-sp" and sp_.claimed_epsilon == 1.0 and sp_.true_epsilon == 1.0
    rr = audit("laplace-rr-svd", params={"eps1": "1", "eps2": "1"}, settings=SETTINGS)
    assert rr.name == "laplace-rr" and math.isinf(rr.true_epsilon) and rr.claimed_epsilon == 2
    pw = audit("ldp-svd", epsilon=2.0, params={"mechanism": "piecewise"}, settings=SETTINGS)
    assert pw.name == "piecewise" and pw.empirical_lower <= 2.0
    user = audit("dplcf-oue", epsilon=1.0, level="user", params={"n_items": "50"},
                 settings=SETTINGS)
    assert user.name == "dplcf-user" and user.params["n_items"] == 50
    fmf = audit("fmf-ldp", params={"n_users": "50"}, settings=SETTINGS)
    assert fmf.name == "shuffle-binary" and fmf.params["eps0"] == 2.5


def test_systems_refuse_what_cannot_be_audited():
    with pytest.raises(DprecError, match="cannot be audited"):
        audit("popularity", settings=SETTINGS)
    with pytest.raises(DprecError, match="mechanism=binary"):
        audit("fmf-ldp", params={"mechanism": "piecewise"}, settings=SETTINGS)
    with pytest.raises(DprecError, match="per report slot"):
        audit("fmf-ldp", level="user", settings=SETTINGS)
    with pytest.raises(DprecError, match="no option"):
        audit("dplcf-sp", params={"bogus": "1"}, settings=SETTINGS)
    with pytest.raises(DprecError, match="n_users"):
        audit("shuffle-binary", params={"n_users": "1"}, settings=SETTINGS)
