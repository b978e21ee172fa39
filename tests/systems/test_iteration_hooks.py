"""Every iterative system calls ``on_iteration`` once per epoch or round, in order, with a
state (the model, the system or the round's broadcast); the others never call it."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.features import side_features
from dprec.data.synthetic import synthetic
from dprec.systems.registry import SYSTEMS, make_system

SIDE_NET = {"clients_per_round": 10, "local_epochs": 1, "finetune_epochs": 1,
            "embedding_dim": 8, "hidden_width": 16, "hidden_layers": 2}
SCALE = {"rating_min": 1, "rating_max": 5}
# name -> (params, iterations the fit runs)
ITERATIVE = {
    "bpr-mf": ({"epochs": 3}, 3),
    "gmf": ({"epochs": 2}, 2),
    "mf-np": ({"iterations": 2}, 2),
    "fcf": ({"epochs": 2}, 2),
    "fmf-ldp": ({"epochs": 3, "shuffle_threshold": 10}, 3),
    "nondp-svd": ({"epochs": 3}, 3),
    "dpsgd-mf": ({"epochs": 3, **SCALE}, 3),
    "dpps-mf": ({"epochs": 2, **SCALE}, 2),
    "pnbm": ({"iterations": 3}, 3),
    "dpsgd-pnbm": ({"iterations": 3, **SCALE}, 3),
    "dpps-pnbm": ({"iterations": 2, **SCALE}, 2),
    "privrec": ({"rounds": 2, **SIDE_NET}, 2),
    "dp-privrec": ({"rounds": 2, **SIDE_NET}, 2),
    "privrec-cen": ({"rounds": 2, **SIDE_NET}, 2),
    # one-round protocols: one iteration
    "dplcf-sp": ({}, 1),
    "lcf-sp": ({}, 1),
    "ldp-svd": ({"epochs": 2, **SCALE}, 1),
    "laplace-rr-svd": ({"epochs": 2, **SCALE}, 1),
}
ONE_SHOT = ["random", "popularity", "global-mean", "bias", "pcc-knn"]


@functools.cache
def _data():
    ds = synthetic(150, 60, 3_600, rng=7)
    rng = np.random.default_rng(1)
    implicit = ds.matrix.tocsr()
    ratings = implicit.copy()
    ratings.data = rng.integers(1, 6, ratings.nnz).astype(np.float64)
    return implicit, ratings, side_features(ds)


def _fit(name: str, params: dict) -> tuple[object, list[tuple[int, object]]]:
    implicit, ratings, features = _data()
    model = make_system(name, params)
    if model.uses_side_features:
        model.set_side_features(features)
    if model.uses_rating_scale:
        model.set_rating_scale((1.0, 5.0))
    train = ratings if SYSTEMS[name].task == "rating" else implicit
    calls: list[tuple[int, object]] = []
    model.fit(sp.csr_matrix(train), np.random.default_rng(0),
              on_iteration=lambda t, state: calls.append((t, state)))
    return model, calls


@pytest.mark.parametrize("name", sorted(ITERATIVE))
def test_the_hook_is_called_once_per_epoch_or_round(name):
    params, n = ITERATIVE[name]
    _, calls = _fit(name, params)
    assert [t for t, _ in calls] == list(range(n))
    assert all(state is not None for _, state in calls)


@pytest.mark.parametrize("name", ONE_SHOT)
def test_a_one_shot_fit_calls_no_hook(name):
    _, calls = _fit(name, {})
    assert calls == []


def test_the_table_names_only_known_systems():
    assert set(ITERATIVE) | set(ONE_SHOT) <= set(SYSTEMS)
