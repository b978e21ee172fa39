import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dprec.errors import DprecError
from dprec.models.funk_svd import FunkSVD, FunkSVDConfig


def reference_fit(R: sp.csr_matrix, cfg: FunkSVDConfig, rng: np.random.Generator):
    """The SGD of docs/architecture.md §3 / Surprise's SVD written out in plain Python, drawing from
    ``rng`` in FunkSVD's order: U, then I, then one permutation of the ratings per epoch."""
    coo = R.tocoo()
    rows, cols, vals = coo.row, coo.col, coo.data.astype(float)
    # tocoo keeps the CSR order of the stored entries
    mu = vals.mean()
    U = cfg.init_mean + cfg.init_std * rng.standard_normal((R.shape[0], cfg.factors))
    V = cfg.init_mean + cfg.init_std * rng.standard_normal((R.shape[1], cfg.factors))
    bu, bi = np.zeros(R.shape[0]), np.zeros(R.shape[1])
    for _ in range(cfg.epochs):
        for k in rng.permutation(len(vals)):
            u, i = rows[k], cols[k]
            pred = U[u] @ V[i] + ((mu + bu[u] + bi[i]) if cfg.biases else 0.0)
            e = vals[k] - pred
            if cfg.biases:
                bu[u] += cfg.lr * (e - cfg.reg * bu[u])
                bi[i] += cfg.lr * (e - cfg.reg * bi[i])
            U[u], V[i] = (U[u] + cfg.lr * (e * V[i] - cfg.reg * U[u]),
                          V[i] + cfg.lr * (e * U[u] - cfg.reg * V[i]))
    return U, V, bu, bi, mu


def random_ratings(rng, n_users, n_items, density, low=1.0, high=5.0):
    mask = rng.random((n_users, n_items)) < density
    vals = rng.uniform(low, high, (n_users, n_items))
    return sp.csr_matrix(np.where(mask, vals, 0.0))


