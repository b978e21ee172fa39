"""dp-pop and dpals state their neighbouring relation: zero-out on the secure sum (every
device's noise share stays in the sum), add/remove one user for the trusted curator; the
epsilon is the one add/remove gave for the same mu."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.systems.dp_pop.system import adjacency_of as dp_pop_adjacency
from dprec.systems.dpals.accounting import adjacency_of as dpals_adjacency
from dprec.systems.dpals.accounting import calibrate
from dprec.systems.registry import make_system


def _train() -> sp.csr_matrix:
    return synthetic(120, 60, 2_500, rng=3).binary()


def test_secure_is_zero_out_and_trusted_is_add_remove():
    for adjacency_of in (dp_pop_adjacency, dpals_adjacency):
        assert adjacency_of("secure") is Adjacency.ZERO_OUT
        assert adjacency_of("trusted") is Adjacency.ADD_REMOVE_ONE


@pytest.mark.parametrize("aggregation", ["secure", "trusted"])
def test_dp_pop_reports_its_relation_with_the_add_remove_numbers(aggregation):
    model = make_system("dp-pop", {"epsilon": "1", "k": "10", "aggregation": aggregation})
    model.fit(_train(), np.random.default_rng(2))
    doc = model.privacy_report().to_json()
    want = Adjacency.ZERO_OUT if aggregation == "secure" else Adjacency.ADD_REMOVE_ONE
    assert Adjacency(doc["adjacency"]) is want
    user = doc["levels"]["user"]
    assert any(want.describe() in n for n in user["notes"])
    assert want.describe() in doc["contribution_bound"]
    # the same epsilon as add/remove for the same log (the same mu)
    before = account(model.events, 1e-6, PldAccountant(adjacency=Adjacency.ADD_REMOVE_ONE))
    assert user["epsilon"] == pytest.approx(before.user.epsilon, rel=1e-5)  # 6 digits kept
    assert 0.99 <= user["epsilon"] <= 1.0
    if aggregation == "secure":
        assert "zero-out adjacency" in doc["threat_model"]
        notes = " ".join(doc["threat_model_assumptions"]["notes"])
        assert "also one with no data" in notes and "drops out" in notes
        assumptions = doc["threat_model_assumptions"]
        assert assumptions["contributors"] == doc["secure_sum"]["contributors"] == 120
    else:
        assert "add/remove-one-user adjacency" in doc["threat_model"]


def test_dp_pop_secure_and_trusted_calibrate_the_same_mu():
    mus = [make_system("dp-pop", {"epsilon": "2", "k": "10", "aggregation": a}).fit(
        _train(), np.random.default_rng(0)).diagnostics()["mu"] for a in ("secure", "trusted")]
    assert mus[0] == mus[1]


@pytest.mark.parametrize("aggregation", ["secure", "trusted"])
def test_dpals_reports_its_relation_with_the_add_remove_numbers(aggregation):
    model = make_system("dpals", {"epsilon": "3", "aggregation": aggregation, "steps": "1",
                                  "factors": "2", "k": "3"})
    model.fit(_train(), np.random.default_rng(0))
    doc = model.privacy_report().to_json()
    want = dpals_adjacency(aggregation)
    assert Adjacency(doc["adjacency"]) is want
    before = account(model.events, 1e-6, RdpAccountant(Adjacency.ADD_REMOVE_ONE))
    assert doc["levels"]["user"]["epsilon"] == pytest.approx(before.user.epsilon, rel=1e-5)
    releases = model.releases(_train().shape[1])[1]
    z = model.diagnostics()["noise_multiplier"]
    assert z == calibrate(releases, 3.0, 1e-6, adjacency=Adjacency.ADD_REMOVE_ONE)
    if aggregation == "secure":
        assert "zero-out adjacency" in doc["threat_model"]
        assumptions = doc["threat_model_assumptions"]
        assert assumptions["contributors"] == 120
        assert any(n.startswith("zero-out adjacency") for n in assumptions["notes"])
    else:
        assert "add/remove-one-user adjacency" in doc["threat_model"]
