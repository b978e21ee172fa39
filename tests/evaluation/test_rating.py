import math

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.rating import RatingEvaluator, mae, rmse
from dprec.evaluation.split import RatingFold, leave_one_out
from dprec.systems.base import Ranker, RatingPredictor


class Fixed(RatingPredictor):
    """Returns a fixed prediction vector, whatever it is asked."""

    name = "fixed"

    def __init__(self, values) -> None:
        self.values = np.asarray(values, dtype=np.float64)

    def fit(self, train, rng, on_iteration=None):
        return self

    def predict(self, users, items):
        return self.values


class NotARatingSystem(Ranker):
    name = "ranker"

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        return np.zeros((history.shape[0], 3))


def _dataset() -> Dataset:
    return Dataset.from_triples("toy", np.array([0, 0, 1, 1, 2]), np.array([0, 1, 0, 2, 1]),
                                np.array([1.0, 5.0, 2.0, 4.0, 3.0]))


def _fold() -> RatingFold:
    train = sp.csr_matrix((np.array([1.0, 5.0], np.float32), ([0, 0], [0, 1])), shape=(3, 3))
    return RatingFold(index=0, train=train, test_users=np.array([1, 1, 2]),
                      test_items=np.array([0, 2, 1]),
                      test_ratings=np.array([2.0, 4.0, 3.0], np.float32))


def test_rmse_and_mae_known_answer():
    # errors -1, 0, -2: RMSE = sqrt(5/3), MAE = 1
    assert rmse(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0])) == pytest.approx(
        math.sqrt(5 / 3), rel=1e-12)
    assert mae(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0])) == pytest.approx(1.0)


@pytest.mark.parametrize("fn", [rmse, mae])
def test_metrics_refuse_bad_shapes_and_empty_input(fn):
    with pytest.raises(DprecError, match="equal length"):
        fn(np.ones(3), np.ones(2))
    with pytest.raises(DprecError, match="at least one rating"):
        fn(np.array([]), np.array([]))


def test_evaluate_known_answer():
    ev = RatingEvaluator()
    ds = _dataset()
    fold = _fold()
    prepared = ev.prepare(ds, fold, 0, "k-fold")
    assert prepared == (1.0, 5.0)
    # predictions 2.5, 3, 3 against 2, 4, 3: errors 0.5, -1, 0
    out = ev.evaluate(Fixed([2.5, 3.0, 3.0]), fold, prepared, np.random.default_rng(0))
    assert set(out) == {"rating"} and set(out["rating"]) == {"RMSE", "MAE"}
    assert out["rating"]["RMSE"] == pytest.approx(math.sqrt(1.25 / 3), rel=1e-12)
    assert out["rating"]["MAE"] == pytest.approx(1.5 / 3, rel=1e-12)


def test_predictions_are_clipped_to_the_range():
    ev = RatingEvaluator()
    fold = _fold()
    prepared = ev.prepare(_dataset(), fold, 0, "k-fold")
    rng = np.random.default_rng(0)
    # 100 -> 5 and -7 -> 1: errors 3, 1 (5 - 4), -2 (1 - 3)
    out = ev.evaluate(Fixed([100.0, 5.0, -7.0]), fold, prepared, rng)
    assert out["rating"]["RMSE"] == pytest.approx(math.sqrt(14 / 3), rel=1e-12)
    assert out["rating"]["MAE"] == pytest.approx(2.0, rel=1e-12)
    # an explicit range overrides the observed one: 100 -> 10
    ev10 = RatingEvaluator(rating_range=(0, 10))
    p10 = ev10.prepare(_dataset(), fold, 0, "k-fold")
    assert p10 == (0.0, 10.0)
    out = ev10.evaluate(Fixed([100.0, 4.0, 3.0]), fold, p10, rng)
    assert out["rating"]["MAE"] == pytest.approx(8.0 / 3, rel=1e-12)


def test_wrong_task_is_refused():
    ev = RatingEvaluator()
    with pytest.raises(DprecError, match="ranker is a ranking system; rating evaluation"):
        ev.evaluate(NotARatingSystem(), _fold(), (1.0, 5.0), np.random.default_rng(0))


def test_wrong_fold_is_refused():
    ev = RatingEvaluator()
    loo = leave_one_out(_dataset(), "random", np.random.default_rng(0))
    with pytest.raises(DprecError, match="needs a k-fold or user split .* got leave-one-out"):
        ev.prepare(_dataset(), loo, 0, "leave-one-out")
    with pytest.raises(DprecError, match="needs a k-fold or user split .* got LeaveOneOut"):
        ev.evaluate(Fixed([3.0]), loo, (1.0, 5.0), np.random.default_rng(0))


@pytest.mark.parametrize("values", [[3.0, 3.0], [3.0, 3.0, 3.0, 3.0], [[3.0, 3.0, 3.0]]])
def test_wrong_prediction_shape_is_refused(values):
    with pytest.raises(DprecError, match=r"fixed\.predict returned shape .* expected \(3,\)"):
        RatingEvaluator().evaluate(Fixed(values), _fold(), (1.0, 5.0),
                                   np.random.default_rng(0))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_predictions_are_refused(bad):
    with pytest.raises(DprecError, match=r"fixed\.predict returned 1 NaN or infinite"):
        RatingEvaluator().evaluate(Fixed([3.0, bad, 3.0]), _fold(), (1.0, 5.0),
                                   np.random.default_rng(0))


def test_single_valued_dataset_needs_an_explicit_range():
    ds = Dataset.from_triples("implicit", np.array([0, 1]), np.array([0, 1]))
    with pytest.raises(DprecError, match="single rating value 1.0"):
        RatingEvaluator().prepare(ds, _fold(), 0, "k-fold")
    assert RatingEvaluator((0.0, 1.0)).prepare(ds, _fold(), 0, "k-fold") == (0.0, 1.0)


@pytest.mark.parametrize("bad", [(5, 1), (3, 3), (1, float("inf")), (1,), "15", (1, "x")])
def test_rating_range_is_validated(bad):
    with pytest.raises(DprecError, match="rating_range must be"):
        RatingEvaluator(bad)


def test_describe():
    assert RatingEvaluator().describe() == {
        "task": "rating", "metrics": ["RMSE", "MAE"],
        "clipped_to": "observed (min, max) rating of the dataset"}
    assert RatingEvaluator([1, 5]).describe()["clipped_to"] == [1.0, 5.0]
    assert RatingEvaluator.task == "rating"


def test_experiment_with_user_split_records_the_protocol():
    from dprec.evaluation.runner import Experiment
    from dprec.evaluation.split import UserSplit
    from dprec.systems.rating_baselines import GlobalMean

    rng = np.random.default_rng(0)
    n = 2000
    ds = Dataset.from_triples("synth", rng.integers(0, 100, n), rng.integers(0, 40, n),
                              rng.integers(1, 6, n).astype(np.float32))
    res = Experiment(ds, [0, 1], split=UserSplit(0.2), evaluator=RatingEvaluator()).run(
        GlobalMean)
    proto = res.to_json()["protocol"]
    assert proto["task"] == "rating" and proto["split"]["kind"] == "user"
    assert proto["split"]["test_fraction"] == 0.2
    # uniform 1..5 ratings: the global mean's RMSE is about sqrt(2)
    assert abs(res.metrics["rating"]["RMSE"]["mean"] - math.sqrt(2)) < 0.1
    assert abs(res.metrics["rating"]["MAE"]["mean"] - 1.2) < 0.1
