from fractions import Fraction as F

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.systems.base import NotFittedError
from dprec.systems.rating_baselines import BiasBaseline, BiasConfig, GlobalMean

RNG = np.random.default_rng(0)


def _tiny() -> sp.csr_matrix:
    """3 users x 4 items; user 2 and item 3 have no ratings.

    u0: i0 = 5, i1 = 3;  u1: i0 = 4, i2 = 1.
    """
    return sp.csr_matrix((np.array([5, 3, 4, 1], np.float32), ([0, 0, 1, 1], [0, 1, 0, 2])),
                         shape=(3, 4))


def test_bias_known_answer_damping_one():
    # mu = 13/4. Items (damping 1): b_i0 = (7/4 + 3/4) / 3 = 5/6, b_i1 = (-1/4) / 2 = -1/8,
    # b_i2 = (-9/4) / 2 = -9/8, b_i3 = 0 (no ratings).
    # Users on residuals r - mu - b_i:
    # b_u0 = ((7/4 - 5/6) + (-1/4 + 1/8)) / 3 = (11/12 - 1/8) / 3 = 19/72
    # b_u1 = ((3/4 - 5/6) + (-9/4 + 9/8)) / 3 = (-1/12 - 9/8) / 3 = -29/72, b_u2 = 0.
    m = BiasBaseline(BiasConfig(damping=1.0)).fit(_tiny(), RNG)
    mu = F(13, 4)
    b_i = [F(5, 6), F(-1, 8), F(-9, 8), F(0)]
    b_u = [F(19, 72), F(-29, 72), F(0)]
    assert m.mu_ == pytest.approx(float(mu), abs=1e-12)
    assert np.allclose(m.item_bias_, [float(x) for x in b_i], atol=1e-12, rtol=0)
    assert np.allclose(m.user_bias_, [float(x) for x in b_u], atol=1e-12, rtol=0)
    users = np.array([0, 1, 2, 0, -1, 7, -1])
    items = np.array([2, 1, 0, 3, 1, 99, -5])
    expected = [mu + b_u[0] + b_i[2], mu + b_u[1] + b_i[1], mu + b_i[0], mu + b_u[0],
                mu + b_i[1], mu, mu]
    assert np.allclose(m.predict(users, items), [float(x) for x in expected],
                       atol=1e-12, rtol=0)


def test_bias_damping_zero_is_plain_mean_residuals():
    # mu = 13/4; b_i0 = 5/4, b_i1 = -1/4, b_i2 = -9/4; u0 residuals 1/2, 0 -> b_u0 = 1/4;
    # u1 residuals -1/2, 0 -> b_u1 = -1/4.
    m = BiasBaseline(BiasConfig(damping=0.0)).fit(_tiny(), RNG)
    assert np.allclose(m.item_bias_, [1.25, -0.25, -2.25, 0.0], atol=1e-12, rtol=0)
    assert np.allclose(m.user_bias_, [0.25, -0.25, 0.0], atol=1e-12, rtol=0)
    assert np.all(np.isfinite(m.predict(np.array([2]), np.array([3]))))


def test_global_mean_predicts_the_mean_everywhere():
    m = GlobalMean().fit(_tiny(), RNG)
    out = m.predict(np.array([0, 2, -1]), np.array([3, 0, 50]))
    assert out.shape == (3,) and np.allclose(out, 3.25)
    assert m.predict(np.array([], np.int64), np.array([], np.int64)).shape == (0,)


@pytest.mark.parametrize("cls", [GlobalMean, BiasBaseline])
def test_predict_validates_its_inputs(cls):
    with pytest.raises(NotFittedError, match="call fit before predict"):
        cls().predict(np.array([0]), np.array([0]))
    m = cls().fit(_tiny(), RNG)
    with pytest.raises(DprecError, match="1-d arrays of equal length"):
        m.predict(np.array([0, 1]), np.array([0]))
    with pytest.raises(DprecError, match="1-d arrays of equal length"):
        m.predict(np.array([[0]]), np.array([[0]]))
    with pytest.raises(DprecError, match="users must hold integer indices"):
        m.predict(np.array([0.0]), np.array([0]))
    with pytest.raises(DprecError, match="items must hold integer indices"):
        m.predict(np.array([0]), np.array([0.5]))


@pytest.mark.parametrize("cls", [GlobalMean, BiasBaseline])
def test_fit_validates_the_training_matrix(cls):
    with pytest.raises(DprecError, match="at least one rating"):
        cls().fit(sp.csr_matrix((2, 2), dtype=np.float32), RNG)
    with pytest.raises(DprecError, match="scipy.sparse"):
        cls().fit(np.ones((2, 2)), RNG)
    bad = sp.csr_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(DprecError, match="NaN or infinite"):
        cls().fit(bad, RNG)


@pytest.mark.parametrize("d", [-1.0, float("nan"), float("inf"), True, "5"])
def test_damping_is_validated(d):
    with pytest.raises(DprecError, match="damping must be a finite number >= 0"):
        BiasConfig(damping=d)  # type: ignore[arg-type]


def test_names_tasks_and_parameters():
    assert (BiasBaseline.name, BiasBaseline.task) == ("bias", "rating")
    assert (GlobalMean.name, GlobalMean.task) == ("global-mean", "rating")
    assert BiasBaseline().parameters() == {"damping": 5.0}
    assert BiasBaseline(BiasConfig(2.0)).parameters() == {"damping": 2.0}
    assert GlobalMean().parameters() == {}


def _synthetic(seed: int = 0, n_users: int = 300, n_items: int = 150,
               n: int = 9000) -> Dataset:
    """Ratings 3.5 + b_u + b_i + noise, rounded and clipped to 1..5."""
    rng = np.random.default_rng(seed)
    b_u = rng.normal(0, 0.6, n_users)
    b_i = rng.normal(0, 0.6, n_items)
    u = rng.integers(0, n_users, n)
    i = rng.integers(0, n_items, n)
    r = np.clip(np.round(3.5 + b_u[u] + b_i[i] + rng.normal(0, 0.5, n)), 1, 5)
    return Dataset.from_triples("synth-bias", u, i, r.astype(np.float32))


def test_bias_beats_global_mean_under_kfold():
    ds = _synthetic()
    exp = Experiment(ds, [0, 1], split=KFoldSplit(5), evaluator=RatingEvaluator())
    bias = exp.run(BiasBaseline)
    mean = exp.run(GlobalMean)
    assert bias.protocol["split"]["kind"] == "k-fold" and bias.protocol["split"]["k"] == 5
    b, g = bias.metrics["rating"], mean.metrics["rating"]
    assert b["RMSE"]["mean"] < 0.8 * g["RMSE"]["mean"], (b, g)
    assert b["MAE"]["mean"] < 0.8 * g["MAE"]["mean"], (b, g)
    for sb, sg in zip(bias.per_seed, mean.per_seed, strict=True):
        assert sb["rating"]["RMSE"] < sg["rating"]["RMSE"]
