"""EASE (Steck, WWW 2019): the closed form on known answers, and a floor above random."""

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.ranking import FULL_LIST, evaluate_ranking
from dprec.evaluation.split import leave_one_out
from dprec.models.ease import EASEConfig, ease_weights
from dprec.systems.registry import make_system, spec


def test_two_items_always_together_by_hand():
    # X^T X = [[4, 4], [4, 4]]; + 1 I -> P = [[5, -4], [-4, 5]] / 9; B_01 = -P_01 / P_11 = 0.8
    x = sp.csr_matrix(np.ones((4, 2)))
    b = ease_weights(x, 1.0)
    assert b == pytest.approx(np.array([[0.0, 0.8], [0.8, 0.0]]))


def test_closed_form_against_a_direct_inverse():
    rng = np.random.default_rng(0)
    x = (rng.random((50, 12)) < 0.3).astype(float)
    x[0, 0] = 5.0  # a rating, not a 1: EASE binarises
    lam = 7.0
    binary = (x > 0).astype(float)
    p = np.linalg.inv(binary.T @ binary + lam * np.eye(12))
    want = np.eye(12) - p / np.diag(p)[None, :]
    np.fill_diagonal(want, 0.0)
    got = ease_weights(sp.csr_matrix(x), lam)
    assert got == pytest.approx(want, abs=1e-12)
    assert np.all(np.diag(got) == 0.0)


def test_scores_are_history_times_b_and_candidates_agree():
    x = sp.csr_matrix(np.array([[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 1, 1], [0, 0, 1, 1.0]]))
    model = make_system("ease", {"regularization": 2.0}).fit(x, np.random.default_rng(0))
    b = ease_weights(x, 2.0)
    history = sp.csr_matrix(np.array([[1, 0, 0, 1.0]]))
    full = model.score(history, users=np.array([-1]))
    assert full == pytest.approx(history.toarray() @ b)
    cands = np.array([[3, 1]])
    assert model.score(history, items=cands) == pytest.approx(full[:, [3, 1]])


def test_regularization_must_be_positive():
    with pytest.raises(DprecError, match="regularization must be a finite number > 0"):
        EASEConfig(regularization=0.0)
    assert not spec("ease").private and spec("ease").default_grid


def test_ease_beats_random_and_popularity_on_full_ranking():
    split = leave_one_out(synthetic(600, 400, 24_000, rng=1), "latest")
    neg = sample_negatives(split, 99, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    ease = make_system("ease", {"regularization": 50.0}).fit(split.train, rng)
    pop = make_system("popularity").fit(split.train, rng)
    m = evaluate_ranking(ease, split, neg, rng)[FULL_LIST]
    p = evaluate_ranking(pop, split, neg, rng)[FULL_LIST]
    # random: HR@10 = 10 / ~360 unseen items ~ 0.028
    assert m["HR@10"] > 3 * 10 / 400
    assert m["HR@10"] > p["HR@10"] and m["Coverage@10"] > p["Coverage@10"]
