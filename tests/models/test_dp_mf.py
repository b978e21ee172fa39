"""DPSGD-MF and DPPS-MF (dprec.models.dp_mf): the injected noise, the clamp, the cap, the
calibration of both guarantees, and that the models learn."""

import math

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from dprec.errors import DprecError
from dprec.models.dp_mf import DPPSMF, DPSGDMF, ErrorPerturbation, cap_user_ratings
from dprec.models.dp_mf_config import DPPSMFConfig, DPSGDMFConfig
from dprec.models.funk_svd import FunkSVD, FunkSVDConfig
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.posterior import posterior_sample_epsilon


def low_rank_ratings(rng, n_users=300, n_items=120, n=9_000, noise=0.4):
    """Ratings on 1..5 from biases + a rank-3 signal, with (train, test) pairs split 80/20."""
    u = rng.integers(0, n_users, n)
    i = rng.integers(0, n_items, n)
    P, Q = rng.normal(0, 0.5, (n_users, 3)), rng.normal(0, 0.5, (n_items, 3))
    bu, bi = rng.normal(0, 0.4, n_users), rng.normal(0, 0.4, n_items)
    r = np.clip(np.rint(3.6 + bu[u] + bi[i] + np.sum(P[u] * Q[i], 1)
                        + rng.normal(0, noise, n)), 1, 5)
    m = sp.coo_matrix((r, (u, i)), shape=(n_users, n_items)).tocsr()
    m.sum_duplicates()
    m.data = np.clip(m.data, 1, 5)
    coo = m.tocoo()
    test = rng.random(coo.nnz) < 0.2
    train = sp.csr_matrix((coo.data[~test], (coo.row[~test], coo.col[~test])), shape=m.shape)
    return train, (coo.row[test], coo.col[test], coo.data[test])


def rmse(model, pairs):
    users, items, r = pairs
    return float(np.sqrt(np.mean((np.clip(model.predict(users, items), 1, 5) - r) ** 2)))


def train_mse(model, R):
    coo = R.tocoo()
    return float(np.mean((model.predict(coo.row, coo.col) - coo.data) ** 2))


def diagonal(n, rng):
    """n users, n items, user u rated item u only: every parameter is touched once an epoch."""
    r = rng.integers(1, 6, n).astype(float)
    return sp.csr_matrix((r, (np.arange(n), np.arange(n))), shape=(n, n)), r


def first_epoch_errors(cfg, seed, n=50_000):
    """The clamped noisy errors e' of epoch 1 and the noiseless errors e, read off the factors.

    With biases=False, factors=1, reg=0 and one rating per user and item, the first epoch
    moves U_u by exactly lr e'_u V_u from the initial values, which the documented draw order
    (U then V from N(0, init_std^2)) reproduces.
    """
    R, r = diagonal(n, np.random.default_rng(99))
    snapshot = {}
    model = DPSGDMF(cfg)
    model.fit(R, np.random.default_rng(seed),
              on_iteration=lambda e, _: snapshot.setdefault(e, model.user_factors[:, 0].copy()))
    init = np.random.default_rng(seed)
    U0 = cfg.init_std * init.standard_normal((n, 1))[:, 0]
    V0 = cfg.init_std * init.standard_normal((n, 1))[:, 0]
    noisy = (snapshot[0] - U0) / (cfg.lr * V0)
    clean = r - model.offset - U0 * V0
    return noisy, clean, model


SGD_DIAG = dict(factors=1, biases=False, reg=0.0, lr=1.0, init_std=1.0)


# -- DPSGD-MF: the mechanism ------------------------------------------------------------------


def test_laplace_scale_is_epochs_times_range_over_epsilon():
    mech = DPSGDMF(DPSGDMFConfig(epsilon=0.5, epochs=7, rating_min=1, rating_max=5)).mechanism
    assert mech.scale == pytest.approx(7 * 4 / 0.5, rel=1e-15)
    assert mech.epsilon_per_read == pytest.approx(0.5 / 7, rel=1e-15)
    assert mech.dp_event() == dp_accounting.LaplaceDpEvent(noise_multiplier=7 / 0.5)


@pytest.mark.parametrize("eps,epochs", [(0.1, 10), (1.0, 20), (10.0, 50), (3.0, 1)])
def test_basic_composition_over_the_epochs_is_exactly_epsilon_per_rating(eps, epochs):
    mech = ErrorPerturbation(eps, epochs, 4.0, 2.0)
    acc = BasicAccountant()
    assert acc.compose([(mech.dp_event(), epochs)]).epsilon == pytest.approx(eps, rel=1e-12)
    # one read more is over budget: the composition is tight at K reads
    assert acc.compose([(mech.dp_event(), epochs + 1)]).epsilon > eps * (1 + 0.5 / epochs)


