import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dprec.errors import DprecError
from dprec.models.knn_rating import ItemKNN, KNNRatingConfig, item_similarity

NAN = np.nan
# 4 users x 4 items; u2 has not rated i2 and u0 has not rated i3.
HAND = np.array([
    [5, 3, 4, NAN],
    [4, 1, 5, 3],
    [1, 2, NAN, 5],
    [3, 4, 2, 1],
])
S37 = math.sqrt(3 / 7)
# Worked by hand over the co-rating users of each pair (means over those users only):
# (i0, i1) users 0-3: x = (5,4,1,3), y = (3,1,2,4); dx.dy = 1/2, |dx|^2 = 35/4, |dy|^2 = 5
#          -> 1/sqrt(175); cosine 33 / sqrt(51 * 30).
# (i0, i2) users 0,1,3: x = (5,4,3), y = (4,5,2); dx.dy = 2, |dx|^2 = 2, |dy|^2 = 14/3
#          -> sqrt(3/7); cosine 46 / sqrt(50 * 45).
# (i0, i3) users 1,2,3: x = (4,1,3), y = (3,5,1); dx.dy = -4, |dx|^2 = 14/3, |dy|^2 = 8
#          -> -sqrt(3/7); cosine 20 / sqrt(26 * 35).
# (i1, i2) users 0,1,3: x = (3,1,4), y = (4,5,2); dx.dy = -13/3, both |d|^2 = 14/3 -> -13/14;
#          cosine 25 / sqrt(26 * 45).
# (i1, i3) users 1,2,3: x = (1,2,4), y = (3,5,1); dx.dy = -4, 14/3, 8 -> -sqrt(3/7);
#          cosine 17 / sqrt(21 * 35).
# (i2, i3) users 1,3: x = (5,2), y = (3,1) -> 1 (two points); cosine 17 / sqrt(29 * 10).
PEARSON = np.array([
    [1, 1 / math.sqrt(175), S37, -S37],
    [1 / math.sqrt(175), 1, -13 / 14, -S37],
    [S37, -13 / 14, 1, 1],
    [-S37, -S37, 1, 1],
])
COSINE = np.array([
    [1, 33 / math.sqrt(51 * 30), 46 / math.sqrt(50 * 45), 20 / math.sqrt(26 * 35)],
    [33 / math.sqrt(51 * 30), 1, 25 / math.sqrt(26 * 45), 17 / math.sqrt(21 * 35)],
    [46 / math.sqrt(50 * 45), 25 / math.sqrt(26 * 45), 1, 17 / math.sqrt(29 * 10)],
    [20 / math.sqrt(26 * 35), 17 / math.sqrt(21 * 35), 17 / math.sqrt(29 * 10), 1],
])
MEANS = np.array([13 / 4, 5 / 2, 11 / 3, 3])


def _csr(dense: np.ndarray) -> sp.csr_matrix:
    """Stored entries where ``dense`` is not NaN (zeros included)."""
    u, i = np.nonzero(~np.isnan(dense))
    return sp.csr_matrix((dense[u, i], (u, i)), shape=dense.shape)


