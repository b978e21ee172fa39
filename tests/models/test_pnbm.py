"""PNBM (seed 004): Eq. 2 by hand, the gradient by finite differences, Algorithm 1's clamp and
noise scale (exact formulas, KS tests, a wrong scale rejected), Algorithm 2's cap, H and
noise, top-Nk sparsity, determinism and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from dprec.errors import DprecError
from dprec.mechanisms.gradient_laplace import GradientLaplace, error_bound, gradient_sensitivity
from dprec.models.pnbm import DPPSPNBM, DPSGDPNBM, PNBM, pair_inclusion_probability
from dprec.models.pnbm_config import DPPSPNBMConfig, DPSGDPNBMConfig, PNBMConfig
from dprec.models.pnbm_kernels import (
    Data,
    batch_gradient,
    cap_user_ratings,
    corated_neighbours,
    item_means,
)
from dprec.privacy.posterior import posterior_sample_epsilon

KS_PASS = 1e-3  # a correct sampler fails with probability 1e-3
KS_FAIL = 1e-8  # a wrong scale must be rejected far below this


def tiny() -> sp.csr_matrix:
    """u0: i0=5, i1=3, i2=4;  u1: i0=3, i1=1, i3=2;  u2: i1=4, i2=2, i3=5."""
    rows = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    cols = [0, 1, 2, 0, 1, 3, 1, 2, 3]
    vals = [5, 3, 4, 3, 1, 2, 4, 2, 5]
    return sp.csr_matrix((np.array(vals, float), (rows, cols)), shape=(3, 4))


def full_neighbours(n: int) -> np.ndarray:
    return np.array([[j for j in range(n) if j != i] for i in range(n)])


def random_ratings(seed: int, n_users: int = 40, n_items: int = 15, density: float = 0.5,
                   ) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    vals = rng.integers(1, 6, (n_users, n_items)).astype(float)
    return sp.csr_matrix(np.where(mask, vals, 0.0))


def reference_predict(R: sp.csr_matrix, S: np.ndarray, u: int, i: int, C: float = 0.0) -> float:
    """Eq. 2 straight from the dense matrices."""
    D = R.toarray()
    rated = D > 0
    means = np.array([D[rated[:, j], j].mean() for j in range(D.shape[1])])
    js = [j for j in range(D.shape[1]) if j != i and rated[u, j]]
    num = sum(S[i, j] * (D[u, j] - means[j]) for j in js)
    den = sum(abs(S[i, j]) for j in js)
    d = max(den, C)
    return means[i] + (num / d if d > 0 else 0.0)


# -- Eq. 2 -------------------------------------------------------------------------------------


def test_prediction_known_answer():
    # item means: i0 4, i1 8/3, i2 3, i3 3.5; u0's deviations: i0 +1, i1 +1/3, i2 +1.
    # s_30 = 0.5, s_31 = -0.2, s_32 = 1.0:
    # r_hat(u0, i3) = 3.5 + (0.5 - 0.2/3 + 1.0) / (0.5 + 0.2 + 1.0)
    S = np.zeros((4, 4))
    S[3, :3] = [0.5, -0.2, 1.0]
    S[0, 1:] = [0.3, 0.6, -0.4]
    nbr = full_neighbours(4)
    W = np.take_along_axis(S, nbr, 1)
    m = PNBM.from_weights(tiny(), nbr, W)
    expected = 3.5 + (0.5 - 0.2 / 3 + 1.0) / 1.7
    assert m.predict(np.array([0]), np.array([3]))[0] == pytest.approx(expected, abs=1e-12)
    # u2 has no rating of i0's neighbours... it rates i1, i2, i3: 4 - 8/3, 2 - 3, 5 - 3.5
    expected_20 = 4.0 + (0.3 * (4 - 8 / 3) + 0.6 * (2 - 3) - 0.4 * 1.5) / 1.3
    assert m.predict(np.array([2]), np.array([0]))[0] == pytest.approx(expected_20, abs=1e-12)
    floored = PNBM.from_weights(tiny(), nbr, W, PNBMConfig(min_norm=2.0))
    assert floored.predict(np.array([0]), np.array([3]))[0] == pytest.approx(
        3.5 + (0.5 - 0.2 / 3 + 1.0) / 2.0, abs=1e-12)


def test_prediction_matches_dense_reference_and_falls_back():
    R = random_ratings(1)
    rng = np.random.default_rng(2)
    n = R.shape[1]
    nbr = full_neighbours(n)
    S = rng.normal(size=(n, n))
    m = PNBM.from_weights(R, nbr, np.take_along_axis(S, nbr, 1), PNBMConfig(min_norm=0.7))
    users, items = rng.integers(0, R.shape[0], 60), rng.integers(0, n, 60)
    ref = [reference_predict(R, S, u, i, 0.7) for u, i in zip(users, items, strict=True)]
    np.testing.assert_allclose(m.predict(users, items), ref, rtol=1e-12, atol=1e-12)
    means = item_means(R)
    out = m.predict(np.array([-1, 10**6, 0]), np.array([3, 3, n + 5]))
    np.testing.assert_allclose(out, [means[3], means[3], R.data.mean()], rtol=1e-12)


# -- the gradient (Eq. 5) ----------------------------------------------------------------------


def _loss(R, nbr, W, batch, C):
    data = Data.of(R, item_means(R))
    m = PNBM.from_weights(R, nbr, W, PNBMConfig(min_norm=C))
    pred = m.predict(data.rows[batch], data.indices[batch])
    return 0.5 * float(np.sum((pred - data.r[batch]) ** 2)), pred - data.r[batch]


@pytest.mark.parametrize("C", [0.0, 3.0])
def test_gradient_matches_finite_differences(C):
    R = random_ratings(3, 12, 8, 0.6)
    rng = np.random.default_rng(4)
    nbr = full_neighbours(8)
    W = rng.uniform(0.2, 1.0, nbr.shape) * rng.choice([-1, 1], nbr.shape)
    batch = np.arange(R.nnz)
    G, sq = batch_gradient(Data.of(R, item_means(R)), batch, nbr, W, item_means(R), C)
    f0, e = _loss(R, nbr, W, batch, C)
    assert sq == pytest.approx(float(np.sum(e**2)), rel=1e-12)
    num = np.zeros_like(W)
    h = 1e-6
    for idx in np.ndindex(W.shape):
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        num[idx] = (_loss(R, nbr, Wp, batch, C)[0] - _loss(R, nbr, Wm, batch, C)[0]) / (2 * h)
    np.testing.assert_allclose(G, num, atol=1e-6)


def _one_rating_gradient(R, nbr, W, pos):
    """e (x_uj - p sgn s_ij) / den for one rating, unclamped, from the dense formulas."""
    data = Data.of(R, item_means(R))
    u, i = data.rows[pos], data.indices[pos]
    x = dict(zip(data.indices[data.indptr[u]:data.indptr[u + 1]],
                 data.x[data.indptr[u]:data.indptr[u + 1]], strict=True))
    num = sum(W[i, c] * x[j] for c, j in enumerate(nbr[i]) if j in x)
    den = sum(abs(W[i, c]) for c, j in enumerate(nbr[i]) if j in x)
    p = num / den
    e = item_means(R)[i] + p - data.r[pos]
    f = np.array([(x[j] - p * np.sign(W[i, c])) if j in x else 0.0
                  for c, j in enumerate(nbr[i])])
    return e, f / den, i


def test_error_clamp_is_applied():
    R = random_ratings(5, 10, 6, 0.8)
    nbr = full_neighbours(6)
    W = np.random.default_rng(6).uniform(0.5, 1.5, nbr.shape)
    data, means = Data.of(R, item_means(R)), item_means(R)
    pos = next(q for q in range(R.nnz) if abs(_one_rating_gradient(R, nbr, W, q)[0]) > 0.3)
    e, df, i = _one_rating_gradient(R, nbr, W, pos)
    for e_max in (0.1, 0.25):
        G, _ = batch_gradient(data, np.array([pos]), nbr, W, means, 0.0, e_max=e_max)
        np.testing.assert_allclose(G[i], np.clip(e, -e_max, e_max) * df, atol=1e-12)
        assert np.abs(G).max() <= e_max * np.abs(df).max() + 1e-12
    G, _ = batch_gradient(data, np.array([pos]), nbr, W, means, 0.0)
    np.testing.assert_allclose(G[i], e * df, atol=1e-12)


def test_factor_clamp_is_applied():
    R = random_ratings(7, 10, 6, 0.8)
    nbr = full_neighbours(6)
    W = np.random.default_rng(8).uniform(0.5, 1.5, nbr.shape)
    data, means = Data.of(R, item_means(R)), item_means(R)
    e, df, i = _one_rating_gradient(R, nbr, W, 0)
    den = sum(abs(W[i, c]) for c, j in enumerate(nbr[i])
              if j in set(data.indices[data.indptr[0]:data.indptr[1]]))
    f_max = 0.5 * np.abs(df * den).max()
    G, _ = batch_gradient(data, np.array([0]), nbr, W, means, 0.0, f_max=f_max)
    np.testing.assert_allclose(G[i], e * np.clip(df * den, -f_max, f_max) / den, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), t=st.integers(1, 30), C=st.sampled_from([1.0, 5.0, 10.0]),
       scale=st.floats(0.01, 100.0))
def test_one_rating_moves_each_entry_by_at_most_half_the_sensitivity(seed, t, C, scale):
    """Algorithm 1's bound: |e_ui dr_hat/ds_ij| <= e_max(t) phi / C = DeltaF_t / 2."""
    R = random_ratings(seed, 8, 7, 0.7)
    assume(R.nnz > 0)
    rng = np.random.default_rng(seed)
    nbr = full_neighbours(7)
    W = scale * rng.normal(size=nbr.shape)
    data, means = Data.of(R, item_means(R)), item_means(R)
    pos = int(rng.integers(R.nnz))
    G, _ = batch_gradient(data, np.array([pos]), nbr, W, means, C, e_max=error_bound(t, 4.0),
                          f_max=4.0)
    assert np.abs(G).max() <= gradient_sensitivity(t, 4.0, C) / 2 + 1e-12