def test_injected_noise_is_laplace_with_the_stated_scale():
    cfg = DPSGDMFConfig(epsilon=2.0, epochs=4, error_bound=1e9, **SGD_DIAG)
    b = 4 * 4.0 / 2.0  # K Dr / eps, computed here, not read from the model
    noisy, clean, _ = first_epoch_errors(cfg, seed=5)
    z = noisy - clean
    assert stats.kstest(z, "laplace", args=(0.0, b)).pvalue > 1e-3
    for wrong in (0.9 * b, 1.1 * b, b / 4):  # e.g. the per-epoch scale Dr / eps (K left out)
        assert stats.kstest(z, "laplace", args=(0.0, wrong)).pvalue < 1e-6


def test_the_error_is_clamped_after_the_noise():
    cfg = DPSGDMFConfig(epsilon=1e12, epochs=1, error_bound=0.5, **SGD_DIAG)
    noisy, clean, _ = first_epoch_errors(cfg, seed=6, n=2_000)
    np.testing.assert_allclose(noisy, np.clip(clean, -0.5, 0.5), atol=1e-6)
    cfg = DPSGDMFConfig(epsilon=1.0, epochs=1, error_bound=0.5, **SGD_DIAG)
    noisy, clean, _ = first_epoch_errors(cfg, seed=7, n=20_000)
    assert np.abs(noisy).max() <= 0.5 + 1e-9
    at_bound = np.abs(noisy) > 0.5 - 1e-9
    # P(|e + Lap(b)| > 0.5) is close to 1 for b = 4: almost every error is clamped
    assert 0.8 < at_bound.mean() < 1.0


def test_clamped_fraction_is_reported():
    cfg = DPSGDMFConfig(epsilon=1.0, epochs=1, error_bound=0.5, **SGD_DIAG)
    noisy, _, model = first_epoch_errors(cfg, seed=2, n=5_000)
    frac = model.diagnostics["noisy_errors_clamped_fraction"]
    assert frac == pytest.approx(np.mean(np.abs(noisy) > 0.5 - 1e-9), abs=1e-12)


def test_error_perturbation_object_matches_its_definition():
    mech = ErrorPerturbation(epsilon=1.0, epochs=5, sensitivity=4.0, error_bound=1.5)
    e = np.linspace(-3, 3, 200_001)
    out = mech(e, np.random.default_rng(0))
    assert np.abs(out).max() <= 1.5
    z = mech(np.zeros(100_000), np.random.default_rng(1))
    # below the clamp the output is e + Lap(20): P(|Lap(20)| <= 1.5) = 1 - exp(-1.5 / 20)
    assert np.mean(np.abs(z) < 1.5) == pytest.approx(1 - math.exp(-1.5 / 20), abs=0.005)


# -- DPSGD-MF: accounting, learning ------------------------------------------------------------


def test_event_log_holds_one_read_per_rating_and_epoch():
    train, _ = low_rank_ratings(np.random.default_rng(0), n=2_000)
    cfg = DPSGDMFConfig(epsilon=1.0, epochs=3, factors=2)
    model = DPSGDMF(cfg).fit(train, np.random.default_rng(0))
    event = model.mechanism.dp_event()
    n_u = np.diff(train.indptr)
    np.testing.assert_array_equal(model.events.counts(event, "interaction", "user"), 3 * n_u)
    np.testing.assert_array_equal(model.events.counts(event, "interaction", "event"),
                                  3 * (n_u > 0))
    assert model.events.rounds == frozenset({0, 1, 2})


def test_training_lowers_the_loss_at_large_epsilon():
    train, _ = low_rank_ratings(np.random.default_rng(1))
    model = DPSGDMF(DPSGDMFConfig(epsilon=1e9, epochs=15, factors=5))
    losses = []
    model.fit(train, np.random.default_rng(1), on_iteration=lambda e, _: losses.append(
        train_mse(model, train)))
    assert losses[-1] < 0.8 * losses[0]
    assert losses[-1] < float(np.var(train.data))


