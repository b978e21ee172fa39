"""dp-fedavg: user-level DP-FedAvg on FCF over a secure sum with Skellam shares (issue 24 §2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.privacy.sampled_skellam import (
    sampled_epsilon,
)
from dprec.protocol.secure_sum.client import quantise
from dprec.systems.dp_fedavg.accounting import (
    calibrate_mu,
    choose_gamma,
    sampled_event,
    update_sensitivity,
)
from dprec.systems.dp_fedavg.client import clipped_weights
from dprec.systems.fmf.client import gradient_sum, user_vectors
from dprec.systems.registry import make_system


def _train() -> sp.csr_matrix:
    return synthetic(120, 50, 2_600, rng=4).binary()


# -- accounting ----------------------------------------------------------------------------

def test_calibration_meets_the_target_tightly():
    mu = calibrate_mu(1.0, 1e-6, 10, 100, 1.0, 100.0, 0.1)
    assert math.isclose(mu, 48511.529268874, rel_tol=1e-3)
    at = sampled_epsilon(sampled_event(mu, 100, 1.0, 100.0, 0.1), 10, 1e-6)
    below = sampled_epsilon(sampled_event(mu * 0.99, 100, 1.0, 100.0, 0.1), 10, 1e-6)
    assert at <= 1.0 < below


# -- the client's contribution ---------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), clip=st.floats(1e-3, 1e3),
       alpha=st.floats(0.0, 5.0), factors=st.integers(1, 6))
def test_clipped_update_bound_holds(seed, clip, alpha, factors):
    """||outer(w_u, x_u)||_2 <= C for every client, equal to FCF's gradient when it is
    within C, and the quantised vector within Delta_2 = gamma C + sqrt(d)."""
    rng = np.random.default_rng(seed)
    n_items = 17
    hist = sp.random(5, n_items, density=0.3, random_state=seed, format="csr")
    hist.data = np.ceil(hist.data * 5)
    V = rng.standard_normal((n_items, factors)) * rng.uniform(0.01, 3)
    X = user_vectors(V, hist, alpha, 0.1)
    W = clipped_weights(X, V, hist, alpha, clip)
    gamma = choose_gamma(n_items * factors, clip)
    _, l2 = update_sensitivity(n_items * factors, clip, gamma)
    for u in range(5):
        g = np.outer(W[u], X[u])
        exact = gradient_sum(X[u:u + 1], V, hist[u], alpha)
        norm = np.linalg.norm(exact)
        assert np.linalg.norm(g) <= clip * (1 + 1e-9)
        if norm <= clip:
            np.testing.assert_allclose(g, exact, rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_allclose(g, exact * clip / norm, rtol=1e-9, atol=1e-12)
        v = quantise(g.ravel(), gamma, gamma * clip, rng)
        assert np.linalg.norm(v) <= l2


# -- the system ------------------------------------------------------------------------------

def test_huge_epsilon_matches_fcf():
    """No clipping, fine quantisation and next to no noise: FCF's model, round for round."""
    train = _train()
    fcf = make_system("fcf", {"factors": 3, "regularization": 0.1, "lr": 0.1, "epochs": 3,
                              "server_steps": 2})
    fed = make_system("dp-fedavg", {"factors": 3, "reg": 0.1, "lr": 0.1, "rounds": 3,
                                    "server_steps": 2, "clip": 1e4, "gamma": 1e6,
                                    "epsilon": 1e15, "validity": "none"})
    fcf.fit(train, np.random.default_rng(5))
    fed.fit(train, np.random.default_rng(5))
    np.testing.assert_allclose(fed.V, fcf.V, rtol=1e-3, atol=5e-5)


def test_a_range_the_proof_cannot_check_is_refused_with_what_to_do():
    """clip 1e4 at gamma 1e6: coordinates of 1e10 wrap Field64 (validity=prio3, the
    default, above; validity=none runs)."""
    fed = make_system("dp-fedavg", {"rounds": 1, "clip": 1e4, "gamma": 1e6})
    with pytest.raises(DprecError, match="cannot check this round in Field64.*validity=none"):
        fed.fit(_train(), np.random.default_rng(5))


def test_result_does_not_depend_on_the_block_size():
    train = _train()
    params = {"rounds": 2, "rate": 0.5, "epsilon": 4.0}
    a = make_system("dp-fedavg", {**params, "batch_size": 7}).fit(train,
                                                                  np.random.default_rng(2))
    b = make_system("dp-fedavg", {**params, "batch_size": 256}).fit(train,
                                                                    np.random.default_rng(2))
    np.testing.assert_array_equal(a.V, b.V)


def test_report_accounts_the_sampled_rounds_to_the_target():
    train = _train()
    model = make_system("dp-fedavg", {"rounds": 4, "rate": 0.3, "epsilon": 2.0})
    model.fit(train, np.random.default_rng(0))
    report = model.privacy_report()
    user = report.extra["levels"]["user"]
    assert 1.99 <= user["epsilon"] <= 2.0
    assert report.extra["model"] == "secure-sum"
    assert report.extra["adjacency"] == "zero_out"
    assert report.extra["threat_model_assumptions"]["min_honest"] == train.shape[0]
    assert report.extra["secure_sum"]["q"] == 2 ** report.extra["secure_sum"]["bits"]
    assert report.extra["sampling"]["rate"] == 0.3
    gap = report.extra["sampling"]["analysis_gap"]  # issue 33 §5: the bound's own factor
    assert math.isclose(gap["bound_epsilon"], user["epsilon"], rel_tol=1e-6)
    assert 1.0 < gap["factor"] < 3.0 and f"{gap['factor']:.2f}x" in gap["note"]
    sampled = model.diagnostics()["simulation_only"]["sampled_per_round"]
    assert len(sampled) == 4 and all(0 < s < train.shape[0] for s in sampled)


def test_trusted_aggregation_reports_a_central_guarantee():
    model = make_system("dp-fedavg", {"rounds": 2, "aggregation": "trusted"})
    model.fit(_train(), np.random.default_rng(0))
    report = model.privacy_report()
    assert report.extra["model"] == "central" and "secure_sum" not in report.extra
    assert report.extra["adjacency"] == "add_remove_one"
    assert np.all(np.isfinite(model.V))


def test_bad_settings_are_refused():
    with pytest.raises(DprecError, match="rate"):
        make_system("dp-fedavg", {"rate": 0.0})
    with pytest.raises(DprecError, match="min_honest"):
        make_system("dp-fedavg", {"aggregation": "trusted", "min_honest": 3})
    with pytest.raises(DprecError, match="min_honest"):
        make_system("dp-fedavg", {"min_honest": 10_000}).fit(_train(),
                                                            np.random.default_rng(0))