def test_hand_computed_similarities():
    R = _csr(HAND)
    np.testing.assert_allclose(item_similarity(R, "pearson"), PEARSON, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(item_similarity(R, "cosine"), COSINE, rtol=1e-12, atol=1e-15)


def test_hand_computed_predictions_pearson():
    m = ItemKNN(KNNRatingConfig("pearson", k=2)).fit(_csr(HAND))
    np.testing.assert_allclose(m.item_means, MEANS, rtol=1e-12)
    # u2 on i2: u2 rated i0 = 1, i1 = 2, i3 = 5 with sims sqrt(3/7), -13/14, 1; k = 2 takes i3
    # and i0: 11/3 + (1 (5 - 3) + sqrt(3/7) (1 - 13/4)) / (1 + sqrt(3/7)).
    want_22 = 11 / 3 + (2 - 9 / 4 * S37) / (1 + S37)
    # u0 on i3: u0 rated i0 = 5, i1 = 3, i2 = 4 with sims -sqrt(3/7), -sqrt(3/7), 1; only i2 is
    # positive: 3 + (4 - 11/3) = 10/3.
    np.testing.assert_allclose(m.predict(np.array([2, 0]), np.array([2, 3])),
                               [want_22, 10 / 3], rtol=1e-12)
    k1 = ItemKNN(KNNRatingConfig("pearson", k=1)).fit(_csr(HAND))
    np.testing.assert_allclose(k1.predict(np.array([2]), np.array([2])), [11 / 3 + 2],
                               rtol=1e-12)


def test_hand_computed_predictions_cosine():
    c0, c1, c3 = COSINE[2, 0], COSINE[2, 1], COSINE[2, 3]
    assert c3 > c0 > c1
    m = ItemKNN(KNNRatingConfig("cosine", k=2)).fit(_csr(HAND))
    # u2 on i2: the two most similar of i0 (c0), i1 (c1), i3 (c3) are i3 and i0
    want = 11 / 3 + (c3 * (5 - 3) + c0 * (1 - 13 / 4)) / (c3 + c0)
    np.testing.assert_allclose(m.predict(np.array([2]), np.array([2])), [want], rtol=1e-12)
    raw = ItemKNN(KNNRatingConfig("cosine", k=2, centered=False)).fit(_csr(HAND))
    np.testing.assert_allclose(raw.predict(np.array([2]), np.array([2])),
                               [(c3 * 5 + c0 * 1) / (c3 + c0)], rtol=1e-12)
    every = ItemKNN(KNNRatingConfig("cosine", k=40)).fit(_csr(HAND))
    want3 = 11 / 3 + (c3 * 2 + c0 * (1 - 13 / 4) + c1 * (2 - 5 / 2)) / (c3 + c0 + c1)
    np.testing.assert_allclose(every.predict(np.array([2]), np.array([2])), [want3],
                               rtol=1e-12)


def test_min_support_and_shrinkage():
    R = _csr(HAND)
    # only (i0, i1) has 4 co-rating users; (i2, i3) has 2, the others 3
    s = item_similarity(R, "pearson", min_support=4)
    np.testing.assert_allclose(s, np.where(np.eye(4, dtype=bool), 1.0,
                                           np.where([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0],
                                                     [0, 0, 0, 0]], PEARSON, 0.0)), atol=1e-15)
    n = np.array([[4, 4, 3, 3], [4, 4, 3, 3], [3, 3, 3, 2], [3, 3, 2, 3]])
    shrunk = item_similarity(R, "cosine", shrinkage=2.0)
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose(shrunk[off], (COSINE * n / (n + 2.0))[off], rtol=1e-12)
    np.testing.assert_array_equal(np.diag(shrunk), 1.0)


def brute_similarity(dense: np.ndarray, cfg: KNNRatingConfig) -> np.ndarray:
    """Item x item similarity from the definitions: co-raters, centred Pearson / raw cosine,
    shrunk by n / (n + shrinkage); 1 on the diagonal."""
    n_items = dense.shape[1]
    obs = ~np.isnan(dense)
    sim = np.eye(n_items)
    for x in range(n_items):
        for y in range(n_items):
            if x == y:
                continue
            common = obs[:, x] & obs[:, y]
            n = int(common.sum())
            if n == 0 or n < cfg.min_support:
                continue
            a, b = dense[common, x], dense[common, y]
            if cfg.similarity == "pearson":
                a, b = a - a.mean(), b - b.mean()
            den = math.sqrt(float(a @ a) * float(b @ b))
            s = float(a @ b) / den if den > 1e-9 else 0.0
            sim[x, y] = s * n / (n + cfg.shrinkage)
    return sim