# -- Algorithm 1: the noise --------------------------------------------------------------------


def test_bounds_and_scale_known_answers():
    assert error_bound(1, 4.0) == 2.0  # 0.5 + 3/2
    assert error_bound(5, 4.0) == 1.0  # 0.5 + 3/6
    assert gradient_sensitivity(1, 4.0, 10.0) == pytest.approx(1.6)  # 2 * 2 * 4 / 10
    mech = GradientLaplace(epsilon=2.0, iterations=5, batch_fraction=0.5, phi=4.0, min_norm=10)
    assert mech.scale(1) == pytest.approx(2.0)  # 0.5 * 5 * 1.6 / 2
    assert mech.scale(5) == pytest.approx(0.5 * 5 * 0.8 / 2)
    assert mech.dp_event(3).noise_multiplier == pytest.approx(0.5 * 5 / (2.0 * 3))


def test_injected_noise_is_laplace_with_the_stated_scale():
    mech = GradientLaplace(epsilon=0.7, iterations=4, batch_fraction=0.3, phi=4.0, min_norm=10)
    b = mech.scale(2)
    z = mech(np.zeros((200, 250)), 2, np.random.default_rng(9)).ravel()
    assert stats.kstest(z, stats.laplace(scale=b).cdf).pvalue > KS_PASS
    assert np.std(z) == pytest.approx(math.sqrt(2) * b, rel=0.02)
    # the authors' sampler has standard deviation b (scale b / sqrt 2): must be rejected
    assert stats.kstest(z, stats.laplace(scale=b / math.sqrt(2)).cdf).pvalue < KS_FAIL
    assert stats.kstest(z, stats.laplace(scale=1.2 * b).cdf).pvalue < KS_FAIL


