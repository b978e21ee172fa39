import numpy as np
import pytest
import scipy.sparse as sp
from test_bpr import block_data, held_out_auc

from dprec.data.dataset import Dataset
from dprec.errors import DataError, DprecError
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import LeaveOneOutSplit
from dprec.models.gmf import GMF, GMFConfig
from dprec.systems.central import TrainedOnObfuscated
from dprec.systems.registry import make_config, make_system


def low_rank_data(seed=0, n_users=300, n_items=200, rank=3):
    """0/1 draws of sigma(a_ui) with a rank-3 affinity and no item effect: every item is
    about equally popular, so only the latent structure predicts a held-out item."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_users, rank))
    Y = rng.standard_normal((n_items, rank))
    logits = 3.0 * X @ Y.T / np.sqrt(rank) - 3.0
    D = rng.random((n_users, n_items)) < 1.0 / (1.0 + np.exp(-logits))
    D[np.arange(n_users), rng.integers(0, n_items, n_users)] = True  # >= 1 per user
    D[np.arange(n_users), rng.integers(0, n_items, n_users)] = True
    return sp.csr_matrix(D.astype(np.float64))


def hr10(make):
    """Sampled HR@10 (49 negatives, random leave-one-out, seed 0) by the project evaluator."""
    exp = Experiment(Dataset("low-rank", low_rank_data()), [0], LeaveOneOutSplit("random"),
                     RankingEvaluator(49, (10,)))
    return exp.run(make).metrics["sampled"]["HR@10"]["mean"]


def test_gmf_on_true_data_beats_popularity_and_random():
    gmf = hr10(lambda: TrainedOnObfuscated("gmf-true", GMF(), None))  # the defaults
    pop = hr10(lambda: make_system("popularity"))
    rand = hr10(lambda: make_system("random"))
    assert rand < 0.3 and pop < 0.4  # 10 of 50 candidates: 0.2 by chance
    assert gmf > 0.6
    assert gmf > pop + 0.25 and gmf > rand + 0.3


def test_held_out_auc_on_block_data():
    R, held = block_data()
    model = GMF(GMFConfig(factors=8, epochs=20, lr=0.05)).fit(R, np.random.default_rng(1))
    assert held_out_auc(model.score(np.arange(R.shape[0])), R, held) > 0.8


def test_fit_is_bit_identical_for_the_same_seed():
    R = low_rank_data(seed=1, n_users=60, n_items=50)
    cfg = GMFConfig(factors=4, epochs=3)
    a = GMF(cfg).fit(R, np.random.default_rng(4))
    b = GMF(cfg).fit(R, np.random.default_rng(4))
    c = GMF(cfg).fit(R, np.random.default_rng(5))
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    np.testing.assert_array_equal(a.h, b.h)
    assert a.bias == b.bias and a.loss_history == b.loss_history
    assert not np.allclose(a.item_factors, c.item_factors)


def test_fit_leaves_the_global_random_state_alone():
    R = low_rank_data(seed=2, n_users=30, n_items=20)
    np.random.seed(123)
    before = np.random.random(3)
    np.random.seed(123)
    GMF(GMFConfig(factors=2, epochs=2)).fit(R, np.random.default_rng(0))
    np.testing.assert_array_equal(np.random.random(3), before)


def test_user_factors_times_item_factors_rank_as_the_gmf_logit():
    R = low_rank_data(seed=3, n_users=40, n_items=30)
    model = GMF(GMFConfig(factors=5, epochs=3)).fit(R, np.random.default_rng(0))
    P = model.user_factors / model.h  # h starts at ones and stays away from 0 here
    logits = np.einsum("uf,if,f->ui", P, model.item_factors, model.h) + model.bias
    users = np.arange(40)
    np.testing.assert_allclose(model.score(users), logits, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.user_factors @ model.item_factors.T + model.bias, logits,
                               rtol=1e-10, atol=1e-12)
    assert model.bias != 0.0  # one positive for four negatives: the bias is learned


@pytest.mark.parametrize("y", [0.0, 1.0])
def test_sgd_step_is_the_gradient_of_the_log_loss(y):
    """One step moves every parameter by -lr (dL/dtheta + reg theta) for p and q and by
    -lr dL/dtheta for h and b, checked against central finite differences of
    L = -y ln sigma(z) - (1 - y) ln(1 - sigma(z)), z = h . (p * q) + b."""
    from dprec.models.gmf import _sgd_step

    rng = np.random.default_rng(0)
    f, lr, reg = 4, 1e-3, 0.1
    P, Q, h, b = rng.normal(size=(2, f)), rng.normal(size=(3, f)), rng.normal(size=f), \
        np.array([0.3])

    def loss(p, q, hh, bb):
        z = hh @ (p * q) + bb
        return np.logaddexp(0.0, -z) if y == 1.0 else np.logaddexp(0.0, z)

    p0, q0, h0, b0 = P[1].copy(), Q[2].copy(), h.copy(), b[0]
    others = P[0].copy(), Q[[0, 1]].copy()
    step_loss = _sgd_step(P, Q, h, b, 1, 2, y, lr, reg)
    assert step_loss == pytest.approx(loss(p0, q0, h0, b0), rel=1e-12)

    def num_grad(k):
        g = np.zeros(f if k < 3 else 1)
        for a in range(g.size):
            args = [p0.copy(), q0.copy(), h0.copy(), np.array([b0])]
            args[k][a] += 1e-6
            up = loss(args[0], args[1], args[2], args[3][0])
            args[k][a] -= 2e-6
            down = loss(args[0], args[1], args[2], args[3][0])
            g[a] = (up - down) / 2e-6
        return g

    np.testing.assert_allclose((p0 - P[1]) / lr, num_grad(0) + reg * p0, rtol=1e-6)
    np.testing.assert_allclose((q0 - Q[2]) / lr, num_grad(1) + reg * q0, rtol=1e-6)
    np.testing.assert_allclose((h0 - h) / lr, num_grad(2), rtol=1e-6)
    np.testing.assert_allclose((b0 - b) / lr, num_grad(3), rtol=1e-6)
    np.testing.assert_array_equal(P[0], others[0])  # other rows untouched
    np.testing.assert_array_equal(Q[[0, 1]], others[1])


def test_loss_goes_down_over_epochs():
    model = GMF(GMFConfig(factors=8, epochs=10, lr=0.05)).fit(low_rank_data(),
                                                             np.random.default_rng(0))
    losses = np.array(model.loss_history)
    assert losses.shape == (10,)
    assert model.diagnostics["epoch_loss"] == model.loss_history
    assert np.all(np.diff(losses) < 0), losses
    assert losses[-1] < 0.75 * losses[0]


def test_full_and_empty_users_are_skipped_and_counted():
    """A user with every item has no negative to sample: skipped (the fit must end), counted,
    and their embedding stays at its initial value."""
    rng = np.random.default_rng(10)
    D = (rng.random((20, 15)) < 0.3).astype(float)
    D[0] = 1.0
    D[1] = 0.0
    D[2] = 1.0
    D[2, 7] = 0.0  # one negative only: always item 7
    cfg = GMFConfig(factors=3, epochs=4)
    model = GMF(cfg).fit(sp.csr_matrix(D), np.random.default_rng(12))
    assert model.diagnostics["users_without_negatives"] == 1
    assert model.diagnostics["users_without_positives"] == 1
    assert model.diagnostics["instances_per_epoch"] == D[2:].sum() * 5  # users 2..19
    P_init = cfg.init_scale * np.random.default_rng(12).standard_normal((20, 3))
    np.testing.assert_array_equal(model.user_factors[[0, 1]], P_init[[0, 1]] * model.h)
    assert not np.allclose(model.user_factors[2:], P_init[2:] * model.h)


def test_no_user_with_a_negative_and_a_positive():
    with pytest.raises(DataError, match="no user with both a positive and a negative"):
        GMF().fit(sp.csr_matrix(np.ones((3, 4))), np.random.default_rng(0))
    with pytest.raises(DataError, match="no user with both a positive and a negative"):
        GMF().fit(sp.csr_matrix((3, 4)), np.random.default_rng(0))


def test_bad_input_unfitted_and_divergence():
    with pytest.raises(DprecError, match="scipy.sparse"):
        GMF().fit(np.ones((2, 2)), np.random.default_rng(0))
    for attr in ("user_factors", "item_factors", "h", "bias"):
        with pytest.raises(DprecError, match="not fitted"):
            getattr(GMF(), attr)
    with pytest.raises(DprecError, match="lower lr"):
        GMF(GMFConfig(lr=1e300, epochs=2)).fit(low_rank_data(n_users=8, n_items=8),
                                               np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factors": 0}, "factors must be an integer >= 1, got 0"),
        ({"factors": 2.0}, "factors must be an integer >= 1, got 2.0"),
        ({"epochs": 0}, "epochs must be an integer >= 1, got 0"),
        ({"epochs": True}, "epochs must be an integer >= 1, got True"),
        ({"lr": 0.0}, "lr must be > 0, got 0.0"),
        ({"lr": float("nan")}, "lr must be > 0, got nan"),
        ({"regularization": -0.1}, "regularization must be finite and >= 0, got -0.1"),
        ({"regularization": float("inf")}, "regularization must be finite and >= 0, got inf"),
        ({"negatives": 0}, "negatives must be an integer >= 1, got 0"),
        ({"negatives": 1.5}, "negatives must be an integer >= 1, got 1.5"),
        ({"init_scale": 0}, "init_scale must be > 0, got 0"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(DprecError, match=match):
        GMFConfig(**kwargs)


def test_kth_absent_item_matches_brute_force():
    from dprec.models.gmf import _kth_absent

    rng = np.random.default_rng(0)
    for density in (0.0, 0.1, 0.5, 0.9, 0.99):
        row = np.flatnonzero(rng.random(40) < density).astype(np.int64)
        absent = np.setdiff1d(np.arange(40), row)
        padded = np.concatenate([[7, 3], row, [1]]).astype(np.int64)  # a row inside indices
        got = [_kth_absent(padded, 2, 2 + row.size, k) for k in range(absent.size)]
        np.testing.assert_array_equal(got, absent)


def test_negative_sampler_is_uniform_over_the_non_interacted_items():
    """Chi-square over 100,000 draws per user: a sparse row, a 95% full row, one gap."""
    from scipy.stats import chisquare

    from dprec.models.bpr import _positives
    from dprec.models.gmf import _sample_negatives

    n_items = 60
    D = np.zeros((3, n_items))
    D[0, np.random.default_rng(1).choice(n_items, 6, replace=False)] = 1.0
    D[1, np.random.default_rng(2).choice(n_items, 57, replace=False)] = 1.0
    D[2] = 1.0
    D[2, 13] = 0.0
    pos = _positives(sp.csr_matrix(D))
    for u in range(3):
        users = np.full(100_000, u, np.int64)
        out = np.empty_like(users)
        _sample_negatives(pos.indptr, pos.indices, users, n_items, np.random.default_rng(u), out)
        negatives = np.flatnonzero(D[u] == 0)
        assert np.all(D[u, out] == 0.0)
        counts = np.bincount(out, minlength=n_items)[negatives]
        assert counts.sum() == users.size
        if negatives.size > 1:
            assert chisquare(counts).pvalue > 1e-4


def test_registered_gmf_trains_on_flipped_data_with_bpr_mfs_guarantee():
    R = low_rank_data(seed=5, n_users=80, n_items=60)
    system = make_system("gmf", config=make_config("gmf", {"epochs": 2, "factors": 4,
                                                           "epsilon": 0.5}))
    assert isinstance(system, TrainedOnObfuscated) and isinstance(system.model, GMF)
    assert system.model.config == GMFConfig(epochs=2, factors=4)
    system.fit(R, np.random.default_rng(0))
    s = system.score(R[:5], users=np.arange(5))
    assert s.shape == (5, 60) and np.all(np.isfinite(s))
    # trained on the flipped matrix: many more positives than R has
    assert system.model.diagnostics["instances_per_epoch"] > 1.5 * R.nnz * 5
    bpr = make_system("bpr-mf", {"epochs": 1, "epsilon": 0.5}).fit(R, np.random.default_rng(0))
    gmf_report, bpr_report = system.privacy_report().to_json(), bpr.privacy_report().to_json()
    assert gmf_report["true"] == bpr_report["true"]
    assert gmf_report["true"]["epsilon"] == pytest.approx(0.5)
    assert gmf_report["claimed"] == bpr_report["claimed"]
    assert system.parameters()["epsilon"] == 0.5


def test_registry_defaults_are_the_papers_epsilon():
    cfg = make_config("gmf")
    assert cfg.epsilon == 1.0 and cfg.negatives == 4
    with pytest.raises(DprecError, match="gmf: negatives must be an integer >= 1"):
        make_config("gmf", {"negatives": "0"})