def near_tie_at_cutoff(dense: np.ndarray, cfg: KNNRatingConfig) -> bool:
    """Whether some user's k-th and (k+1)-th neighbour of an item, the k-th with a positive
    similarity (it counts), differ by less than 1e-9: two correct float orders may then rank
    them differently, so the brute force cannot say which one is kept (the tie rule itself,
    the smaller item index, has its own known-answer test). Also where one of the top k is
    a computed similarity (the items share raters, at least min_support) within 1e-9 of 0: 0
    in exact arithmetic comes out as +2e-17 in one float order and as 0 in another, so
    whether it counts (positive) is not defined. A similarity that is 0 because the items
    share too few raters is exact in both, and stays in."""
    sim, obs = brute_similarity(dense, cfg), ~np.isnan(dense)
    shared = obs.T.astype(int) @ obs.astype(int)
    for u in range(dense.shape[0]):
        rated = np.flatnonzero(obs[u])
        for i in range(dense.shape[1]):
            order = rated[np.argsort(-sim[i, rated], kind="stable")]
            ranked = sim[i, order]
            if len(ranked) > cfg.k and ranked[cfg.k - 1] > 0 and \
                    ranked[cfg.k - 1] - ranked[cfg.k] < 1e-9:
                return True
            top = order[:cfg.k]
            if np.any((np.abs(sim[i, top]) < 1e-9)
                      & (shared[i, top] >= max(1, cfg.min_support))):
                return True
    return False


def brute_force(dense: np.ndarray, cfg: KNNRatingConfig, users, items) -> np.ndarray:
    """Per pair from the definitions: co-raters, centred Pearson / raw cosine, sort, average."""
    n_users, n_items = dense.shape
    obs = ~np.isnan(dense)
    sim = brute_similarity(dense, cfg)
    mu = np.nanmean(dense)
    means = np.array([np.nanmean(dense[:, j]) if obs[:, j].any() else mu
                      for j in range(n_items)])
    out = []
    for u, i in zip(users, items, strict=True):
        if not (0 <= i < n_items and obs[:, i].any()):
            out.append(mu)
            continue
        if not 0 <= u < n_users:
            out.append(means[i])
            continue
        rated = np.flatnonzero(obs[u])
        ranked = sorted(rated, key=lambda j: (-sim[i, j], j))[:cfg.k]
        num = den = 0.0
        for j in ranked:
            if sim[i, j] > 0:
                den += sim[i, j]
                num += sim[i, j] * (dense[u, j] - (means[j] if cfg.centered else 0.0))
        if den == 0:
            out.append(means[i])
        else:
            out.append((means[i] if cfg.centered else 0.0) + num / den)
    return np.array(out)


@settings(max_examples=40, deadline=None)
@given(n_users=st.integers(1, 9), n_items=st.integers(1, 7), density=st.floats(0.2, 1.0),
       similarity=st.sampled_from(["pearson", "cosine"]), k=st.integers(1, 8),
       min_support=st.integers(0, 3), shrinkage=st.sampled_from([0.0, 1.5]),
       centered=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_matches_brute_force(n_users, n_items, density, similarity, k, min_support, shrinkage,
                             centered, seed):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n_users, n_items)) < density,
                     rng.integers(1, 6, (n_users, n_items)).astype(float), np.nan)
    assume(not np.isnan(dense).all())
    cfg = KNNRatingConfig(similarity, k=k, min_support=min_support, shrinkage=shrinkage,
                          centered=centered)
    users = np.repeat(np.arange(-1, n_users + 1), n_items + 2)
    items = np.tile(np.arange(-1, n_items + 1), n_users + 2)
    assume(not near_tie_at_cutoff(dense, cfg))
    m = ItemKNN(cfg).fit(_csr(dense))
    np.testing.assert_allclose(m.predict(users, items), brute_force(dense, cfg, users, items),
                               rtol=1e-9, atol=1e-9)


def test_equal_co_rated_values_give_pearson_zero_not_rounding_noise():
    # i0 is 0.3 for its three co-raters with i1: n Q - S^2 = 3 (3 0.09) - 0.9^2 and
    # n P - S_0 S_1 come out as rounding noise (about 2e-16), not 0. Left in, they make a
    # tiny positive similarity, and a lone positive neighbour carries its whole deviation
    # (0.9 - 0.45) whatever its weight.
    dense = np.array([[0.3, 0.1], [0.3, 0.1], [0.3, 0.7], [NAN, 0.9]])
    s = item_similarity(_csr(dense), "pearson")
    assert s[0, 1] == 0.0 and s[1, 0] == 0.0
    m = ItemKNN().fit(_csr(dense))
    np.testing.assert_allclose(m.predict(np.array([3]), np.array([0])), [0.3], rtol=1e-12)