def constant_ratings(n_users=60, n_items=80, per_user=30, value=3.0, seed=10) -> sp.csr_matrix:
    """Every rating equals ``value``: item means are ``value``, every error and gradient 0."""
    rng = np.random.default_rng(seed)
    D = np.zeros((n_users, n_items))
    for u in range(n_users):
        D[u, rng.choice(n_items, per_user, replace=False)] = value
    return sp.csr_matrix(D)


def test_dpsgd_update_adds_exactly_the_stated_noise():
    """With a zero gradient and lambda = 0, S1 = S0 - eta beta Lap(b_1): recover the noise."""
    cfg = DPSGDPNBMConfig(epsilon=0.5, iterations=3, batch_fraction=0.5, reg=0.0, lr=0.1,
                          init_scale=10.0, min_norm=10.0)
    seen = []
    m = DPSGDPNBM(cfg)
    m.fit(constant_ratings(), np.random.default_rng(11),
          on_iteration=lambda t, _: seen.append(m.weights.copy()) if t == 0 else None)
    z = ((m.initial_weights - seen[0]) / (cfg.lr * cfg.init_scale)).ravel()
    b = 0.5 * 3 * (2 * (0.5 + 3 / 2) * 4 / 10) / 0.5  # gamma K DeltaF_1 / eps
    assert m.mechanism.scale(1) == pytest.approx(b)
    assert stats.kstest(z, stats.laplace(scale=b).cdf).pvalue > KS_PASS
    assert stats.kstest(z, stats.laplace(scale=b / math.sqrt(2)).cdf).pvalue < KS_FAIL


