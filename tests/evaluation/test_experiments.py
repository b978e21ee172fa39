"""The experiment a system runs in (dprec.evaluation.experiments): chosen from its task and
the requested split, below the command line (issue 22, §4)."""

from __future__ import annotations

import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.experiments import check_folds, experiment_for, task_of
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.split import KFoldSplit, LeaveOneOutSplit, UserSplit
from dprec.evaluation.user_ranking import UserRankingEvaluator


@pytest.fixture(scope="module")
def ds():
    return synthetic(60, 40, 1_200, rng=3)


def test_the_task_of_a_system():
    assert task_of("dplcf-sp", None) == "ranking"
    assert task_of("dplcf-sp", "user") == "privrec"  # a ranking system on the user split
    assert task_of("privrec", None) == "privrec"  # a side-feature system
    assert task_of("bias", None) == "rating"


@pytest.mark.parametrize("task,split,kind,seeds", [
    ("ranking", None, LeaveOneOutSplit, 2), ("ranking", "random", LeaveOneOutSplit, 1),
    ("rating", None, KFoldSplit, 2), ("rating", "user", UserSplit, 1),
    ("privrec", None, UserSplit, 1),
])
def test_the_experiment_of_a_task(ds, task, split, kind, seeds):
    exp = experiment_for(task, ds, seeds, split, 19, 3)
    assert list(exp.seeds) == list(range(seeds)) and isinstance(exp.split, kind)
    if task == "ranking":
        assert exp.split.rule == (split or "latest") and exp.evaluator.n_negatives == 19
    if task == "rating":
        assert isinstance(exp.evaluator, RatingEvaluator)
        assert split == "user" or exp.split.k == 3
    if task == "privrec":
        assert isinstance(exp.evaluator, UserRankingEvaluator) and exp.split.test_fraction == 0.2


@pytest.mark.parametrize("task,split,message", [
    ("ranking", "kfold", "must be latest or random, got kfold"),
    ("rating", "latest", "must be kfold or user, got latest"),
    ("privrec", "latest", "uses the user split, got --split latest"),
])
def test_a_split_the_task_does_not_run_is_refused(ds, task, split, message):
    with pytest.raises(DprecError, match=message):
        experiment_for(task, ds, 1, split, 19, None)


def test_folds_only_for_k_fold_rating():
    check_folds("rating", None, 3)
    check_folds("ranking", None, None)
    with pytest.raises(DprecError, match="leave-one-out"):
        check_folds("ranking", None, 3)
    with pytest.raises(DprecError, match="the user split"):
        check_folds("rating", "user", 3)
    with pytest.raises(DprecError, match="--folds must be >= 2, got 1"):
        check_folds("rating", "kfold", 1)
