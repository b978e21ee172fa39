"""pnbm, dpsgd-pnbm, dpps-pnbm: registry entries, the privacy reports (independent
recomputation of the true epsilons, the JSON shape, DPPS's unknown delta) and a k-fold run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.systems.base import NotFittedError, RatingPredictor
from dprec.systems.pnbm import DPPSPNBMSystem, DPSGDPNBMSystem, PNBMSystem
from dprec.systems.registry import SYSTEMS, make_config, make_system

NAMES = ("pnbm", "dpsgd-pnbm", "dpps-pnbm")


def ratings(seed: int = 0, n_users: int = 60, n_items: int = 25, density: float = 0.5,
            ) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    bu, bi = rng.normal(0, 0.7, n_users), rng.normal(0, 0.7, n_items)
    vals = np.clip(np.rint(3.5 + bu[:, None] + bi[None, :]
                           + rng.normal(0, 0.5, (n_users, n_items))), 1, 5)
    return sp.csr_matrix(np.where(mask, vals, 0.0))


def test_registered_with_paper_grids():
    for name in NAMES:
        s = SYSTEMS[name]
        assert s.task == "rating" and s.private == (name != "pnbm")
        assert set(s.default_grid) <= set(s.settable())
        for key, values in s.default_grid.items():
            for v in values:
                make_config(name, {key: v})
    assert SYSTEMS["dpsgd-pnbm"].default_grid["lr"] == (0.1, 0.4)
    assert SYSTEMS["dpps-pnbm"].default_grid["temperature"] == (0.001, 0.006, 0.09)
    assert make_system("dpsgd-pnbm", {"epsilon": "2.5"}).config.epsilon == 2.5
    assert make_system("dpps-pnbm", {"epsilon": 20}).config.epsilon == 20.0


@pytest.mark.parametrize("name", NAMES)
def test_predict_before_fit_fails(name):
    with pytest.raises(NotFittedError, match=name):
        make_system(name).predict(np.array([0]), np.array([0]))


def test_pnbm_has_no_privacy_report():
    s = PNBMSystem().fit(ratings(), np.random.default_rng(0))
    assert s.privacy_report() is None


def reach(R: sp.csr_matrix, nbr: np.ndarray, users: np.ndarray) -> np.ndarray:
    """A_u = sum over u's items k of |nbr(k) & I_u|, by sets."""
    out = []
    for u in users:
        items = set(R[u].indices.tolist())
        out.append(sum(len(items & set(nbr[k].tolist())) for k in items))
    return np.array(out)


def test_dpsgd_report_recomputed_independently():
    R = ratings(1)
    cfg = make_config("dpsgd-pnbm", {"epsilon": 0.5, "iterations": 4, "batch_fraction": 0.5,
                                     "min_ratings": 10, "neighbours": 8})
    s = DPSGDPNBMSystem(config=cfg).fit(R, np.random.default_rng(0))
    n_u = np.diff(R.indptr)
    users = np.flatnonzero(n_u >= 10)
    A = reach(R, s.model.neighbours, users)
    np.testing.assert_array_equal(s.model.touched_, A)
    rep = s.privacy_report().to_json()
    json.dumps(rep)
    # per iteration, user u: Lap(b_t) on entries moved by A_u DeltaF_t in L1 -> A_u eps/(gamma K)
    true_eps = A.max() * 0.5 / 0.5
    assert rep["true"]["epsilon"] == pytest.approx(true_eps, rel=1e-12)
    assert rep["true"]["level"] == "event" and rep["true"]["model"] == "central"
    assert set(rep["levels"]) == {"event", "user", "user_basic"}
    for level in ("event", "user", "user_basic"):
        assert rep["levels"][level]["epsilon"] == pytest.approx(true_eps, rel=1e-12)
    assert rep["claimed"]["epsilon"] == 0.5 and rep["claimed"]["level"] == "event"
    assert rep["claimed_user"]["epsilon"] == pytest.approx(0.5 * n_u[users].max())
    comp = rep["paper_composition"]
    assert comp["run_paper"] == 0.5
    assert comp["run_sound_amplification"] == pytest.approx(
        4 * math.log1p(0.5 * math.expm1(0.5 / (0.5 * 4))))
    assert comp["run_sound_amplification"] > comp["run_paper"]
    assert "curator" in rep["threat_model"]
    assert s.events.counts(s.model.mechanism.dp_event(int(A.max())))[users[A.argmax()]] == 4


def test_dpps_report_states_the_unknown_delta():
    cfg = make_config("dpps-pnbm", {"epsilon": 20.0, "temperature": 0.09, "iterations": 2,
                                    "tau": 15})
    s = DPPSPNBMSystem(config=cfg).fit(ratings(2), np.random.default_rng(0))
    rep = s.privacy_report().to_json()
    text = json.dumps(rep)
    assert '"delta": null' in text
    assert rep["true"]["delta"] is None and rep["claimed"]["delta"] is None
    assert any("delta -> 0" in n for n in rep["true"]["notes"])
    assert "not measured" in rep["true"]["delta_reason"]
    assert rep["claimed"]["epsilon"] == 20.0 and rep["claimed"]["level"] == "user"
    assert rep["true"]["epsilon"] == pytest.approx(20.0 / (4 * 0.09))  # 2 beta B, replace-one
    assert rep["epsilon_add_remove_one"] == pytest.approx(20.0 / (8 * 0.09))
    assert rep["target_scale"] == pytest.approx(20.0 / (8 * 16 * 15 * 0.09))
    assert rep["adjacency"] == "replace_one"
    assert set(rep["levels"]) == {"event", "user", "user_basic"}
    assert all(rep["levels"][k]["delta"] is None for k in rep["levels"])
    assert rep["per_rating_reading"]["x"] == pytest.approx(20.0 / 15)
    assert rep["per_rating_reading"]["holds_per_rating"] is False
    assert rep["loglik_bound"] == 16 * 15
    assert s.privacy_report().true.describe().endswith("central model)")
    assert "δ unknown" in s.privacy_report().true.describe()
    assert s.diagnostics()["max_user_ratings_trained"] <= 15


def test_kfold_run_keeps_the_json_contract():
    R = ratings(3, 80, 70, 0.7)
    u, i = R.nonzero()
    ds = Dataset.from_triples("tiny-ratings", u, i, np.asarray(R[u, i]).ravel())
    exp = Experiment(ds, [0], KFoldSplit(2), RatingEvaluator())
    for name in NAMES:
        res = exp.run(lambda name=name: make_system(name, {"iterations": 3}))
        doc = json.loads(json.dumps(res.to_json()))
        rmse = doc["metrics"]["rating"]["RMSE"]["mean"]
        assert 0.3 < rmse < 1.6
        assert (doc["privacy"] is None) == (name == "pnbm")
        assert isinstance(make_system(name), RatingPredictor)
