"""DP-PrivRec one-run canary audit (Steinke et al. 2023) on a tiny synthetic data set."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from dprec.audit.one_run import audit_one_run, canary_directions
from dprec.data.features import side_features
from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.systems.audits import CanaryRun
from dprec.systems.privrec.canaries import PrivRecCanaries
from dprec.systems.registry import make_config

TINY = {"rounds": 12, "clients_per_round": 40, "local_epochs": 1, "embedding_dim": 8,
        "hidden_width": 16, "hidden_layers": 2}


def audit_privrec_one_run(cfg, train, features, canaries=1000, alpha=0.05,
                          guesses=(20, 50, 100, 200, 500), support=64):
    run = CanaryRun(PrivRecCanaries(cfg, train, features), canaries, guesses, support)
    return audit_one_run(run, alpha=alpha)


@functools.cache
def _data():
    ds = synthetic(120, 50, 2_400, rng=5)
    return ds, side_features(ds)


def test_canary_directions_are_unit_and_sparse():
    u = canary_directions(500, 30, 16, np.random.default_rng(0))
    norms = np.sqrt(np.asarray(u.multiply(u).sum(axis=0))).ravel()
    np.testing.assert_allclose(norms, 1.0)
    assert np.all(np.diff(u.indptr) == 16)
    with pytest.raises(DprecError, match="support"):
        canary_directions(10, 2, 11, np.random.default_rng(0))


@pytest.mark.slow
def test_little_noise_lets_the_audit_see_the_canaries_and_stay_below_the_accountant():
    ds, f = _data()
    cfg = make_config("dp-privrec", {**TINY, "noise_multiplier": 0.05})
    r = audit_privrec_one_run(cfg, ds.matrix, f, canaries=200, alpha=0.05, guesses=(20, 50))
    # ~20% of the canaries are never sampled in 12 rounds at q = 1/8: AUC <= ~0.9
    assert r.extra["auc_llr"] > 0.75 and r.extra["auc_llr"] > r.extra["auc_final_change"] - 0.05
    assert 0.5 < r.empirical_lower <= r.true_epsilon
    assert r.to_json()["level"] == "user" and r.trials == 200 and r.confidence == 0.95
    assert r.claimed_epsilon > r.true_epsilon  # the paper's method over-counts by M


@pytest.mark.slow
def test_the_papers_noise_gives_a_bound_below_the_accountant():
    ds, f = _data()
    cfg = make_config("dp-privrec", {**TINY, "noise_multiplier": 1.0})
    r = audit_privrec_one_run(cfg, ds.matrix, f, canaries=200, alpha=0.05, guesses=(20, 50))
    assert r.empirical_lower <= r.true_epsilon
    assert r.extra["rounds_run"] == 12 and r.extra["sampling_rate"] == 40 / 320


def test_one_run_refuses_a_non_private_config_and_bad_counts():
    ds, f = _data()
    with pytest.raises(DprecError, match="dp-privrec"):
        audit_privrec_one_run(make_config("privrec", TINY), ds.matrix, f)
    cfg = make_config("dp-privrec", TINY)
    with pytest.raises(DprecError, match="canaries"):
        audit_privrec_one_run(cfg, ds.matrix, f, canaries=1)
    with pytest.raises(DprecError, match="guesses"):
        audit_privrec_one_run(cfg, ds.matrix, f, canaries=10, guesses=(50,))