def test_huge_epsilon_is_close_to_non_private_funk_svd():
    train, test = low_rank_ratings(np.random.default_rng(2))
    mu = float(train.data.mean())
    shared = dict(factors=5, lr=0.01, reg=0.02, epochs=25, init_std=0.1)
    dp = DPSGDMF(DPSGDMFConfig(epsilon=1e12, error_bound=1e3, offset=mu, **shared))
    ref = FunkSVD(FunkSVDConfig(biases=True, **shared))
    a = rmse(dp.fit(train, np.random.default_rng(3)), test)
    b = rmse(ref.fit(train, np.random.default_rng(3)), test)
    assert abs(a - b) < 0.01
    assert a < float(np.std(test[2])) - 0.05  # and both learned something


def test_small_epsilon_hurts():
    train, test = low_rank_ratings(np.random.default_rng(4))
    fit = {eps: rmse(DPSGDMF(DPSGDMFConfig(epsilon=eps)).fit(train, np.random.default_rng(4)),
                     test) for eps in (1e6, 0.1)}
    assert fit[0.1] > fit[1e6] + 0.05


@pytest.mark.parametrize("cls,cfg", [(DPSGDMF, DPSGDMFConfig(epochs=2, factors=3)),
                                     (DPPSMF, DPPSMFConfig(epochs=2, factors=3,
                                                           batch_size=200))])
def test_same_seed_same_model_other_seed_other_model(cls, cfg):
    train, test = low_rank_ratings(np.random.default_rng(5), n=3_000)
    a = cls(cfg).fit(train, np.random.default_rng(8)).predict(test[0], test[1])
    b = cls(cfg).fit(train, np.random.default_rng(8)).predict(test[0], test[1])
    c = cls(cfg).fit(train, np.random.default_rng(9)).predict(test[0], test[1])
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("cls", [DPSGDMF, DPPSMF])
def test_predictions_are_clipped_and_unknown_indices_fall_back(cls):
    train, _ = low_rank_ratings(np.random.default_rng(6), n=2_000)
    model = cls().fit(train, np.random.default_rng(0))
    users = np.array([0, -1, 10**6, 3, -1])
    items = np.array([-1, 2, 4, 10**6, -7])
    p = model.predict(users, items)
    assert np.all((p >= 1) & (p <= 5))
    m = model.offset + model.global_bias
    assert p[0] == pytest.approx(np.clip(m + model.user_biases[0], 1, 5))
    assert p[1] == pytest.approx(np.clip(m + model.item_biases[2], 1, 5))
    assert p[4] == pytest.approx(np.clip(m, 1, 5))
    assert model.predict(np.array([], np.int64), np.array([], np.int64)).shape == (0,)


# -- DPPS-MF -----------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 40), st.floats(0.02, 0.6), st.integers(1, 12),
       st.integers(0, 2**32 - 1))
def test_cap_keeps_at_most_tau_of_each_users_ratings(n_users, n_items, density, tau, seed):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n_users, n_items)) < density,
                     rng.integers(1, 6, (n_users, n_items)), 0).astype(float)
    assume(dense.any())
    R = sp.csr_matrix(dense)
    out, removed = cap_user_ratings(R, tau, np.random.default_rng(seed))
    before, after = np.diff(R.indptr), np.diff(out.indptr)
    np.testing.assert_array_equal(after, np.minimum(before, tau))
    assert removed == int(np.sum(np.maximum(before - tau, 0)))
    kept = out.toarray()
    assert np.all((kept == 0) | (kept == dense))  # a subset, values unchanged
    small = before <= tau
    np.testing.assert_array_equal(kept[small], dense[small])


def test_cap_removes_uniformly_at_random():
    R = sp.csr_matrix(np.ones((1, 10)))
    kept = np.zeros(10)
    for seed in range(4_000):
        kept += cap_user_ratings(R, 3, np.random.default_rng(seed))[0].toarray()[0]
    # each rating kept with probability 3/10: chi-square over the 10 positions
    assert stats.chisquare(kept).pvalue > 1e-3
    assert kept.sum() == 3 * 4_000


def test_fit_caps_users_and_reports_it():
    rng = np.random.default_rng(7)
    dense = rng.integers(1, 6, (6, 80)).astype(float)
    dense[3:, 10:] = 0  # users 3..5 have 10 ratings, users 0..2 have 80
    R = sp.csr_matrix(dense)
    model = DPPSMF(DPPSMFConfig(max_ratings=25, epochs=1, batch_size=50)).fit(R, rng)
    assert model.diagnostics["ratings_removed_by_cap"] == 3 * 55
    assert model.diagnostics["users_capped"] == 3


