import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.errors import DataError, DprecError
from dprec.models import ALSConfig, ImplicitALS, implicit_mf_loss, solve_user_factors


def dense_user_solve(V: np.ndarray, r: np.ndarray, alpha: float, reg: float) -> np.ndarray:
    """x_u = (V^T C_u V + reg I)^-1 V^T C_u p(u), straight from Hu et al. with dense C_u."""
    c = 1.0 + alpha * r
    p = (r > 0).astype(float)
    A = V.T @ (c[:, None] * V) + reg * np.eye(V.shape[1])
    return np.linalg.solve(A, V.T @ (c * p))


def dense_loss(U, V, R, alpha, reg):
    D = R.toarray()
    c = 1.0 + alpha * D
    return float(np.sum(c * ((D > 0) - U @ V.T) ** 2) + reg * (np.sum(U**2) + np.sum(V**2)))


def random_observations(rng, n_users, n_items, density):
    mask = rng.random((n_users, n_items)) < density
    values = rng.integers(1, 6, (n_users, n_items)).astype(float)
    return sp.csr_matrix(np.where(mask, values, 0.0))


def block_holdout(n_blocks=3, size=6):
    """Block-diagonal likes; user k of each block has item k of its block held back."""
    n = n_blocks * size
    full = np.zeros((n, n))
    held = np.empty(n, np.int64)
    for g in range(n_blocks):
        block = slice(g * size, (g + 1) * size)
        full[block, block] = 1.0
        for k in range(size):
            held[g * size + k] = g * size + k
    train = full.copy()
    train[np.arange(n), held] = 0.0
    return sp.csr_matrix(train), held


def test_solve_matches_dense_per_user_solve():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(50, 7))
    R = random_observations(rng, 30, 50, 0.15)
    R = sp.csr_matrix(sp.vstack([R, sp.csr_matrix((1, 50))]))  # an empty user
    alpha, reg = 3.0, 0.05
    X = solve_user_factors(V, R, alpha, reg)
    expected = np.stack([dense_user_solve(V, R[u].toarray().ravel(), alpha, reg)
                         for u in range(R.shape[0])])
    np.testing.assert_allclose(X, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(X[-1], 0.0)


@settings(max_examples=25, deadline=None)
@given(
    n_items=st.integers(1, 20),
    n_users=st.integers(1, 8),
    factors=st.integers(1, 6),
    alpha=st.floats(0.0, 50.0),
    reg=st.floats(1e-3, 10.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_solve_matches_dense_solve_property(n_items, n_users, factors, alpha, reg, seed):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(n_items, factors))
    R = random_observations(rng, n_users, n_items, 0.4)
    X = solve_user_factors(V, R, alpha, reg)
    D = R.toarray()
    expected = np.stack([dense_user_solve(V, D[u], alpha, reg) for u in range(n_users)])
    np.testing.assert_allclose(X, expected, rtol=1e-6, atol=1e-6)


def test_solve_uses_given_gram_and_accepts_float32():
    rng = np.random.default_rng(1)
    V = rng.normal(size=(40, 5)).astype(np.float32)
    R = random_observations(rng, 10, 40, 0.2).astype(np.float32)
    gram = V.astype(np.float64).T @ V.astype(np.float64)
    a = solve_user_factors(V, R, 2.0, 0.1)
    b = solve_user_factors(V, R, 2.0, 0.1, gram=gram)
    assert a.dtype == np.float64 and a.shape == (10, 5)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    # a wrong Gram matrix must change the answer: the argument is really used
    c = solve_user_factors(V, R, 2.0, 0.1, gram=2 * gram)
    assert not np.allclose(a, c)


def test_solve_sums_duplicate_entries_like_scipy():
    V = np.random.default_rng(2).normal(size=(4, 2))
    dup = sp.csr_matrix((np.array([1.0, 2.0]), np.array([1, 1]), np.array([0, 2])), shape=(1, 4))
    summed = sp.csr_matrix(np.array([[0.0, 3.0, 0.0, 0.0]]))
    np.testing.assert_allclose(solve_user_factors(V, dup, 1.5, 0.1),
                               solve_user_factors(V, summed, 1.5, 0.1))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"reg": 0.0}, DprecError, "reg must be > 0, got 0.0"),
        ({"alpha": -1.0}, DprecError, "alpha must be finite and >= 0, got -1.0"),
        ({"R": sp.csr_matrix(np.array([[0.0, -1.0, 0.0]]))}, DataError, "r_ui >= 0"),
        ({"R": sp.csr_matrix(np.ones((2, 4)))}, DprecError, "R must have 3 columns"),
        ({"R": np.ones((2, 3))}, DprecError, "scipy.sparse"),
        ({"gram": np.eye(3)}, DprecError, r"gram must have shape \(2, 2\)"),
        ({"solver": "lu"}, DprecError, "solver must be one of cholesky, cg, got 'lu'"),
        ({"solver": "cg", "cg_steps": 0}, DprecError, "cg_steps must be an integer >= 1, got 0"),
        ({"solver": "cg", "x0": np.zeros((2, 2))}, DprecError,
         r"x0 must have shape \(3, 2\), got \(2, 2\)"),
        ({"x0": np.zeros((3, 2))}, DprecError, "x0 is a starting point for solver='cg'"),
    ],
)
def test_solve_rejects_bad_input(kwargs, error, match):
    args = {"V": np.ones((3, 2)), "R": sp.csr_matrix(np.eye(3)), "alpha": 1.0, "reg": 0.1}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        solve_user_factors(**args)


