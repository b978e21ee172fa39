# ruff: noqa: E402  (torch is imported, or the module skipped, before the modules that need it)
"""Batched on-device training (torch.func) against one client at a time, and its data."""

from __future__ import annotations

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # an optional extra ('.[torch]'): skipped without it
import scipy.sparse as sp

from dprec.data.features import side_features
from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.models.local_training import (
    LocalTrainer,
    client_examples,
    epoch_orders,
    sample_unseen,
    split_examples,
)
from dprec.models.side_net import (
    SideFeatureNet,
    UserRows,
    from_vector,
    parameters_of,
    to_matrix,
    to_vector,
)


@functools.cache
def _setup():
    ds = synthetic(80, 60, 2_000, rng=3)
    f = side_features(ds)
    net = SideFeatureNet(f, ds.n_items, dim=8, hidden=(16, 8), seed=1)
    return ds, f, net


def _examples(clients, seed=0, ratio=1.0):
    ds, f, _ = _setup()
    users = UserRows.from_block(f.users)
    return client_examples(ds.matrix, clients, users.take(clients), np.random.default_rng(seed),
                           negative_ratio=ratio)


def test_client_examples_labels_and_negatives():
    ds, _, _ = _setup()
    clients = np.array([5, 0, 17])
    data = _examples(clients, ratio=2.0)
    for r, u in enumerate(clients):
        n = int(data.counts[r])
        items = data.items[r, :n].numpy()
        labels = data.labels[r, :n].numpy()
        row = ds.matrix[u]
        rated = dict(zip(row.indices.tolist(), row.data.tolist(), strict=True))
        n_pos = sum(v > 3 for v in rated.values())
        sampled = [i for i in items if i not in rated]
        # every rated item once with label 1[rating > 3]; 2 sampled unseen negatives per positive
        assert sorted(i for i in items if i in rated) == sorted(rated)
        for i, y in zip(items, labels, strict=True):
            assert y == (1.0 if i in rated and rated[i] > 3 else 0.0)
        assert len(sampled) == round(2.0 * n_pos)
        assert n == len(rated) + len(sampled)


def test_sample_unseen_never_returns_a_seen_item_and_covers_the_rest():
    seen = sp.csr_matrix(np.array([[1, 1, 0, 0, 1], [0, 0, 0, 0, 1]], np.float32))
    draws = sample_unseen(seen, np.array([0] * 4000 + [1] * 4000), np.random.default_rng(0))
    a, b = draws[:4000], draws[4000:]
    assert set(a) == {2, 3} and set(b) == {0, 1, 2, 3}
    # uniform over the unseen items (binomial sd of a share at n=4000 is < 0.01)
    assert abs(np.mean(a == 2) - 0.5) < 0.04
    assert np.all(np.abs(np.bincount(b, minlength=5)[:4] / 4000 - 0.25) < 0.04)


def test_sample_unseen_refuses_a_user_with_every_item():
    seen = sp.csr_matrix(np.ones((1, 3), np.float32))
    with pytest.raises(DprecError, match="every item"):
        sample_unseen(seen, np.array([0]), np.random.default_rng(0))


def test_epoch_orders_put_each_clients_examples_first_in_random_order():
    counts = np.array([3, 0, 5])
    orders = epoch_orders(counts, 5, 4, np.random.default_rng(0))
    assert orders.shape == (4, 3, 5)
    for e in range(4):
        for c, n in enumerate(counts):
            assert sorted(orders[e, c, :n]) == list(range(n))
            assert sorted(orders[e, c]) == list(range(5))
    assert len({tuple(orders[e, 2]) for e in range(4)}) > 1


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_batched_clients_equal_one_client_at_a_time(mu):
    _, _, net = _setup()
    data = _examples(np.array([1, 2, 3, 4, 5, 6, 7]), seed=2)
    orders = epoch_orders(data.counts, data.items.shape[1], 2, np.random.default_rng(1))
    theta0 = parameters_of(net)
    trainer = LocalTrainer(net)
    a = trainer.local_sgd(theta0, data, orders, 4, 0.1, mu, batched=True)
    b = trainer.local_sgd(theta0, data, orders, 4, 0.1, mu, batched=False)
    diff = (to_matrix(a) - to_matrix(b)).abs().max().item()
    moved = (to_matrix(a) - to_vector(theta0)[None]).abs().max().item()
    assert moved > 1e-3 and diff < 1e-5