def test_neighbour_ties_are_broken_by_item_index():
    # Target item 0. User 1 rated items 1..60 (all different ratings); user 2 rated every
    # item 3; user 3 rated item 0 (1) and every third item (5). Items rated by user 3 have
    # cosine 14 / sqrt(340) with item 0, the others exactly 1 (one co-rater): k = 5 must take
    # the five lowest-index items of similarity 1, as Surprise does on ratings given in item
    # order (an unstable sort picks others).
    n = 61
    dense = np.full((4, n), NAN)
    dense[1, 1:] = np.linspace(1.0, 5.0, n - 1)
    dense[2, :] = 3.0
    dense[3, 0] = 1.0
    third = np.arange(3, n, 3)
    dense[3, third] = 5.0
    m = ItemKNN(KNNRatingConfig("cosine", k=5, centered=False)).fit(_csr(dense))
    sims = m.similarity_matrix[0]
    np.testing.assert_allclose(sims[third], 14 / math.sqrt(340), rtol=1e-12)
    ones = np.setdiff1d(np.arange(1, n), third)
    assert np.all(sims[ones] == 1.0)
    want = np.mean(dense[1, ones[:5]])
    np.testing.assert_allclose(m.predict(np.array([1]), np.array([0])), [want], rtol=1e-12)


def test_stored_zeros_and_negative_values_are_ratings():
    dense = np.array([[0.0, -1.0], [2.0, NAN], [NAN, 3.0]])
    R = _csr(dense)
    assert R.nnz == 4 and 0.0 in R.data
    m = ItemKNN(KNNRatingConfig("cosine")).fit(R)
    np.testing.assert_allclose(m.item_means, [1.0, 1.0])
    assert m.global_mean == pytest.approx(1.0)
    # i0 and i1 share u0 only (ratings 0 and -1): cosine 0 / 0 = 0, so no positive neighbour
    assert m.similarity_matrix[0, 1] == 0.0
    np.testing.assert_allclose(m.predict(np.array([2]), np.array([0])), [1.0])


def test_unknown_users_and_items():
    dense = np.array([[5, 3, NAN], [4, NAN, NAN], [NAN, 1, NAN]], dtype=float)
    m = ItemKNN().fit(_csr(dense))
    mu = 13 / 4
    users = np.array([-1, 7, 0, 0, 1, 2])
    items = np.array([0, 1, 2, -1, 9, 0])
    # unknown users get the item mean; items without ratings (i2) or outside get mu;
    # u2 rated only i1, whose similarity to i0 is 0 (one co-rater): the item mean
    np.testing.assert_allclose(m.predict(users, items), [4.5, 2.0, mu, mu, mu, 4.5],
                               rtol=1e-12)
    assert m.predict(np.array([], np.int64), np.array([], np.int64)).shape == (0,)


def test_a_user_without_ratings_gets_the_item_mean():
    dense = np.array([[5, 3], [4, 2], [NAN, NAN]], dtype=float)
    m = ItemKNN().fit(_csr(dense))
    np.testing.assert_allclose(m.predict(np.array([2, 2]), np.array([0, 1])), [4.5, 2.5])


def test_fit_is_deterministic_and_ignores_the_generator():
    rng = np.random.default_rng(0)
    dense = np.where(rng.random((30, 20)) < 0.4, rng.integers(1, 6, (30, 20)), np.nan)
    u, i = rng.integers(0, 30, 50), rng.integers(0, 20, 50)
    a = ItemKNN().fit(_csr(dense), np.random.default_rng(1)).predict(u, i)
    b = ItemKNN().fit(_csr(dense), np.random.default_rng(2)).predict(u, i)
    np.testing.assert_array_equal(a, b)


def test_similarity_is_computed_in_blocks(monkeypatch):
    import dprec.models.knn_rating as knn

    rng = np.random.default_rng(0)
    dense = np.where(rng.random((40, 25)) < 0.4, rng.integers(1, 6, (40, 25)), np.nan)
    whole = {s: item_similarity(_csr(dense), s) for s in ("pearson", "cosine")}
    monkeypatch.setattr(knn, "_BLOCK_ENTRIES", 7 * 25)  # 7 rows per block, 4 blocks
    for s, want in whole.items():
        np.testing.assert_array_equal(item_similarity(_csr(dense), s), want)