# -- training ----------------------------------------------------------------------------------


def test_sgd_lowers_the_training_objective():
    R = random_ratings(12, 60, 20, 0.5)
    cfg = PNBMConfig(init="random", lr=0.05, iterations=20, batch_fraction=1.0, reg=0.01,
                     neighbours=10)
    m = PNBM(cfg).fit(R, np.random.default_rng(13))
    before = PNBM.from_weights(R, m.neighbours, m.initial_weights, cfg).objective(R)
    assert m.objective(R) < 0.9 * before
    assert m.loss_history[-1] < m.loss_history[0]


def test_top_nk_sparsity_is_kept():
    R = random_ratings(14, 50, 20, 0.4)
    m = PNBM(PNBMConfig(neighbours=5, iterations=3, lr=0.1)).fit(R, np.random.default_rng(0))
    S = m.similarity()
    assert S.shape == (20, 20)
    np.testing.assert_array_equal(np.diff(S.indptr), 5)
    assert not (m.neighbours == np.arange(20)[:, None]).any()
    B = (R.toarray() > 0).astype(int)
    co = B.T @ B
    for i in range(20):
        order = sorted((j for j in range(20) if j != i), key=lambda j: (-co[i, j], j))[:5]
        assert m.neighbours[i].tolist() == sorted(order)
    big = PNBM(PNBMConfig(neighbours=500, iterations=1)).fit(R, np.random.default_rng(0))
    assert big.neighbours.shape == (20, 19)


def test_corated_neighbours_refuses_too_many():
    with pytest.raises(DprecError, match="k must be <= n_items - 1"):
        corated_neighbours(random_ratings(0, 5, 4), 4)


@pytest.mark.parametrize("cls,cfg", [
    (PNBM, PNBMConfig(iterations=4, neighbours=6)),
    (DPSGDPNBM, DPSGDPNBMConfig(iterations=3, neighbours=6, min_ratings=3)),
    (DPPSPNBM, DPPSPNBMConfig(iterations=4, neighbours=6, tau=5)),
])
def test_same_seed_same_model(cls, cfg):
    R = random_ratings(15, 40, 12, 0.5)
    a = cls(cfg).fit(R, np.random.default_rng(3))
    b = cls(cfg).fit(R, np.random.default_rng(3))
    c = cls(cfg).fit(R, np.random.default_rng(4))
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.weights, c.weights)
    users, items = np.arange(40), np.arange(40) % 12
    np.testing.assert_array_equal(a.predict(users, items), b.predict(users, items))


def test_dpsgd_trains_only_users_with_enough_ratings():
    R = random_ratings(16, 40, 30, 0.5)
    n_u = np.diff(R.indptr)
    m = DPSGDPNBM(DPSGDPNBMConfig(iterations=1, min_ratings=16)).fit(
        R, np.random.default_rng(0))
    np.testing.assert_array_equal(m.train_users_, np.flatnonzero(n_u >= 16))
    with pytest.raises(DprecError, match="min_ratings"):
        DPSGDPNBM(DPSGDPNBMConfig(min_ratings=1000)).fit(R, np.random.default_rng(0))


# -- Algorithm 2 -------------------------------------------------------------------------------


def test_cap_keeps_at_most_tau_uniformly():
    R = random_ratings(17, 30, 40, 0.6)
    n_u = np.diff(R.indptr)
    capped = cap_user_ratings(R, 10, np.random.default_rng(0))
    np.testing.assert_array_equal(np.diff(capped.indptr), np.minimum(n_u, 10))
    assert ((capped != 0).multiply(R != 0)).nnz == capped.nnz  # a subset of R
    np.testing.assert_array_equal(capped.data, R[capped.nonzero()].A1)
    small = np.flatnonzero(n_u <= 10)
    assert (capped[small] != R[small]).nnz == 0
    heavy = int(np.argmax(n_u))
    kept = np.zeros(R.shape[1])
    for s in range(400):
        kept += cap_user_ratings(R, 10, np.random.default_rng(s))[heavy].toarray().ravel() > 0
    freq = kept[R[heavy].indices] / 400
    p = 10 / n_u[heavy]
    assert np.abs(freq - p).max() < 5 * math.sqrt(p * (1 - p) / 400)


