from dataclasses import replace

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit, LeaveOneOutSplit
from dprec.systems.registry import make_system


@pytest.fixture(scope="module")
def ds():
    return synthetic(300, 200, 12_000, rng=2)


def test_folds_are_drawn_once_and_shared(ds):
    exp = Experiment(ds, [0, 1])
    a, b = exp.folds(0), exp.folds(0)
    assert a is b and len(a) == 1
    fold, negatives = a[0]
    assert negatives.shape == (len(fold.test_users), 99)
    other = Experiment(ds, [0]).folds(0)[0][1]
    np.testing.assert_array_equal(negatives, other)


def test_protocol_records_split_and_evaluator(ds):
    p = Experiment(ds, [0], LeaveOneOutSplit("random"), RankingEvaluator(49, (1, 10))).protocol()
    assert p["split"]["kind"] == "leave-one-out" and p["split"]["rule"] == "random"
    assert p["split"]["test_users"] == 300
    assert p["sampled"]["negatives"] == 49 and p["ks"] == [1, 10]


def test_curve_hook_ends_at_the_final_evaluation(ds):
    exp = Experiment(ds, [0, 1])
    res = exp.run(lambda: make_system("fmf-ldp", {"epochs": 4, "k": 10}), curve_every=2)
    assert [[p["round"] for p in c] for c in res.curves] == [[2, 4], [2, 4]]
    for seed_metrics, curve in zip(res.per_seed, res.curves, strict=True):
        assert curve[-1]["metrics"] == seed_metrics
    assert "curves" in res.to_json()
    plain = exp.run(lambda: make_system("fmf-ldp", {"epochs": 4, "k": 10}))
    assert plain.per_seed == res.per_seed and plain.curves is None


def test_kfold_metrics_are_the_mean_over_folds(ds):
    exp = Experiment(ds, [0], KFoldSplit(3), RatingEvaluator((1.0, 5.0)))
    res = exp.run(lambda: make_system("bias"))
    assert len(res.diagnostics) == 3
    folds = [exp.evaluator.evaluate(make_system("bias").fit(f.train, None), f, prep, None)
             for f, prep in exp.folds(0)]
    want = [f["rating"]["RMSE"] for f in folds]
    assert [p["rating"]["RMSE"] for p in res.per_seed] == pytest.approx(want, rel=1e-12)
    assert res.metrics["rating"]["RMSE"]["mean"] == pytest.approx(np.mean(want), rel=1e-12)
    assert res.metrics["rating"]["RMSE"]["std"] == pytest.approx(np.std(want, ddof=1))
    assert res.protocol["folds_per_seed"] == 3 and res.protocol["task"] == "rating"


@pytest.mark.parametrize("kwargs, message", [
    ({"curve_every": 0}, "curve_every must be an integer >= 1"),
])
def test_bad_run_arguments(ds, kwargs, message):
    with pytest.raises(DprecError, match=message):
        Experiment(ds, [0]).run(lambda: make_system("random"), **kwargs)


def test_bad_experiments():
    ds = synthetic(60, 300, 2_000, rng=0)
    with pytest.raises(DprecError, match="at least one seed"):
        Experiment(ds, [])
    with pytest.raises(DprecError, match="ranking needs a ranker"):
        Experiment(ds, [0]).run(lambda: make_system("bias"))
    with pytest.raises(DprecError, match="needs a leave-one-out split"):
        Experiment(ds, [0], KFoldSplit(3)).run(lambda: make_system("random"))
    with pytest.raises(DprecError, match="negatives must be an integer >= 1"):
        RankingEvaluator(0)


def test_privacy_is_the_worst_over_every_fold_not_the_last_one():
    """dpsgd-mf's per-user eps is eps x the largest training profile, which differs between
    folds: the run reports the largest (issue 20: the last fold's was reported)."""
    data = synthetic(200, 150, 6_000, rng=7)
    exp = Experiment(data, [0], KFoldSplit(2), RatingEvaluator((1.0, 5.0)))
    res = exp.run(lambda: make_system("dpsgd-mf", {"epochs": 1, "factors": 4}))
    most = [int(f.train.getnnz(1).max()) for f, _ in exp.folds(0)]
    assert most[-1] < max(most)  # the last fold is not the worst: old code under-reported
    lv = res.privacy["levels"]
    assert lv["user_basic"]["epsilon"] == pytest.approx(max(most))
    per_fit = res.privacy["per_fit"]
    assert [(f["seed"], f["fold"]) for f in per_fit] == [(0, 0), (0, 1)]
    basic = [f["guarantees"]["levels.user_basic"]["epsilon"] for f in per_fit]
    assert basic == pytest.approx(most)
    users = [f["guarantees"]["levels.user"]["epsilon"] for f in per_fit]
    assert lv["user"]["epsilon"] == pytest.approx(max(users)) and users[0] != users[1]


def test_a_data_independent_guarantee_is_unchanged_by_the_merge(ds):
    res = Experiment(ds, [0, 1]).run(lambda: make_system("dplcf-sp", {"neighbours": 5}))
    assert "per_fit" not in res.privacy
    assert res.privacy["levels"]["user_basic"]["epsilon"] == pytest.approx(200.0)


def test_the_declared_rating_scale_reaches_the_system():
    data = synthetic(120, 60, 2_500, rng=4)
    small = {"epochs": 2, "factors": 4}
    exp = Experiment(data, [0], KFoldSplit(2), RatingEvaluator((1.0, 5.0)))
    res = exp.run(lambda: make_system("ldp-svd", small))
    assert all(d["rating_scale"] == [1.0, 5.0] for d in res.diagnostics)
    bare = Experiment(replace(data, rating_scale=None), [0], KFoldSplit(2),
                      RatingEvaluator((1.0, 5.0)))
    with pytest.raises(DprecError, match="rating scale is unknown"):
        bare.run(lambda: make_system("ldp-svd", small))