@pytest.mark.parametrize("field, value, message", [
    ("similarity", "jaccard", "similarity must be 'pearson' or 'cosine'"),
    ("k", 0, "k must be an integer >= 1"),
    ("k", 2.5, "k must be an integer >= 1"),
    ("min_support", -1, "min_support must be an integer >= 0"),
    ("shrinkage", -1.0, "shrinkage must be finite and >= 0"),
    ("shrinkage", float("inf"), "shrinkage must be finite and >= 0"),
    ("centered", "yes", "centered must be True or False"),
])
def test_config_is_validated(field, value, message):
    with pytest.raises(DprecError, match=message):
        KNNRatingConfig(**{field: value})


def test_fit_and_predict_validate_their_inputs():
    with pytest.raises(DprecError, match="not fitted"):
        ItemKNN().predict(np.array([0]), np.array([0]))
    with pytest.raises(DprecError, match="scipy.sparse"):
        ItemKNN().fit(np.ones((2, 2)))
    with pytest.raises(DprecError, match="at least one rating"):
        ItemKNN().fit(sp.csr_matrix((2, 2)))
    with pytest.raises(DprecError, match="NaN or infinite"):
        ItemKNN().fit(sp.csr_matrix(np.array([[1.0, np.nan]])))
    with pytest.raises(DprecError, match="similarity must be"):
        item_similarity(sp.csr_matrix(np.eye(2)), "jaccard")  # type: ignore[arg-type]
    m = ItemKNN().fit(sp.csr_matrix(np.array([[1.0, 2.0]])))
    with pytest.raises(DprecError, match="1-d arrays of equal length"):
        m.predict(np.array([0, 0]), np.array([0]))
    with pytest.raises(DprecError, match="users must hold integer indices"):
        m.predict(np.array([0.0]), np.array([0]))


@pytest.mark.slow
@pytest.mark.parametrize("similarity", ["pearson", "cosine"])
def test_identical_to_surprise_knn_with_means(similarity):
    """Surprise's KNNWithMeans (item-based) on the same ratings, given in CSR order (its
    neighbour ties are broken by that order, ours by item index): the same predictions."""
    surprise = pytest.importorskip("surprise")
    import pandas as pd

    rng = np.random.default_rng(1)
    n_users, n_items = 120, 60
    dense = np.where(rng.random((n_users, n_items)) < 0.15,
                     rng.integers(1, 6, (n_users, n_items)), np.nan)
    test = (rng.random(dense.shape) < 0.2) & ~np.isnan(dense)
    train = _csr(np.where(test, np.nan, dense))
    coo = train.tocoo()
    df = pd.DataFrame({"u": coo.row, "i": coo.col, "r": coo.data})
    trainset = surprise.Dataset.load_from_df(
        df, surprise.Reader(rating_scale=(1, 5))).build_full_trainset()
    algo = surprise.KNNWithMeans(k=10, sim_options={"name": similarity, "user_based": False},
                                 verbose=False).fit(trainset)
    u, i = np.nonzero(test)
    known_user = np.isin(u, coo.row)
    u, i = u[known_user], i[known_user]  # Surprise gives unknown users mu, we the item mean
    theirs = np.array([algo.predict(a, b, clip=False).est
                       for a, b in zip(u.tolist(), i.tolist(), strict=True)])
    ours = ItemKNN(KNNRatingConfig(similarity, k=10)).fit(train).predict(u, i)
    assert len(u) > 200
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_a_float_near_tie_at_the_cutoff_is_recognised():
    """Hypothesis found this: items 1 and 2 are both at Pearson 1/2 from item 0, one ulp
    apart in the brute force's order of sums, and k = 2 keeps one of them (seed 142942532)."""
    dense = np.array([[5.0, 5.0, 4.0], [4.0, 5.0, 3.0], [4.0, 4.0, 4.0]])
    cfg = KNNRatingConfig("pearson", k=2, min_support=0, shrinkage=0.0, centered=False)
    sim = brute_similarity(dense, cfg)
    assert sim[0, 1] == pytest.approx(0.5) and sim[0, 2] == pytest.approx(0.5)
    assert near_tie_at_cutoff(dense, cfg)
    assert not near_tie_at_cutoff(dense, replace(cfg, k=3))