def test_loss_matches_dense_computation():
    rng = np.random.default_rng(3)
    R = random_observations(rng, 25, 35, 0.2)
    U = rng.normal(size=(25, 4))
    V = rng.normal(size=(35, 4))
    assert implicit_mf_loss(U, V, R, 7.0, 0.3) == pytest.approx(
        dense_loss(U, V, R, 7.0, 0.3), rel=1e-10)


def test_loss_rejects_mismatched_shapes():
    R = sp.csr_matrix(np.eye(3))
    with pytest.raises(DprecError, match="one row per user"):
        implicit_mf_loss(np.ones((2, 2)), np.ones((3, 2)), R, 1.0, 0.1)
    with pytest.raises(DprecError, match="same number of factors"):
        implicit_mf_loss(np.ones((3, 2)), np.ones((3, 3)), R, 1.0, 0.1)


def test_loss_decreases_every_iteration():
    rng = np.random.default_rng(4)
    R = random_observations(rng, 60, 80, 0.08)
    model = ImplicitALS(ALSConfig(factors=8, iterations=12, alpha=10.0, regularization=0.1))
    model.fit(R, np.random.default_rng(5), track_loss=True)
    losses = np.array(model.loss_history)
    assert len(losses) == 12
    assert np.all(np.diff(losses) < 0), losses
    assert losses[-1] == pytest.approx(
        dense_loss(model.user_factors, model.item_factors, R, 10.0, 0.1), rel=1e-10)


def test_each_half_step_is_the_exact_block_minimiser():
    """Perturbing a solved user factor can only increase the objective."""
    rng = np.random.default_rng(6)
    R = random_observations(rng, 10, 20, 0.3)
    V = rng.normal(size=(20, 3))
    U = solve_user_factors(V, R, 5.0, 0.2)
    best = implicit_mf_loss(U, V, R, 5.0, 0.2)
    for _ in range(20):
        assert implicit_mf_loss(U + 1e-3 * rng.normal(size=U.shape), V, R, 5.0, 0.2) > best


def test_held_back_item_is_each_users_top_new_item():
    R, held = block_holdout()
    model = ImplicitALS(ALSConfig(factors=6, iterations=15, alpha=10.0, regularization=0.01))
    model.fit(R, np.random.default_rng(7))
    users = np.arange(R.shape[0])
    scores = model.score(users)
    scores[R.toarray() > 0] = -np.inf
    np.testing.assert_array_equal(np.argmax(scores, axis=1), held)


