import numpy as np
import pytest
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.models.als import implicit_mf_loss
from dprec.privacy.guarantee import reported_epsilon
from dprec.privacy.shuffle_attack import attack_lower_bound
from dprec.systems.fmf import client, server
from dprec.systems.fmf.system import FederatedMF, FMFConfig


def _data(n_users=60, n_items=25, density=0.2, seed=0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    return sp.csr_matrix((rng.random((n_users, n_items)) < density).astype(np.float64))


def _dense_gradient(X, V, R, alpha):
    """f(u, i) = c_ui (p_ui - x_u . v_i) x_u for every user and item (Eq. 5), naively."""
    d = R.toarray()
    c = 1.0 + alpha * d
    p = (d > 0).astype(float)
    return (c * (p - X @ V.T))[:, :, None] * X[:, None, :]  # (users, items, F)


def test_sampled_entries_match_the_dense_gradient():
    rng = np.random.default_rng(0)
    R, V = _data(), rng.normal(size=(25, 4))
    X = client.user_vectors(V, R, 2.0, 0.1)
    items, factors = client.sample_slots(60, 7, 25, 4, rng)
    got = client.gradient_entries(X, V, R, items, factors, 2.0)
    full = _dense_gradient(X, V, R, 2.0)
    want = full[np.arange(60)[:, None], items, factors]
    assert np.allclose(got, want)
    assert np.allclose(client.gradient_sum(X, V, R, 2.0), full.sum(0))


@pytest.mark.parametrize("mech", [None, BinaryMechanism(2.5), PiecewiseMechanism(2.5)])
def test_server_estimate_is_unbiased_with_the_stated_variance(mech):
    """Mean over many report rounds converges to the mean clipped gradient (Eq. 9)."""
    rng = np.random.default_rng(1)
    n_users, n_items, f, k = 40, 6, 2, 5
    clipped = np.clip(rng.normal(scale=0.8, size=(n_users, n_items, f)), -1, 1)
    target = clipped.mean(0)
    draws = []
    for _ in range(3000):
        items, factors = client.sample_slots(n_users, k, n_items, f, rng)
        x = clipped[np.arange(n_users)[:, None], items, factors]
        y = x if mech is None else mech(x.ravel(), rng).reshape(x.shape)
        draws.append(server.estimate_mean_gradient(items.ravel(), factors.ravel(), y.ravel(),
                                                   n_items, f))
    draws = np.array(draws)
    se = draws.std(0, ddof=1) / np.sqrt(len(draws))
    assert np.max(np.abs(draws.mean(0) - target) / se) < 5
    # closed form: a report is N F y e_if with (i, f) uniform, so per entry
    # Var = (N F mean_u E[y^2 | x_u] - mean_u x_u^2) / (n k), E[y^2 | x] = x^2 + Var_mech(x)
    second = clipped**2 + (0 if mech is None else mech.variance(clipped))
    var = (n_items * f * second.mean(0) - (clipped**2).mean(0)) / (n_users * k)
    assert np.allclose(draws.var(0, ddof=1), var, rtol=0.1)


def test_exact_federated_loss_falls_monotonically():
    R = _data(80, 30, 0.15, seed=2)
    cfg = FMFConfig(exact=True, lr=1e-3, epochs=15, server_steps=5, alpha=1.0,
                    regularization=1e-3, factors=4)
    losses = []

    model = FederatedMF("fcf", cfg)

    def record(epoch, V):
        X = client.user_vectors(model.V, R, cfg.alpha, cfg.regularization)
        losses.append(implicit_mf_loss(X, model.V, R, cfg.alpha, cfg.regularization))

    model.fit(R.astype(np.float32), np.random.default_rng(0), on_iteration=record)
    assert len(losses) == 15
    assert np.all(np.diff(losses) < 0)


def test_noise_free_sampled_reports_point_downhill():
    """Same sampling, no mechanism: the estimate correlates with the exact mean gradient."""
    rng = np.random.default_rng(3)
    R, V = _data(200, 20, 0.2, seed=4), rng.normal(scale=0.3, size=(20, 3))
    X = client.user_vectors(V, R, 1.0, 1e-3)
    exact = client.gradient_sum(X, V, R, 1.0) / 200
    items, factors = client.sample_slots(200, 60, 20, 3, rng)
    x = client.gradient_entries(X, V, R, items, factors, 1.0)
    est = server.estimate_mean_gradient(items.ravel(), factors.ravel(), x.ravel(), 20, 3)
    assert np.sum(est * exact) > 0.5 * np.linalg.norm(est) * np.linalg.norm(exact)
    loss0 = implicit_mf_loss(X, V, R, 1.0, 1e-3)
    V1 = server.descend(V, est, 1e-3, 1e-3, 1)
    assert implicit_mf_loss(X, V1, R, 1.0, 1e-3) < loss0


def test_ledger_stops_clients_and_training_copes():
    R = _data(50, 20, 0.3, seed=5).astype(np.float32)
    cfg = FMFConfig(epochs=5, k=4, epsilon=1.0, user_budget=8.0, shuffle_threshold=10)
    m = FederatedMF("fmf-ldp", cfg).fit(R, np.random.default_rng(0))
    d = m.diagnostics()
    assert d["clients_dropped_by_ledger"] == 50 and d["epochs_without_update"] == 3
    assert np.isfinite(m.score(R[:5], users=np.arange(5))).all()
    levels = m.privacy_report().to_json()["levels"]
    assert levels["user_basic"]["epsilon"] == pytest.approx(8.0)
    assert m.privacy_report().to_json()["rounds"]["updated"] == 2


def test_local_epsilon_counts_the_reports_that_were_sent_not_the_plan():
    # issue 32 §4: 5 epochs planned, the ledger (8 = 2 rounds of k x eps) stops every client
    # after 2: local.epsilon_user is what the log holds, 2 x 4 x 1.0, not 5 x 4 x 1.0
    R = _data(50, 20, 0.3, seed=5).astype(np.float32)
    cfg = FMFConfig(epochs=5, k=4, epsilon=1.0, user_budget=8.0, shuffle_threshold=10)
    rep = FederatedMF("fmf-ldp", cfg).fit(R, np.random.default_rng(0)).privacy_report().to_json()
    assert rep["local"]["epsilon_user"] == 8.0
    assert rep["local"]["epsilon_user"] == rep["levels"]["user_basic"]["epsilon"]
    assert rep["rounds"] == {**rep["rounds"], "planned": 5, "updated": 2}
    # a refused round is no report either: nothing reached the server, nothing was spent
    none = FederatedMF("fmf-ldp", FMFConfig(epochs=2, k=4, epsilon=1.0, shuffle_threshold=51,
                                            allow_no_update=True)).fit(
        R, np.random.default_rng(0)).privacy_report().to_json()
    assert none["local"]["epsilon_user"] == 0.0


@pytest.mark.parametrize("params, message", [
    ({"user_budget": 1.0}, "every client was stopped by its ledger"),
    ({"shuffle_threshold": 51}, "the shuffler refused every round"),
])
def test_a_run_where_nothing_reaches_the_server_is_an_error(params, message):
    R = _data(50, 20, 0.3, seed=5).astype(np.float32)
    cfg = FMFConfig(epochs=2, k=4, epsilon=1.0, **params)
    with pytest.raises(DprecError, match=message):
        FederatedMF("fmf-ldp", cfg).fit(R, np.random.default_rng(0))
    allowed = FederatedMF("fmf-ldp", FMFConfig(epochs=2, k=4, epsilon=1.0, allow_no_update=True,
                                               **params)).fit(R, np.random.default_rng(0))
    report = allowed.privacy_report().to_json()
    assert report["levels"]["user"]["epsilon"] == 0.0
    assert report["rounds"]["updated"] == 0


def test_privacy_report_sections():
    R = _data(50, 20, 0.3, seed=6).astype(np.float32)
    m = FederatedMF("fmf-ldp", FMFConfig(epochs=2, k=3, epsilon=2.0, shuffle_threshold=50)).fit(
        R, np.random.default_rng(0))
    rep = m.privacy_report().to_json()
    assert rep["claimed"]["epsilon"] == pytest.approx(6.0)
    assert rep["local"] == {"epsilon_per_report": 2.0, "epsilon_per_round": 6.0,
                            "epsilon_user": 12.0}
    assert rep["true"]["level"] == "user"
    assert rep["true"]["epsilon"] <= 12.0 + 1e-9
    # the interval [attack lower bound, accountant upper bound] beside the upper bound
    bounds = rep["bounds"]["user"]
    assert bounds["upper"] == rep["levels"]["user"]["epsilon"] == rep["true"]["epsilon"]
    assert bounds["lower"] == reported_epsilon(attack_lower_bound(2.0, 3, 50, 2, 1e-6), upper=False)
    assert 0 < bounds["lower"] <= bounds["upper"]
    assert "lies in [" in bounds["summary"] and "replace_one" in bounds["adjacency"]
    d = m.diagnostics()
    assert d["upload_bytes_per_client_epoch"] > 0
    assert d["download_bytes_per_client_epoch"] >= 20 * 5 * 4
    assert FederatedMF("fcf", FMFConfig(exact=True)).privacy_report() is None


def test_config_validation():
    with pytest.raises(DprecError, match="epsilon must be > 0"):
        FMFConfig(epsilon=0)
    with pytest.raises(DprecError, match="k must be >= 1"):
        FMFConfig(k=0)
    with pytest.raises(DprecError, match="mechanism"):
        FMFConfig(mechanism="gaussian")  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="epsilon must be <= 50"):
        FMFConfig(epsilon=1e6)
    with pytest.raises(DprecError, match="user_budget must be > 0"):
        FMFConfig(user_budget=-1.0)
    with pytest.raises(DprecError, match="shuffle_threshold must be >= 1"):
        FMFConfig(shuffle_threshold=0)