def test_dpps_caps_users_at_tau():
    R = random_ratings(18, 30, 40, 0.6)
    m = DPPSPNBM(DPPSPNBMConfig(tau=12, iterations=2)).fit(R, np.random.default_rng(0))
    assert m.max_user_ratings_ == 12
    assert m.removed_ == int(np.maximum(np.diff(R.indptr) - 12, 0).sum())


def test_pair_inclusion_probability_by_enumeration_and_sampling():
    counts = np.array([1, 2, 0, 3])  # n = 6 ratings: item of each rating below
    item_of = np.repeat(np.arange(4), counts)
    nbr = full_neighbours(4)
    H = pair_inclusion_probability(counts, nbr, 6, 3)
    both = np.zeros((4, 4))
    for draw in np.ndindex(6, 6, 6):  # all 216 equally likely batches with replacement
        present = np.zeros(4, bool)
        present[item_of[list(draw)]] = True
        both += np.outer(present, present)
    np.testing.assert_allclose(H, np.take_along_axis(both / 216, nbr, 1), atol=1e-12)
    counts = np.array([1, 5, 400, 2000, 3])
    n, L = int(counts.sum()), 300
    H = pair_inclusion_probability(counts, full_neighbours(5), n, L)
    rng = np.random.default_rng(0)
    item_of = np.repeat(np.arange(5), counts)
    hits = np.zeros((5, 5))
    for _ in range(4000):
        present = np.zeros(5, bool)
        present[item_of[rng.integers(0, n, L)]] = True
        hits += np.outer(present, present)
    emp = np.take_along_axis(hits / 4000, full_neighbours(5), 1)
    assert np.abs(emp - H).max() < 5 * math.sqrt(0.25 / 4000)
    # tiny probabilities keep their digits: two draws hold items i and j w.p. 2 p_i p_j
    tiny_h = pair_inclusion_probability(np.array([1, 1, 10**9]), full_neighbours(3),
                                        10**9 + 2, 2)
    assert tiny_h[0, 0] == pytest.approx(2 / (10**9 + 2) ** 2, rel=1e-6)
    assert pair_inclusion_probability(np.array([1, 1, 10**9]), full_neighbours(3),
                                      10**9 + 2, 1)[0, 0] == pytest.approx(0.0, abs=1e-15)


def test_dpps_noise_has_variance_rho_eta():
    """With the drift switched off (eps -> 0, lambda = 0), S1 - S0 ~ N(0, rho eta_1)."""
    cfg = DPPSPNBMConfig(epsilon=1e-12, reg=0.0, lr=3.0, temperature=0.05, iterations=2)
    seen = []
    m = DPPSPNBM(cfg)
    m.fit(constant_ratings(value=4.0), np.random.default_rng(1),
          on_iteration=lambda t, _: seen.append(m.weights.copy()) if t == 0 else None)
    z = (seen[0] - m.initial_weights).ravel()
    sd = math.sqrt(0.05 * 3.0)
    assert stats.kstest(z, stats.norm(scale=sd).cdf).pvalue > KS_PASS
    assert stats.kstest(z, stats.norm(scale=sd * 1.25).cdf).pvalue < KS_FAIL


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,kw,match", [
    (PNBMConfig, {"neighbours": 0}, "neighbours must be an integer >= 1"),
    (PNBMConfig, {"lr": 0.0}, "lr must be a finite number > 0"),
    (PNBMConfig, {"reg": -1.0}, "reg must be a finite number >= 0"),
    (PNBMConfig, {"batch_fraction": 1.5}, "batch_fraction must be a finite number > 0"),
    (PNBMConfig, {"init": "cosine"}, "init must be 'pearson' or 'random'"),
    (PNBMConfig, {"rating_min": 5.0, "rating_max": 1.0}, "rating_min must be < rating_max"),
    (PNBMConfig, {"iterations": True}, "iterations must be an integer"),
    (DPSGDPNBMConfig, {"epsilon": 0.0}, "epsilon must be a finite number > 0"),
    (DPSGDPNBMConfig, {"min_norm": 0.0}, "min_norm must be a finite number > 0"),
    (DPSGDPNBMConfig, {"min_ratings": 0}, "min_ratings must be an integer >= 1"),
    (DPPSPNBMConfig, {"epsilon": math.inf}, "epsilon must be a finite number"),
    (DPPSPNBMConfig, {"decay": 1.5}, "decay must be a finite number >= 0 and <= 1"),
    (DPPSPNBMConfig, {"temperature": 0.0}, "temperature must be a finite number > 0"),
    (DPPSPNBMConfig, {"tau": 0}, "tau must be an integer >= 1"),
    (DPPSPNBMConfig, {"prior": "none"}, "prior must be 'debiased' or 'exact'"),
])
def test_configs_refuse_bad_values(cls, kw, match):
    with pytest.raises(DprecError, match=match):
        cls(**kw)


