"""evaluation/oracle.py (issue 33 §2): the generator's scores as a ranker, a ceiling line."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.registry import dataset_truth, load_dataset
from dprec.errors import DprecError
from dprec.evaluation.oracle import OracleConfig, OracleRanker
from dprec.evaluation.runner import Experiment
from dprec.systems.base import UnknownUserError
from dprec.systems.registry import make_system

NAME = "synthetic-300x200-3000"


def test_the_oracle_scores_are_the_generators():
    ds = load_dataset(NAME)
    oracle = OracleRanker(OracleConfig(NAME), ds.user_ids, ds.item_ids)
    oracle.fit(ds.matrix.tocsr(), np.random.default_rng(0))
    users = np.array([0, 7, 299])
    got = oracle.score(ds.matrix.tocsr()[users], users=users)
    truth = dataset_truth(NAME)
    assert np.array_equal(got, truth.scores(users))
    items = np.array([[3, 1], [0, 199], [5, 5]])
    part = oracle.score(ds.matrix.tocsr()[users], items=items, users=users)
    assert np.array_equal(part, np.take_along_axis(truth.scores(users), items, axis=1))


def test_the_oracle_beats_popularity_and_random_on_full_ranking():
    exp = Experiment(load_dataset(NAME), [0, 1])
    ds = exp.dataset
    oracle = exp.run(lambda: OracleRanker(OracleConfig(NAME), ds.user_ids, ds.item_ids))
    pop = exp.run(lambda: make_system("popularity"))
    rand = exp.run(lambda: make_system("random"))
    assert oracle.privacy is None and oracle.parameters == {"dataset": NAME, "data_seed": 0}
    hr = {r.system: r.metrics["full-topk"]["HR@10"]["mean"] for r in (oracle, pop, rand)}
    assert hr["oracle"] > hr["popularity"] > hr["random"]


def test_the_oracle_refuses_what_it_cannot_score():
    with pytest.raises(DprecError, match="synthetic-<users>x<items> data sets only"):
        OracleRanker(OracleConfig("ml-100k"))
    with pytest.raises(DprecError, match="held-out times"):
        OracleRanker(OracleConfig("synth-300x120"))
    ds = load_dataset(NAME)
    oracle = OracleRanker(OracleConfig(NAME))
    with pytest.raises(DprecError, match="scores a"):
        oracle.fit(ds.matrix.tocsr()[:10], np.random.default_rng(0))
    with pytest.raises(UnknownUserError, match="own users only"):
        oracle.score(ds.matrix.tocsr()[:2], users=np.array([0, -1]))
    with pytest.raises(UnknownUserError):
        oracle.score(ds.matrix.tocsr()[:2])
    with pytest.raises(DprecError, match="raw ids"):
        OracleRanker(OracleConfig(NAME), user_ids=np.array([0, 300]))
