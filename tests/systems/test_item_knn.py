"""Item-kNN (cosine with shrinkage, top-k neighbours): known answers by hand, the tie rule,
a brute-force check, and a floor above popularity on full ranking."""

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.candidates import sample_negatives
from dprec.evaluation.ranking import FULL_LIST, evaluate_ranking
from dprec.evaluation.split import leave_one_out
from dprec.models.item_cosine import ItemKNNConfig, cosine_neighbours
from dprec.systems.registry import make_system, spec


def _x(rows: list[list[int]], n_items: int) -> sp.csr_matrix:
    dense = np.zeros((len(rows), n_items))
    for u, items in enumerate(rows):
        dense[u, items] = 1.0
    return sp.csr_matrix(dense)


def test_cosine_with_shrinkage_by_hand():
    # n = (2, 3, 2); c01 = 2, c02 = 0, c12 = 1
    x = _x([[0, 1], [0, 1], [1, 2], [2]], 3)
    x[0, 0] = 4.0  # a rating, not a 1: item-kNN binarises
    idx, val = cosine_neighbours(x, 2, 1.0)
    s01, s12 = 2 / (np.sqrt(6) + 1), 1 / (np.sqrt(6) + 1)
    assert idx.tolist() == [[1, 2], [0, 2], [1, 0]]
    assert val == pytest.approx(np.array([[s01, 0.0], [s01, s12], [s12, 0.0]]), rel=1e-6)


def test_a_tie_at_the_kth_neighbour_goes_to_the_smaller_item_id():
    # item 1 is equally similar (1 / sqrt 2) to items 0 and 2; k = 1 keeps item 0
    x = _x([[0, 1], [1, 2], [3]], 4)
    model = make_system("item-knn", {"neighbours": 1}).fit(x, np.random.default_rng(0))
    only_2 = model.score(_x([[2]], 4))[0]
    only_0 = model.score(_x([[0]], 4))[0]
    assert only_0[1] == pytest.approx(1 / np.sqrt(2)) and only_2[1] == 0.0
    assert only_2[2] == 0.0 and only_2[3] == 0.0  # no item is its own neighbour


def test_scores_match_a_brute_force_and_the_candidate_path():
    rng = np.random.default_rng(5)
    x = sp.csr_matrix((rng.random((60, 15)) < 0.3).astype(float))
    k, shrink = 4, 3.0
    dense = x.toarray()
    co = dense.T @ dense
    n = np.diag(co)
    sim = co / (np.sqrt(np.outer(n, n)) + shrink)
    np.fill_diagonal(sim, -np.inf)
    want_w = np.zeros_like(sim)
    for i in range(15):  # independent of dprec.selection: a stable sort on (-sim, id)
        order = np.lexsort((np.arange(15), -sim[i]))[:k]
        want_w[i, order] = sim[i, order]
    model = make_system("item-knn", {"neighbours": k, "shrinkage": shrink})
    model.fit(x, np.random.default_rng(0))
    history = x[:7]
    full = model.score(history)
    assert full == pytest.approx(history.toarray() @ want_w.T, abs=1e-6)
    cands = rng.integers(0, 15, size=(7, 5))
    assert model.score(history, items=cands) == pytest.approx(
        np.take_along_axis(full, cands, 1), abs=1e-9)


def test_settings_are_checked():
    with pytest.raises(DprecError, match="neighbours must be an integer >= 1"):
        ItemKNNConfig(neighbours=0)
    with pytest.raises(DprecError, match="shrinkage must be a finite number >= 0"):
        ItemKNNConfig(shrinkage=-1.0)
    assert not spec("item-knn").private and spec("item-knn").default_grid


def test_item_knn_beats_popularity_on_full_ranking():
    split = leave_one_out(synthetic(600, 400, 24_000, rng=1), "latest")
    neg = sample_negatives(split, 99, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    knn = make_system("item-knn", {"neighbours": 50}).fit(split.train, rng)
    pop = make_system("popularity").fit(split.train, rng)
    m = evaluate_ranking(knn, split, neg, rng)[FULL_LIST]
    p = evaluate_ranking(pop, split, neg, rng)[FULL_LIST]
    # random: HR@10 = 10 / ~360 unseen items ~ 0.028
    assert m["HR@10"] > 3 * 10 / 400
    assert m["HR@10"] > p["HR@10"] and m["Coverage@10"] > p["Coverage@10"]