def test_paper_calibration_and_true_epsilon():
    cfg = DPPSMFConfig(epsilon=2.0, max_ratings=200, temperature=1e-3, rating_min=1,
                       rating_max=5)
    assert cfg.bound == 16 * 200
    assert cfg.scale == pytest.approx(2.0 / (4 * 3200), rel=1e-15)
    assert cfg.true_epsilon == pytest.approx(2.0 / (2 * 1e-3), rel=1e-12)
    assert cfg.true_epsilon == posterior_sample_epsilon(cfg.target_scale, cfg.bound)
    exact = DPPSMFConfig(epsilon=2.0, temperature=1e-3, calibration="exact")
    assert exact.true_epsilon == pytest.approx(2.0, rel=1e-12)
    assert exact.scale == pytest.approx(1e-3 * 2.0 / (2 * 3200), rel=1e-15)


def _log_ratio_sup(cfg, ratings_a, ratings_b, others, grid):
    """sup over a 1-parameter model (every prediction = theta) of log pi_a / pi_b, where the
    data sets differ in one user's ratings; pi ~ exp(-(c / rho) E) on the grid."""
    k = cfg.target_scale
    lo, hi = cfg.rating_min, cfg.rating_max

    def energy(user):
        pred = np.clip(grid, lo, hi)[:, None]
        data = np.concatenate([user, others])
        return np.sum((data[None, :] - pred) ** 2, axis=1) + cfg.reg * grid**2

    la, lb = -k * energy(ratings_a), -k * energy(ratings_b)
    la -= np.logaddexp.reduce(la)
    lb -= np.logaddexp.reduce(lb)
    return float(np.max(np.abs(la - lb)))


def test_true_epsilon_bounds_the_exact_posterior_and_is_attained():
    grid = np.linspace(-40, 40, 40_001)
    others = np.array([3.0, 4.0, 2.0, 5.0, 1.0])
    # a strong prior puts the posterior mass where clip(r_hat) = r_min; the all-r_max and
    # all-r_min users then differ by B in the energy both in the density and in the normaliser
    cfg = DPPSMFConfig(epsilon=3.0, max_ratings=4, temperature=0.5, reg=200.0)
    worst = _log_ratio_sup(cfg, np.full(4, 5.0), np.full(4, 1.0), others, grid)
    assert cfg.true_epsilon == pytest.approx(3.0)
    assert cfg.true_epsilon - 1e-3 < worst <= cfg.true_epsilon + 1e-9
    cfg = DPPSMFConfig(epsilon=3.0, max_ratings=4, temperature=0.5, reg=0.1)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(1, 6, 4).astype(float), rng.integers(1, 6, 4).astype(float)
        assert _log_ratio_sup(cfg, a, b, others, grid) <= cfg.true_epsilon + 1e-9


def test_sampler_learns_at_large_epsilon():
    train, test = low_rank_ratings(np.random.default_rng(10))
    cfg = DPPSMFConfig(epsilon=1e7, calibration="exact", temperature=1.0, lr=3e-4,
                       factors=5, epochs=15, batch_size=500)
    model = DPPSMF(cfg)
    losses = []
    model.fit(train, np.random.default_rng(10), on_iteration=lambda e, _: losses.append(
        train_mse(model, train)))
    at_start = float(np.mean((train.data - model.offset) ** 2))  # U, V ~ N(0, 0.01), b = 0
    assert losses[-1] < 0.5 * at_start
    assert losses[-1] < losses[0]
    assert rmse(model, test) < float(np.std(test[2])) - 0.05


def test_global_bias_takes_a_preconditioned_step_regression():
    """g's gradient sums every rating: with the plain step h its update is h n mean(e), which
    overshot at h n > 2, pushed every prediction out of [r_min, r_max] where the clipped
    likelihood is flat, and left the chain there (all predictions 5 on ML-100K)."""
    train, test = low_rank_ratings(np.random.default_rng(13))
    cfg = DPPSMFConfig(epsilon=1e7, calibration="exact", temperature=1.0, lr=1e-3, factors=0,
                       epochs=5, batch_size=500)
    assert cfg.lr * train.nnz > 2 > cfg.lr * train.shape[0]
    model = DPPSMF(cfg).fit(train, np.random.default_rng(13))
    assert model.diagnostics["batch_predictions_outside_range_fraction"] < 0.05
    assert abs(model.offset + model.global_bias - train.data.mean()) < 0.2
    assert rmse(model, test) < float(np.std(test[2]))