def test_matches_the_plain_python_sgd():
    rng = np.random.default_rng(0)
    R = random_ratings(rng, 12, 9, 0.4)
    cfg = FunkSVDConfig(factors=4, lr=0.03, reg=0.05, epochs=5, init_mean=0.1, init_std=0.2)
    m = FunkSVD(cfg).fit(R, np.random.default_rng(7))
    U, V, bu, bi, mu = reference_fit(R, cfg, np.random.default_rng(7))
    np.testing.assert_allclose(m.user_factors, U, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.item_factors, V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.user_biases, bu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.item_biases, bi, rtol=1e-10, atol=1e-12)
    assert m.global_mean == pytest.approx(mu, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(n_users=st.integers(1, 8), n_items=st.integers(1, 8), density=st.floats(0.1, 1.0),
       factors=st.integers(0, 4), biases=st.booleans(), reg=st.floats(0.0, 0.2),
       low=st.floats(-3.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_matches_the_plain_python_sgd_property(n_users, n_items, density, factors, biases,
                                               reg, low, seed):
    assume(factors > 0 or biases)
    rng = np.random.default_rng(seed)
    R = random_ratings(rng, n_users, n_items, density, low=low, high=low + 4.0)
    assume(R.nnz > 0)
    cfg = FunkSVDConfig(factors=factors, lr=0.02, reg=reg, epochs=3, biases=biases)
    m = FunkSVD(cfg).fit(R, np.random.default_rng(seed))
    U, V, bu, bi, _ = reference_fit(R, cfg, np.random.default_rng(seed))
    np.testing.assert_allclose(m.user_factors, U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(m.item_factors, V, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(m.user_biases, bu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(m.item_biases, bi, rtol=1e-9, atol=1e-12)


def test_rank_one_matrix_is_fitted_to_zero_training_error():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(1, 2, 30), rng.uniform(1, 2, 20)
    R = sp.csr_matrix(np.outer(a, b))
    cfg = FunkSVDConfig(factors=1, lr=0.05, reg=0.0, epochs=200, biases=False, init_mean=1.0)
    m = FunkSVD(cfg).fit(R, np.random.default_rng(0))
    coo = R.tocoo()
    err = m.predict(coo.row, coo.col) - coo.data
    assert np.sqrt(np.mean(err**2)) < 1e-8
    np.testing.assert_allclose(m.user_factors @ m.item_factors.T, np.outer(a, b), atol=1e-8)


def test_rank_one_held_out_entries_are_recovered():
    """The known answer generalises: 60% of a rank-1 matrix gives the other 40%."""
    rng = np.random.default_rng(2)
    full = np.outer(rng.uniform(1, 2, 40), rng.uniform(1, 2, 30))
    seen = rng.random(full.shape) < 0.6
    assert seen.any(axis=0).all() and seen.any(axis=1).all()
    cfg = FunkSVDConfig(factors=1, lr=0.05, reg=0.0, epochs=400, biases=False, init_mean=1.0)
    m = FunkSVD(cfg).fit(sp.csr_matrix(np.where(seen, full, 0.0)), np.random.default_rng(0))
    u, i = np.nonzero(~seen)
    np.testing.assert_allclose(m.predict(u, i), full[u, i], atol=1e-5)


def test_biases_only_model_recovers_planted_biases():
    # r_ui = mu + b_u + b_i exactly, with sum(b_u) = sum(b_i) = 0. SGD from zero biases keeps
    # sum(b_u) = sum(b_i) (each step adds lr e to one of each), which singles out the
    # planted solution among b_u + c, b_i - c: reg = 0 converges to it exactly.
    rng = np.random.default_rng(3)
    bu, bi = rng.normal(0, 0.5, 30), rng.normal(0, 0.5, 20)
    bu -= bu.mean()
    bi -= bi.mean()
    R = sp.csr_matrix(3.0 + bu[:, None] + bi[None, :])
    m = FunkSVD(FunkSVDConfig(factors=0, lr=0.01, reg=0.0, epochs=200)).fit(
        R, np.random.default_rng(0))
    assert m.global_mean == pytest.approx(3.0, abs=1e-12)
    assert m.user_factors.shape == (30, 0)
    np.testing.assert_allclose(m.user_biases, bu, atol=1e-9)
    np.testing.assert_allclose(m.item_biases, bi, atol=1e-9)
    np.testing.assert_allclose(m.predict(np.array([4]), np.array([7])), 3.0 + bu[4] + bi[7],
                               atol=1e-9)


def test_regularised_biases_shrink_toward_zero():
    rng = np.random.default_rng(3)
    bu, bi = rng.normal(0, 0.5, 30), rng.normal(0, 0.5, 20)
    bu -= bu.mean()
    bi -= bi.mean()
    R = sp.csr_matrix(3.0 + bu[:, None] + bi[None, :])
    fit = FunkSVD(FunkSVDConfig(factors=0, lr=0.01, reg=0.5, epochs=200)).fit(
        R, np.random.default_rng(0))
    shrink = np.abs(fit.user_biases) / np.abs(bu)
    assert np.all(shrink < 0.99) and np.all(shrink > 0.5)


def test_same_generator_same_parameters_and_different_seeds_differ():
    R = random_ratings(np.random.default_rng(4), 50, 40, 0.2)
    cfg = FunkSVDConfig(factors=8, epochs=3)
    a = FunkSVD(cfg).fit(R, np.random.default_rng(5))
    b = FunkSVD(cfg).fit(R, np.random.default_rng(5))
    c = FunkSVD(cfg).fit(R, np.random.default_rng(6))
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    np.testing.assert_array_equal(a.user_biases, b.user_biases)
    assert not np.array_equal(a.item_factors, c.item_factors)


def test_the_epoch_order_comes_from_the_generator():
    """Same initial factors, different permutations: the fitted factors differ."""
    R = random_ratings(np.random.default_rng(4), 20, 15, 0.3)
    cfg = FunkSVDConfig(factors=3, epochs=1, init_std=0.0, init_mean=0.1)
    a = FunkSVD(cfg).fit(R, np.random.default_rng(1))
    b = FunkSVD(cfg).fit(R, np.random.default_rng(2))
    assert not np.array_equal(a.item_factors, b.item_factors)


def test_stored_zeros_and_negative_values_are_observations():
    # user 0: an explicit 0 on item 0; user 1: -2 on item 1 and 4 on item 2; user 2: nothing
    R = sp.csr_matrix((np.array([0.0, -2.0, 4.0]), np.array([0, 1, 2]), np.array([0, 1, 3, 3])),
                      shape=(3, 4))
    assert R.nnz == 3
    m = FunkSVD(FunkSVDConfig(factors=2, epochs=5)).fit(R, np.random.default_rng(0))
    assert m.global_mean == pytest.approx(2.0 / 3.0)
    assert m.user_biases[0] != 0.0 and m.item_biases[0] != 0.0  # the 0 rating trained them
    mu, bu, bi = m.global_mean, m.user_biases, m.item_biases
    # user 0 and item 0 are known (rated 0): the full model; user 2 / item 3: unknown
    expected0 = mu + bu[0] + bi[0] + m.user_factors[0] @ m.item_factors[0]
    np.testing.assert_allclose(m.predict(np.array([0, 2, 0]), np.array([0, 0, 3])),
                               [expected0, mu + bi[0], mu + bu[0]], rtol=1e-12)
    dropped = R.copy()
    dropped.eliminate_zeros()
    other = FunkSVD(FunkSVDConfig(factors=2, epochs=5)).fit(dropped, np.random.default_rng(0))
    assert other.global_mean == pytest.approx(1.0)


def test_unknown_users_and_items_fall_back_to_the_known_biases():
    R = sp.csr_matrix(np.array([[5.0, 3.0, 0.0], [4.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    m = FunkSVD(FunkSVDConfig(factors=3, epochs=10)).fit(R, np.random.default_rng(0))
    mu, bu, bi = m.global_mean, m.user_biases, m.item_biases
    users = np.array([0, 2, -1, 9, 0, 1, -3, 2])
    items = np.array([2, 0, 1, 1, -1, 50, 7, 2])
    # item 2 and user 2 have no ratings; -1, 9, 50, 7 are outside the matrix
    expected = [mu + bu[0], mu + bi[0], mu + bi[1], mu + bi[1], mu + bu[0], mu + bu[1], mu, mu]
    out = m.predict(users, items)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert bu[2] == 0.0 and bi[2] == 0.0
    known = m.predict(np.array([1]), np.array([1]))
    np.testing.assert_allclose(known, mu + bu[1] + bi[1] + m.user_factors[1]
                               @ m.item_factors[1], rtol=1e-12)
    assert m.predict(np.array([], np.int64), np.array([], np.int64)).shape == (0,)


def test_without_biases_known_pairs_are_the_dot_product_and_unknown_ones_the_mean():
    R = sp.csr_matrix(np.array([[5.0, 3.0, 0.0], [4.0, 0.0, 0.0]]))
    m = FunkSVD(FunkSVDConfig(factors=2, epochs=3, biases=False)).fit(
        R, np.random.default_rng(0))
    assert np.all(m.user_biases == 0.0) and np.all(m.item_biases == 0.0)
    out = m.predict(np.array([0, 0, 5]), np.array([1, 2, 0]))
    np.testing.assert_allclose(out, [m.user_factors[0] @ m.item_factors[1], 4.0, 4.0],
                               rtol=1e-12)


def test_on_iteration_is_called_after_every_epoch_and_predict_works_inside():
    R = random_ratings(np.random.default_rng(0), 10, 8, 0.5)
    seen: list[tuple[int, float]] = []
    m = FunkSVD(FunkSVDConfig(factors=2, epochs=4))

    def hook(e: int, model: FunkSVD) -> None:
        assert model is m
        seen.append((e, float(m.predict(np.array([0]), np.array([0]))[0])))

    m.fit(R, np.random.default_rng(0), on_iteration=hook)
    assert [e for e, _ in seen] == [0, 1, 2, 3]
    assert len({p for _, p in seen}) == 4
    assert seen[-1][1] == m.predict(np.array([0]), np.array([0]))[0]


@pytest.mark.parametrize("field, value, message", [
    ("factors", -1, "factors must be an integer >= 0"),
    ("factors", 2.0, "factors must be an integer >= 0"),
    ("factors", True, "factors must be an integer >= 0"),
    ("lr", 0.0, "lr must be finite and > 0"),
    ("lr", float("inf"), "lr must be finite and > 0"),
    ("lr", "0.1", "lr must be finite and > 0"),
    ("reg", -0.1, "reg must be finite and >= 0"),
    ("reg", float("nan"), "reg must be finite and >= 0"),
    ("epochs", 0, "epochs must be an integer >= 1"),
    ("biases", 1, "biases must be True or False"),
    ("init_mean", float("nan"), "init_mean must be a finite number"),
    ("init_std", -0.1, "init_std must be finite and >= 0"),
])
def test_config_is_validated(field, value, message):
    with pytest.raises(DprecError, match=message):
        FunkSVDConfig(**{field: value})


def test_a_model_with_nothing_to_learn_is_refused():
    with pytest.raises(DprecError, match="factors must be >= 1 when biases is False"):
        FunkSVDConfig(factors=0, biases=False)
    FunkSVDConfig(factors=0, biases=True)


def test_fit_and_predict_validate_their_inputs():
    with pytest.raises(DprecError, match="not fitted"):
        FunkSVD().predict(np.array([0]), np.array([0]))
    with pytest.raises(DprecError, match="not fitted"):
        _ = FunkSVD().global_mean
    with pytest.raises(DprecError, match="scipy.sparse"):
        FunkSVD().fit(np.ones((2, 2)), np.random.default_rng(0))
    with pytest.raises(DprecError, match="at least one rating"):
        FunkSVD().fit(sp.csr_matrix((2, 2)), np.random.default_rng(0))
    with pytest.raises(DprecError, match="NaN or infinite"):
        FunkSVD().fit(sp.csr_matrix(np.array([[1.0, np.inf]])), np.random.default_rng(0))
    m = FunkSVD(FunkSVDConfig(factors=2, epochs=1)).fit(
        sp.csr_matrix(np.array([[1.0, 2.0]])), np.random.default_rng(0))
    with pytest.raises(DprecError, match="1-d arrays of equal length"):
        m.predict(np.array([0, 0]), np.array([0]))
    with pytest.raises(DprecError, match="items must hold integer indices"):
        m.predict(np.array([0]), np.array([0.5]))


def test_divergence_is_reported():
    R = random_ratings(np.random.default_rng(0), 20, 20, 0.5, low=100.0, high=500.0)
    with pytest.raises(DprecError, match="diverged.*lower lr"):
        FunkSVD(FunkSVDConfig(factors=5, lr=5.0, epochs=20)).fit(R, np.random.default_rng(0))


def _low_rank_ratings(seed=0, n_users=400, n_items=300, n=20_000, rank=3):
    """Ratings round(3.5 + b_u + b_i + p_u . q_i + noise) in 1..5, with an 80/20 split."""
    rng = np.random.default_rng(seed)
    pairs = rng.choice(n_users * n_items, n, replace=False)
    u, i = pairs // n_items, pairs % n_items
    P, Q = rng.normal(0, 0.5, (n_users, rank)), rng.normal(0, 0.5, (n_items, rank))
    bu, bi = rng.normal(0, 0.4, n_users), rng.normal(0, 0.4, n_items)
    r = np.clip(np.rint(3.5 + bu[u] + bi[i] + np.sum(P[u] * Q[i], 1)
                        + rng.normal(0, 0.4, n)), 1, 5)
    test = rng.random(n) < 0.2
    return u, i, r, test, (n_users, n_items)


@pytest.mark.slow
def test_rmse_matches_surprise_svd_on_the_same_split():
    surprise = pytest.importorskip("surprise")
    import pandas as pd

    u, i, r, test, shape = _low_rank_ratings()
    train = sp.csr_matrix((r[~test], (u[~test], i[~test])), shape=shape)
    df = pd.DataFrame({"u": u[~test], "i": i[~test], "r": r[~test]})
    trainset = surprise.Dataset.load_from_df(
        df, surprise.Reader(rating_scale=(1, 5))).build_full_trainset()
    ours, theirs = [], []
    for seed in range(3):
        p = np.clip(FunkSVD().fit(train, np.random.default_rng(seed)).predict(u[test], i[test]),
                    1, 5)
        ours.append(np.sqrt(np.mean((p - r[test]) ** 2)))
        algo = surprise.SVD(random_state=seed).fit(trainset)  # Surprise's defaults = ours
        q = np.array([algo.predict(a, b).est for a, b in zip(u[test].tolist(),
                                                             i[test].tolist(), strict=True)])
        theirs.append(np.sqrt(np.mean((q - r[test]) ** 2)))
    assert abs(np.mean(ours) - np.mean(theirs)) < 0.01, (ours, theirs)
    assert np.mean(ours) < 0.85 * np.std(r[test])  # and both learned something