def test_local_sgd_step_is_the_proximal_sgd_step():
    """One step of one client by hand: theta0 - lr (grad BCE + mu (theta - theta0)) with
    theta = theta0, i.e. the plain BCE gradient step; a second step feels the proximal pull."""
    _, _, net = _setup()
    data = _examples(np.array([9]), seed=4)
    n = int(data.counts[0])
    orders = np.arange(data.items.shape[1])[None, None, :]
    theta0 = parameters_of(net)
    trainer = LocalTrainer(net)
    out = trainer.local_sgd(theta0, data, orders, n, 0.2, 0.7)
    params = {k: v.clone().requires_grad_(True) for k, v in theta0.items()}
    u = data.users
    loss = trainer.bce(params, u.categorical[0], u.numeric[0], u.multi_hot[0],
                       data.items[0, :n], data.labels[0, :n], torch.ones(n))
    grads = torch.autograd.grad(loss, list(params.values()))
    for (k, v), g in zip(theta0.items(), grads, strict=True):
        torch.testing.assert_close(out[k][0], v - 0.2 * g, rtol=1e-5, atol=1e-6)


def test_maml_meta_gradient_matches_autograd_through_the_inner_step():
    _, _, net = _setup()
    data = _examples(np.array([3, 11]), seed=5)
    support, query = split_examples(data, np.random.default_rng(0))
    theta0 = parameters_of(net)
    trainer = LocalTrainer(net)
    g = trainer.maml_gradients(theta0, support, query, inner_steps=1, inner_lr=0.3)
    c = 1
    params = {k: v.clone().requires_grad_(True) for k, v in theta0.items()}
    u = data.users
    ns, nq = int(support.counts[c]), int(query.counts[c])
    inner = trainer.bce(params, u.categorical[c], u.numeric[c], u.multi_hot[c],
                        support.items[c, :ns], support.labels[c, :ns], torch.ones(ns))
    gi = torch.autograd.grad(inner, list(params.values()), create_graph=True)
    fast = {k: p - 0.3 * gk for (k, p), gk in zip(params.items(), gi, strict=True)}
    outer = trainer.bce(fast, u.categorical[c], u.numeric[c], u.multi_hot[c],
                        query.items[c, :nq], query.labels[c, :nq], torch.ones(nq))
    want = torch.autograd.grad(outer, list(params.values()))
    for k, w in zip(theta0, want, strict=True):
        torch.testing.assert_close(g[k][c], w, rtol=1e-4, atol=1e-6)


def test_split_examples_halves_each_client():
    data = _examples(np.array([0, 1, 2]), seed=6)
    s, q = split_examples(data, np.random.default_rng(0))
    for c in range(3):
        n = int(data.counts[c])
        both = sorted(s.items[c, :s.counts[c]].tolist() + q.items[c, :q.counts[c]].tolist())
        assert both == sorted(data.items[c, :n].tolist())
        assert s.counts[c] == n // 2


def test_parameter_vectors_round_trip_and_refuse_a_wrong_size():
    _, _, net = _setup()
    theta = parameters_of(net)
    back = from_vector(to_vector(theta), theta)
    for k in theta:
        torch.testing.assert_close(back[k], theta[k])
    with pytest.raises(DprecError, match="entries"):
        from_vector(torch.zeros(3), theta)


def test_scores_follow_each_users_own_parameters():
    ds, f, net = _setup()
    theta = parameters_of(net)
    stacked = {k: v.unsqueeze(0).repeat(2, *([1] * v.dim())) for k, v in theta.items()}
    stacked["mlp.4.bias"][1] += 1.0  # the output layer's bias of user 1
    users = UserRows.from_block(f.users).take([0, 0])
    s = LocalTrainer(net).scores(stacked, users, ds.n_items)
    torch.testing.assert_close(s[1] - s[0], torch.ones(ds.n_items))


def test_network_refuses_features_of_another_catalogue():
    ds, f, _ = _setup()
    with pytest.raises(DprecError, match="item features"):
        SideFeatureNet(f, ds.n_items + 1)
    with pytest.raises(DprecError, match="side features"):
        SideFeatureNet(None, ds.n_items)
