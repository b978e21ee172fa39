import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.evaluation.tuning import grid_points
from dprec.models.funk_svd import FunkSVD, FunkSVDConfig
from dprec.models.knn_rating import ItemKNN, KNNRatingConfig
from dprec.systems.base import NotFittedError, RatingPredictor
from dprec.systems.rating_baselines import BiasBaseline, GlobalMean
from dprec.systems.rating_models import FunkSVDPredictor, ItemKNNPredictor
from dprec.systems.registry import SYSTEMS, make_config, make_system

NAMES = ("nondp-svd", "pcc-knn", "cos-knn")


def _ratings(seed: int = 0, n_users: int = 200, n_items: int = 120, n: int = 8_000,
             rank: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """round(3.5 + b_u + b_i + p_u . q_i + noise) in 1..5 on distinct random pairs."""
    rng = np.random.default_rng(seed)
    pairs = rng.choice(n_users * n_items, n, replace=False)
    u, i = pairs // n_items, pairs % n_items
    P, Q = rng.normal(0, 0.6, (n_users, rank)), rng.normal(0, 0.6, (n_items, rank))
    bu, bi = rng.normal(0, 0.4, n_users), rng.normal(0, 0.4, n_items)
    r = np.clip(np.rint(3.5 + bu[u] + bi[i] + np.sum(P[u] * Q[i], 1)
                        + rng.normal(0, 0.3, n)), 1, 5)
    return u, i, r.astype(np.float32), (n_users, n_items)


def test_registered_as_non_private_rating_systems():
    for name in NAMES:
        s = SYSTEMS[name]
        assert (s.task, s.private) == ("rating", False)
        model = make_system(name)
        assert isinstance(model, RatingPredictor) and model.name == name
    assert make_system("nondp-svd").config == FunkSVDConfig()
    assert make_system("pcc-knn").config == KNNRatingConfig(similarity="pearson")
    assert make_system("cos-knn").config == KNNRatingConfig(similarity="cosine")


def test_similarity_is_fixed_by_the_name_and_the_rest_is_settable():
    with pytest.raises(DprecError, match="similarity fixed by the system name"):
        make_system("pcc-knn", {"similarity": "cosine"})
    assert make_system("cos-knn", {"k": "20"}).config.k == 20
    cfg = make_system("nondp-svd", {"factors": "7", "biases": "false", "lr": "0.01"}).config
    assert (cfg.factors, cfg.biases, cfg.lr) == (7, False, 0.01)
    with pytest.raises(DprecError, match="lr must be finite and > 0"):
        make_system("nondp-svd", {"lr": "-1"})
    with pytest.raises(DprecError, match="nondp-svd has no option k"):
        make_system("nondp-svd", {"k": "3"})


@pytest.mark.parametrize("name", NAMES)
def test_default_grid_points_are_valid_configs(name):
    grid = SYSTEMS[name].default_grid
    assert grid
    points = grid_points(grid)
    configs = {make_config(name, p) for p in points}
    assert len(configs) == len(points)
    assert SYSTEMS[name].default_config() in configs  # the defaults are inside the grid


def test_predict_before_fit_and_bad_pairs_are_refused():
    for name in NAMES:
        with pytest.raises(NotFittedError, match=f"{name}: call fit before predict"):
            make_system(name).predict(np.array([0]), np.array([0]))
    u, i, r, shape = _ratings(n=500)
    train = sp.csr_matrix((r, (u, i)), shape=shape)
    for name in NAMES:
        m = make_system(name, {"epochs": 1} if name == "nondp-svd" else {})
        m.fit(train, np.random.default_rng(0))
        with pytest.raises(DprecError, match=f"{name}.predict: users and items must be 1-d"):
            m.predict(np.array([0, 1]), np.array([0]))
        with pytest.raises(DprecError, match=f"{name}.predict: items must hold integer"):
            m.predict(np.array([0]), np.array([1.5]))


def test_a_failed_fit_leaves_the_system_unfitted():
    u, i, r, shape = _ratings(n=500)
    good = sp.csr_matrix((r, (u, i)), shape=shape)
    for name in NAMES:
        m = make_system(name, {"epochs": 1} if name == "nondp-svd" else {})
        m.fit(good, np.random.default_rng(0))
        with pytest.raises(DprecError, match="at least one rating"):
            m.fit(sp.csr_matrix(shape, dtype=np.float32), np.random.default_rng(0))
        with pytest.raises(NotFittedError):
            m.predict(np.array([0]), np.array([0]))


def test_systems_predict_what_their_models_predict():
    u, i, r, shape = _ratings()
    train = sp.csr_matrix((r, (u, i)), shape=shape)
    users, items = np.array([0, 5, -1, 199, 3]), np.array([1, 119, 4, 7, 500])
    cfg = FunkSVDConfig(factors=10, epochs=5)
    svd = FunkSVDPredictor("nondp-svd", cfg).fit(train, np.random.default_rng(3))
    np.testing.assert_array_equal(
        svd.predict(users, items),
        FunkSVD(cfg).fit(train, np.random.default_rng(3)).predict(users, items))
    kcfg = KNNRatingConfig("cosine", k=15)
    knn = ItemKNNPredictor("cos-knn", kcfg).fit(train, np.random.default_rng(0))
    np.testing.assert_array_equal(knn.predict(users, items),
                                  ItemKNN(kcfg).fit(train).predict(users, items))
    assert svd.parameters() == {"factors": 10, "lr": 0.005, "reg": 0.02, "epochs": 5,
                                "biases": True, "init_mean": 0.0, "init_std": 0.1}
    assert knn.parameters()["similarity"] == "cosine" and knn.privacy_report() is None


@pytest.fixture(scope="module")
def kfold_results():
    u, i, r, _ = _ratings()
    ds = Dataset.from_triples("synth-low-rank", u, i, r)
    exp = Experiment(ds, [0], split=KFoldSplit(5), evaluator=RatingEvaluator())
    out = {name: exp.run(lambda name=name: make_system(name)) for name in NAMES}
    out["bias"] = exp.run(BiasBaseline)
    out["global-mean"] = exp.run(GlobalMean)
    return {k: v.metrics["rating"]["RMSE"]["mean"] for k, v in out.items()}


def test_every_model_beats_the_global_mean_under_kfold(kfold_results):
    g = kfold_results["global-mean"]
    for name in NAMES:
        assert kfold_results[name] < 0.9 * g, kfold_results


def test_svd_beats_the_bias_baseline_on_low_rank_data(kfold_results):
    assert kfold_results["nondp-svd"] < kfold_results["bias"] - 0.01, kfold_results


def test_learning_curves_are_recorded_per_epoch():
    u, i, r, _ = _ratings(n=3_000)
    ds = Dataset.from_triples("synth-low-rank", u, i, r)
    exp = Experiment(ds, [0], split=KFoldSplit(2), evaluator=RatingEvaluator())
    run = exp.run(lambda: make_system("nondp-svd", {"epochs": 6, "factors": 5}), curve_every=2)
    assert run.curves is not None and len(run.curves) == 2
    for curve in run.curves:
        assert [c["round"] for c in curve] == [2, 4, 6]
    last = run.curves[0][-1]["metrics"]["rating"]["RMSE"]
    assert last == pytest.approx(run.per_seed[0]["rating"]["RMSE"], rel=1e-12)


def test_module_imports_before_the_registry():
    """Regression: ``import dprec.systems.rating_models`` as the first dprec import used to
    fail (the registry imports this module for SPECS while being imported itself)."""
    code = ("import dprec.systems.rating_models as m; "
            "print(sorted(s.name for s in m.SPECS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['cos-knn', 'nondp-svd', 'pcc-knn']"


def test_specs_attribute_is_stable_and_others_are_errors():
    import dprec.systems.rating_models as m

    assert m.SPECS is m.SPECS
    assert [s.name for s in m.SPECS] == list(NAMES)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = m.nope


def test_config_replace_is_validated():
    with pytest.raises(DprecError, match="k must be an integer >= 1"):
        replace(make_system("pcc-knn").config, k=0)


def test_a_failed_fit_leaves_an_unfitted_model_not_a_half_fitted_one():
    """ModelPredictor: FunkSVD sets its factors before the first epoch; when that epoch
    diverges, the predictor keeps a fresh model, so predict refuses instead of answering."""
    u, i, r, shape = _ratings(n=2_000)
    train = sp.csr_matrix((r, (u, i)), shape=shape)
    svd = FunkSVDPredictor(config=FunkSVDConfig(lr=1e6, epochs=2))
    assert svd.name == "nondp-svd" and svd.config.lr == 1e6
    with pytest.raises(DprecError, match="diverged"):
        svd.fit(train, np.random.default_rng(0))
    assert not svd.model.is_fitted
    with pytest.raises(NotFittedError):
        svd.predict(u[:3], i[:3])