def test_fit_refuses_bad_ratings_and_predict_before_fit():
    bad = sp.csr_matrix(np.array([[6.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(DprecError, match=r"in \[rating_min, rating_max\]"):
        PNBM().fit(bad, np.random.default_rng(0))
    with pytest.raises(DprecError, match="at least 2 items"):
        PNBM().fit(sp.csr_matrix(np.ones((3, 1))), np.random.default_rng(0))
    with pytest.raises(DprecError, match="not fitted"):
        PNBM().predict(np.array([0]), np.array([0]))
    with pytest.raises(DprecError, match="strictly increasing"):
        PNBM.from_weights(tiny(), np.array([[1, 1, 2]] * 4), np.ones((4, 3)))


# -- DPPS-PNBM's target and guarantee (one convention with DPPS-MF) ----------------------------


def _one_step_drift(cfg: DPPSPNBMConfig, R: sp.csr_matrix,
                    seed: int) -> tuple[np.ndarray, np.ndarray, DPPSPNBM]:
    """(S0, drift) of one SGLD step: two runs on one seed differ only in rho, so their
    difference isolates the noise N(0, rho eta_1) and the rest is the drift."""
    runs = []
    for rho in (cfg.temperature, 4.0 * cfg.temperature):
        m = DPPSPNBM(DPPSPNBMConfig(**{**cfg.__dict__, "temperature": rho}))
        m.fit(R, np.random.default_rng(seed))
        runs.append(m)
    s0 = runs[0].initial_weights
    np.testing.assert_array_equal(s0, runs[1].initial_weights)
    sd = math.sqrt(cfg.temperature * cfg.lr)
    z = (runs[1].weights - runs[0].weights) / sd  # (2 sd - sd) z
    return s0, s0 + sd * z - runs[0].weights, runs[0]


def test_dpps_sampler_targets_beta_times_the_squared_errors():
    """The drift over the noise variance is the gradient of the log target: with one rating
    per batch (L = 1 of n = 4) it must equal beta (n / L) d(e_k^2)/dS for the drawn rating k,
    beta = eps / (8 B rho) = target_scale, not twice that (the eps / rho reading)."""
    R = sp.csr_matrix(np.array([[5.0, 1.0], [1.0, 3.0]]))
    cfg = DPPSPNBMConfig(epsilon=500.0, temperature=0.01, lr=1.0, reg=0.0, iterations=1,
                         batch_fraction=0.25, min_norm=1.0, neighbours=1)
    assert cfg.target_scale == pytest.approx(500.0 / (8 * 16 * 200 * 0.01))
    hits = 0
    for seed in range(6):
        s0, drift, model = _one_step_drift(cfg, R, seed)
        grad_log_target = 2.0 * drift / (cfg.temperature * cfg.lr)
        users, items = R.nonzero()
        found = []
        for u, i in zip(users, items, strict=True):
            def sq_error(W, u=u, i=i, nbr=model.neighbours):
                m = DPPSPNBM.from_weights(R, nbr, W, cfg)
                return (R[u, i] - m.predict(np.array([u]), np.array([i]))[0]) ** 2
            grad = np.zeros_like(s0)
            for idx in np.ndindex(s0.shape):
                h = np.zeros_like(s0)
                h[idx] = 1e-6
                grad[idx] = (sq_error(s0 + h) - sq_error(s0 - h)) / 2e-6
            found.append(np.allclose(grad_log_target, cfg.target_scale * 4 * grad, rtol=1e-5,
                                     atol=1e-9))
            assert not np.allclose(grad_log_target, 2 * cfg.target_scale * 4 * grad, rtol=1e-3)
        hits += any(found)
    assert hits == 6


def test_dpps_true_epsilon_is_the_shared_posterior_rule():
    cfg = DPPSPNBMConfig(epsilon=1.0, temperature=0.006, tau=200)
    assert cfg.true_epsilon == pytest.approx(1.0 / (4 * 0.006), rel=1e-12)  # 41.67, not 166.7
    assert cfg.true_epsilon == posterior_sample_epsilon(cfg.target_scale, cfg.loglik_bound)