def test_small_true_epsilon_gives_noise():
    train, test = low_rank_ratings(np.random.default_rng(11))
    sound = DPPSMFConfig(epsilon=1.0, calibration="exact", epochs=5, batch_size=500)
    model = DPPSMF(sound).fit(train, np.random.default_rng(11))
    assert rmse(model, test) > float(np.std(test[2]))


def test_sgld_noise_has_the_stated_variance():
    """With no data gradient (all predictions outside the range), reg = 0 and decay = 0, every
    parameter is a random walk with variance rho h / c per step."""
    R = sp.csr_matrix(np.full((200, 100), 5.0))
    cfg = DPPSMFConfig(epsilon=1.0, factors=20, reg=0.0, decay=0.0, lr=1e-3, temperature=1e-2,
                       epochs=3, batch_size=5_000, init_std=0.0, offset=1e6, max_ratings=100)
    model = DPPSMF(cfg).fit(R, np.random.default_rng(12))
    assert model.diagnostics["batch_predictions_outside_range_fraction"] == 1.0
    steps = model.diagnostics["sgld_steps"]
    var = steps * cfg.temperature * cfg.lr / cfg.scale
    walk = np.concatenate([model.user_factors.ravel(), model.item_factors.ravel(),
                           model.user_biases, model.item_biases]) / math.sqrt(var)
    assert stats.kstest(walk, "norm").pvalue > 1e-3
    assert stats.kstest(walk * math.sqrt(2), "norm").pvalue < 1e-6


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [DPSGDMFConfig, DPPSMFConfig])
@pytest.mark.parametrize("field,value", [
    ("epsilon", 0.0), ("epsilon", -1.0), ("epsilon", math.inf), ("epsilon", math.nan),
    ("factors", -1), ("factors", 2.5), ("lr", 0.0), ("reg", -0.1), ("epochs", 0),
    ("biases", "yes"), ("init_std", -1.0), ("rating_max", 1.0), ("offset", math.nan),
    ("epsilon", True),
])
def test_bad_config_names_the_field(cls, field, value):
    with pytest.raises(DprecError, match=field):
        cls(**{field: value})


@pytest.mark.parametrize("field,value", [
    ("temperature", 0.0), ("decay", -0.3), ("batch_size", 0), ("max_ratings", 0),
    ("calibration", "loose"),
])
def test_bad_sampler_config_names_the_field(field, value):
    with pytest.raises(DprecError, match=field):
        DPPSMFConfig(**{field: value})


def test_bad_error_bound_and_nothing_to_learn():
    with pytest.raises(DprecError, match="error_bound"):
        DPSGDMFConfig(error_bound=0.0)
    with pytest.raises(DprecError, match="factors must be >= 1 when biases is False"):
        DPSGDMFConfig(factors=0, biases=False)


@pytest.mark.parametrize("cls", [DPSGDMF, DPPSMF])
def test_bad_training_data_and_unfitted_use_are_refused(cls):
    with pytest.raises(DprecError, match="scipy.sparse"):
        cls().fit(np.ones((3, 3)), np.random.default_rng(0))
    with pytest.raises(DprecError, match="at least one rating"):
        cls().fit(sp.csr_matrix((3, 3)), np.random.default_rng(0))
    with pytest.raises(DprecError, match="NaN"):
        cls().fit(sp.csr_matrix(np.array([[np.nan, 1.0]])), np.random.default_rng(0))
    with pytest.raises(DprecError, match="not fitted"):
        cls().predict(np.array([0]), np.array([0]))


def test_out_of_range_ratings_are_clipped_and_counted():
    R = sp.csr_matrix(np.array([[0.0, 7.0, 3.0], [9.0, 2.0, -4.0]]))
    model = DPSGDMF(DPSGDMFConfig(epochs=1)).fit(R, np.random.default_rng(0))
    # 7, 9 and -4 lie outside [1, 5] (explicit zeros are not stored)
    assert model.diagnostics["ratings_clipped_to_range"] == 3


def test_bad_predict_arguments_are_refused():
    train, _ = low_rank_ratings(np.random.default_rng(6), n=500)
    model = DPSGDMF(DPSGDMFConfig(epochs=1)).fit(train, np.random.default_rng(0))
    with pytest.raises(DprecError, match="equal length"):
        model.predict(np.array([0, 1]), np.array([0]))
    with pytest.raises(DprecError, match="integer"):
        model.predict(np.array([0.5]), np.array([0]))
