"""dpsgd-mf and dpps-mf as registered rating systems: registry, runner and privacy reports."""

import json
from dataclasses import fields

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.systems.base import NotFittedError, RatingPredictor
from dprec.systems.dp_mf import THREAT_MODEL
from dprec.systems.registry import SYSTEMS, make_config, make_system, spec

NAMES = ("dpsgd-mf", "dpps-mf")


@pytest.fixture(scope="module")
def ratings():
    rng = np.random.default_rng(0)
    n_users, n_items, n = 120, 50, 3_000
    u, i = rng.integers(0, n_users, n), rng.integers(0, n_items, n)
    r = np.clip(np.rint(3.5 + rng.normal(0, 0.6, n_users)[u] + rng.normal(0, 0.6, n_items)[i]
                        + rng.normal(0, 0.5, n)), 1, 5)
    m = sp.coo_matrix((r, (u, i)), shape=(n_users, n_items)).tocsr()
    m.sum_duplicates()
    m.data = np.clip(m.data, 1, 5)
    return m


def _fit(name, train, **params):
    model = make_system(name, {k: str(v) for k, v in params.items()})
    return model.fit(train, np.random.default_rng(0))


@pytest.mark.parametrize("name", NAMES)
def test_registered_private_rating_systems(name):
    s = spec(name)
    assert s.task == "rating" and s.private and name in SYSTEMS
    model = s.build()
    assert isinstance(model, RatingPredictor) and model.name == name
    assert set(s.default_grid) <= {f.name for f in fields(s.config)}
    assert all(len(v) >= 2 for v in s.default_grid.values())
    assert set(s.paper) <= set(s.settable())


def test_paper_preset_uses_the_papers_learning_rate():
    assert spec("dpsgd-mf").paper_config().lr == 8e-4  # seed 004 §5.1: eta in {6e-4, 8e-4}


@pytest.mark.parametrize("name", NAMES)
def test_epsilon_and_params_reach_the_config(name):
    cfg = make_config(name, {"epsilon": "0.25", "factors": "15"})
    assert cfg.epsilon == 0.25 and cfg.factors == 15
    with pytest.raises(DprecError, match="epsilon must be finite and > 0"):
        make_config(name, {"epsilon": "-1"})
    with pytest.raises(DprecError, match="has no option"):
        make_config(name, {"neighbours": "5"})


@pytest.mark.parametrize("name", NAMES)
def test_predict_before_fit_is_refused(name):
    with pytest.raises(NotFittedError, match=name):
        make_system(name).predict(np.array([0]), np.array([0]))


@pytest.mark.parametrize("name", NAMES)
def test_bad_pairs_name_the_system(name, ratings):
    model = _fit(name, ratings, epochs=1)
    with pytest.raises(DprecError, match=f"{name}.predict"):
        model.predict(np.array([0, 1]), np.array([0]))


def test_dpsgd_report_rating_and_user_level(ratings):
    eps, epochs = 1.0, 4
    model = _fit("dpsgd-mf", ratings, epsilon=eps, epochs=epochs)
    report = model.privacy_report()
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["threat_model"] == THREAT_MODEL and "raw ratings" in THREAT_MODEL
    assert doc["claimed"]["epsilon"] == eps and doc["claimed"]["level"] == "event"
    true = doc["true"]
    assert true["level"] == "event" and true["model"] == "central"
    assert true["epsilon"] == pytest.approx(eps, rel=1e-12)  # K reads of eps / K, basic
    assert any("basic composition" in n for n in true["notes"])
    levels = doc["levels"]
    assert set(levels) == {"event", "user", "user_basic"}
    assert all(g["model"] == "central" for g in levels.values())
    assert "user_level" not in doc  # the basic bound lives in levels.user_basic only
    assert levels["event"]["epsilon"] <= eps + 1e-9  # PLD is never looser than basic
    n_max = int(np.diff(ratings.indptr).max())
    assert doc["max_reads_per_user"] == n_max * epochs
    assert levels["user_basic"]["epsilon"] == pytest.approx(n_max * eps, rel=1e-9)
    assert eps < levels["user"]["epsilon"] <= n_max * eps + 1e-9
    mech = doc["mechanisms"][0]
    assert mech["scale"] == pytest.approx(epochs * 4.0 / eps)


def test_dpps_report_states_the_sampler_assumption(ratings):
    eps, rho, tau = 2.0, 1e-2, 200
    model = _fit("dpps-mf", ratings, epsilon=eps, temperature=rho, epochs=2)
    report = model.privacy_report()
    doc = json.loads(json.dumps(report.to_json()))
    true, claimed = doc["true"], doc["claimed"]
    assert true["level"] == claimed["level"] == "user"
    assert claimed["epsilon"] == eps
    assert true["epsilon"] == pytest.approx(eps / (2 * rho), rel=1e-12)
    assert true["delta"] is None and claimed["delta"] is None
    assert "delta -> 0" in true["delta_reason"] and "(1 + e^eps) delta" in true["delta_reason"]
    assert any("ASSUMPTION" in n and "exact posterior sample" in n for n in true["notes"])
    accounted = list(doc["levels"].values())
    assert all(g["delta"] is None and g["model"] == "central" for g in accounted)
    assert all(any("exact posterior sample" in n for n in g["notes"]) for g in accounted)
    assert json.loads(json.dumps(report.to_json())) == doc  # to_json is idempotent
    assert doc["levels"]["user"]["epsilon"] <= true["epsilon"] + 1e-9
    assert doc["levels"]["event"]["epsilon"] == doc["levels"]["user"]["epsilon"]
    reading = doc["per_rating_reading"]
    assert reading["claimed"] == f"{eps / tau:.4g} x {tau}"
    assert reading["true"] == f"{eps / (2 * rho) / tau:.4g} x {tau}"


def test_dpps_exact_calibration_reports_epsilon(ratings):
    model = _fit("dpps-mf", ratings, epsilon=0.5, calibration="exact", epochs=1)
    assert model.privacy_report().true.epsilon == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_runner_result_carries_rating_metrics_and_privacy(name, ratings):
    ds = Dataset(name="toy-ratings", matrix=ratings)
    exp = Experiment(ds, [0], KFoldSplit(3), RatingEvaluator())
    res = exp.run(lambda: make_system(name, {"epochs": "2"})).to_json()
    assert set(res["metrics"]["rating"]) == {"RMSE", "MAE"}
    assert len(res["per_seed"]) == 3
    assert res["privacy"]["true"]["model"] == "central"
    assert res["parameters"]["epsilon"] == 1.0
    json.dumps(res)