def test_score_is_user_factors_times_item_factors():
    R, _ = block_holdout()
    model = ImplicitALS(ALSConfig(factors=4, iterations=3)).fit(R, np.random.default_rng(8))
    users = np.array([3, 0, 3])
    s = model.score(users)
    assert s.shape == (3, R.shape[1])
    np.testing.assert_allclose(s, model.user_factors[users] @ model.item_factors.T)
    assert model.score(np.array([], dtype=np.int64)).shape == (0, R.shape[1])
    with pytest.raises(DprecError, match=r"users must be in \[0, 18\)"):
        model.score(np.array([18]))


def test_fit_is_deterministic_given_the_seed():
    R = random_observations(np.random.default_rng(9), 20, 30, 0.2)
    cfg = ALSConfig(factors=5, iterations=4)
    a = ImplicitALS(cfg).fit(R, np.random.default_rng(10)).item_factors
    b = ImplicitALS(cfg).fit(R, np.random.default_rng(10)).item_factors
    c = ImplicitALS(cfg).fit(R, np.random.default_rng(11)).item_factors
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_unfitted_model_raises():
    with pytest.raises(DprecError, match="not fitted"):
        ImplicitALS().score(np.array([0]))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factors": 0}, "factors must be an integer >= 1, got 0"),
        ({"factors": 2.5}, "factors must be an integer >= 1, got 2.5"),
        ({"regularization": 0.0}, "regularization must be > 0, got 0.0"),
        ({"alpha": float("nan")}, "alpha must be finite and >= 0, got nan"),
        ({"iterations": 0}, "iterations must be an integer >= 1, got 0"),
        ({"init_scale": -1.0}, "init_scale must be > 0, got -1.0"),
        ({"solver": "exact"}, "solver must be one of cholesky, cg, got 'exact'"),
        ({"cg_steps": 0}, "cg_steps must be an integer >= 1, got 0"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(DprecError, match=match):
        ALSConfig(**kwargs)


def test_agrees_with_implicit_library_from_the_same_start():
    """Independent implementation: implicit's exact (Cholesky) ALS, fed r + 1/alpha so that
    its c_ui = alpha * data equals our 1 + alpha r_ui, started from our initial V."""
    als = pytest.importorskip("implicit.cpu.als")
    rng = np.random.default_rng(12)
    R = random_observations(rng, 40, 30, 0.2)
    cfg = ALSConfig(factors=6, iterations=5, alpha=3.0, regularization=0.05)
    ours = ImplicitALS(cfg).fit(R, np.random.default_rng(13))
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1, "blas"):  # implicit warns otherwise
        theirs = als.AlternatingLeastSquares(
            factors=6, regularization=0.05, alpha=3.0, iterations=5, use_cg=False,
            dtype=np.float64, num_threads=1, random_state=0)
    theirs.item_factors = cfg.init_scale * np.random.default_rng(13).standard_normal((30, 6))
    theirs.user_factors = np.zeros((40, 6))
    data = R.copy()
    data.data += 1.0 / cfg.alpha
    theirs.fit(data, show_progress=False)
    np.testing.assert_allclose(ours.item_factors, theirs.item_factors, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.user_factors, theirs.user_factors, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- conjugate-gradient solver


def _implicit_reference_cg():
    """implicit's pure-Python least_squares_cg (the reference its Cython kernel is tested
    against); its native kernel differs from it by ~1e-8, so the reference is the oracle."""
    return pytest.importorskip("implicit.cpu.als").least_squares_cg


def _confidences(R, alpha):
    C = R.copy()
    C.data = 1.0 + alpha * C.data
    return C


@pytest.mark.parametrize("steps", [1, 3, 5])
def test_cg_step_matches_implicit_reference(steps):
    least_squares_cg = _implicit_reference_cg()
    rng = np.random.default_rng(20)
    R = random_observations(rng, 30, 25, 0.25)
    V = 0.3 * rng.normal(size=(25, 5))
    x0 = 0.1 * rng.normal(size=(30, 5))
    theirs = x0.copy()
    least_squares_cg(_confidences(R, 3.0), theirs, V, 0.05, cg_steps=steps)
    ours = solve_user_factors(V, R, 3.0, 0.05, solver="cg", cg_steps=steps, x0=x0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    assert not np.allclose(ours, x0)


def test_cg_fit_matches_alternating_implicit_reference_steps():
    """A whole CG fit: users then items, each warm-started, as implicit's fit does."""
    least_squares_cg = _implicit_reference_cg()
    rng = np.random.default_rng(21)
    R = random_observations(rng, 40, 30, 0.2)
    cfg = ALSConfig(factors=6, iterations=4, alpha=4.0, regularization=0.05, solver="cg")
    ours = ImplicitALS(cfg).fit(R, np.random.default_rng(22))
    V = cfg.init_scale * np.random.default_rng(22).standard_normal((30, 6))
    U = np.zeros((40, 6))
    C = _confidences(R, cfg.alpha)
    CT = C.T.tocsr()
    for _ in range(cfg.iterations):
        least_squares_cg(C, U, V, cfg.regularization, cg_steps=cfg.cg_steps)
        least_squares_cg(CT, V, U, cfg.regularization, cg_steps=cfg.cg_steps)
    np.testing.assert_allclose(ours.item_factors, V, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.user_factors, U, rtol=1e-9, atol=1e-12)


def test_cg_with_enough_steps_is_the_exact_solve():
    """CG on an F x F system converges in F steps: with cg_steps >= F it is the Cholesky solve."""
    rng = np.random.default_rng(23)
    R = random_observations(rng, 20, 40, 0.3)
    V = rng.normal(size=(40, 4))
    exact = solve_user_factors(V, R, 2.0, 0.1)
    cg = solve_user_factors(V, R, 2.0, 0.1, solver="cg", cg_steps=12)
    np.testing.assert_allclose(cg, exact, rtol=1e-8, atol=1e-10)
    few = solve_user_factors(V, R, 2.0, 0.1, solver="cg", cg_steps=1)
    assert np.max(np.abs(few - exact)) > 1e-3  # one step is not the solution
    empty = sp.csr_matrix((2, 40))
    np.testing.assert_array_equal(solve_user_factors(V, empty, 2.0, 0.1, solver="cg"), 0.0)


def test_cg_fit_finds_the_held_back_items_and_approaches_the_exact_loss():
    R, held = block_holdout()
    cfg = ALSConfig(factors=6, iterations=15, alpha=10.0, regularization=0.01, solver="cg")
    model = ImplicitALS(cfg).fit(R, np.random.default_rng(7), track_loss=True)
    scores = model.score(np.arange(R.shape[0]))
    scores[R.toarray() > 0] = -np.inf
    np.testing.assert_array_equal(np.argmax(scores, axis=1), held)
    exact = ImplicitALS(ALSConfig(factors=6, iterations=15, alpha=10.0, regularization=0.01))
    exact.fit(R, np.random.default_rng(7), track_loss=True)
    assert model.loss_history[-1] == pytest.approx(exact.loss_history[-1], rel=0.05)


@pytest.mark.parametrize("f,n", [(32, 128), (13, 19), (9, 1), (3, 8)])
def test_gram_block_is_two_ordered_chains_per_product(f, n):
    # every entry must be (even-q chain) + (odd-q chain), each summed in order of q: the
    # fixed order that makes the numbers the same for any SIMD width
    from dprec.models.als import _add_gram_upper

    Bt = np.random.default_rng(f * n).standard_normal((128, f))
    A = np.ones((f, f))
    _add_gram_upper(Bt, n, A, np.empty((2, f, f)))
    for a in range(f):
        for c in range(a, f):
            even = odd = 0.0
            for q in range(0, n, 2):
                even += Bt[q, a] * Bt[q, c]
            for q in range(1, n, 2):
                odd += Bt[q, a] * Bt[q, c]
            assert A[a, c] == 1.0 + (even + odd)
