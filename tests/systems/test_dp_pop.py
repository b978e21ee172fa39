"""dp-pop and ldp-pop: k-hot contributions, the noisy sums, one ranking for every user, and
the privacy report (Skellam accounting, secure-sum threat model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.privacy.skellam import SkellamDpEvent, skellam_epsilon, skellam_tight_epsilon
from dprec.protocol.secure_sum.curator import Curator
from dprec.systems.dp_pop.client import k_hot, noisy_vectors
from dprec.systems.dp_pop.server import rank_items
from dprec.systems.dp_pop.system import DpPop, DpPopConfig, LdpPop
from dprec.systems.registry import make_system


def _train() -> sp.csr_matrix:
    return synthetic(150, 60, 3_000, rng=5).binary()


def test_k_hot_keeps_at_most_k_of_the_users_items() -> None:
    train = _train()
    out = k_hot(train, 7, "uniform", np.random.default_rng(0))
    sizes = np.diff(train.indptr)
    np.testing.assert_array_equal(np.diff(out.indptr), np.minimum(sizes, 7))
    assert out.multiply(train != 0).nnz == out.nnz  # a subset of the user's items
    assert set(np.unique(out.data)) == {1}


def test_k_hot_uniform_is_uniform() -> None:
    """One user with 4 items, k = 1: each item is picked about 1/4 of the time."""
    row = sp.csr_matrix(np.array([[1, 0, 1, 1, 0, 1]]))
    rng = np.random.default_rng(1)
    picks = np.zeros(6)
    for _ in range(4000):
        picks += k_hot(row, 1, "uniform", rng).toarray()[0]
    np.testing.assert_allclose(picks[[0, 2, 3, 5]] / 4000, 0.25, atol=0.03)
    assert picks[[1, 4]].sum() == 0


def test_k_hot_recency_takes_the_latest_ties_by_item() -> None:
    train = sp.csr_matrix(np.array([[1, 1, 1, 1], [1, 1, 0, 1]]))
    ts = sp.csr_matrix(np.array([[5, 9, 7, 9], [3, 1, 0, 2]]))
    out = k_hot(train, 2, "recency", np.random.default_rng(0), ts).toarray()
    np.testing.assert_array_equal(out, [[0, 1, 0, 1], [1, 0, 0, 1]])
    with pytest.raises(DprecError, match="timestamps"):
        k_hot(train, 2, "recency", np.random.default_rng(0))


def test_each_client_draws_from_its_own_generator() -> None:
    """A client's noisy vector depends on (run seed, client id) only: the same whether it
    is drawn in one block with everyone or alone, and different under another run seed."""
    train = _train()
    ids = np.arange(train.shape[0])
    share = SkellamMechanism(30.0).share(train.shape[0])
    block = noisy_vectors(train, ids, 5, "uniform", share, 11)
    for u in (0, 7, 149):
        alone = noisy_vectors(train[u:u + 1], ids[u:u + 1], 5, "uniform", share, 11)
        np.testing.assert_array_equal(alone[0], block[u])
    assert not np.array_equal(noisy_vectors(train, ids, 5, "uniform", share, 12), block)
    # the k-hot part: a client's items, at most 5 (the noise is what a zero history gets)
    empty = sp.csr_matrix(train.shape, dtype=np.int64)
    signal = block - noisy_vectors(empty, ids, 5, "uniform", share, 11)
    assert set(np.unique(signal)) <= {0, 1}
    np.testing.assert_array_equal((signal > 0).sum(axis=1), np.minimum(np.diff(train.indptr), 5))
    assert (signal * (train.toarray() == 0)).sum() == 0


def test_secure_and_trusted_noise_have_the_same_law() -> None:
    """Noise of the secure sum (n shares of Sk(mu / n)) and the trusted draw: variance 2 mu."""
    contrib = sp.csr_matrix((40, 2_000), dtype=np.int64)
    mech = SkellamMechanism(5.0)
    secure = noisy_vectors(contrib, np.arange(40), 5, "uniform", mech.share(40), 4).sum(axis=0)
    curator = Curator(mech.mu)
    curator.start(np.random.default_rng(5))
    trusted = curator.noisy(np.zeros(2_000, np.int64), 0)
    assert secure.var() == pytest.approx(10.0, rel=0.1)
    assert trusted.var() == pytest.approx(10.0, rel=0.1)


def test_trusted_clients_send_their_exact_k_hot_vectors_and_the_curator_adds_the_noise(
        monkeypatch) -> None:
    train = _train()
    monkeypatch.setattr(Curator, "noisy", lambda self, total, round: total)
    model = make_system("dp-pop", {"k": "5", "aggregation": "trusted"}).fit(
        train, np.random.default_rng(0))
    counts = model.noisy_counts
    popularity = np.asarray(train.sum(axis=0)).ravel()
    assert counts.sum() == np.minimum(np.diff(train.indptr), 5).sum()
    assert counts.sum() == model.diagnostics()["simulation_only"]["contributed_items"]
    assert np.all((0 <= counts) & (counts <= popularity))


def test_ranking_ties_by_the_smaller_item() -> None:
    np.testing.assert_array_equal(rank_items(np.array([3, 5, 3, 5, 1])), [1, 3, 0, 2, 4])


@pytest.mark.parametrize("aggregation", ["secure", "trusted"])
def test_report_has_the_skellam_accounting(aggregation: str) -> None:
    train = _train()
    model = make_system("dp-pop", {"epsilon": "2", "k": "10", "aggregation": aggregation})
    model.fit(train, np.random.default_rng(0))
    doc = model.privacy_report().to_json()
    user = doc["levels"]["user"]
    mu = model.diagnostics()["mu"]
    assert user["epsilon"] == pytest.approx(
        skellam_tight_epsilon(SkellamDpEvent.k_hot(mu, 10), 1e-6)[0], rel=1e-5)
    assert user["epsilon"] < skellam_epsilon(SkellamDpEvent(mu, 10, math.sqrt(10)), 1e-6)
    assert any(n.startswith("analysis: PLD") for n in user["notes"])
    assert 1.99 <= user["epsilon"] <= 2.0 and user["delta"] == 1e-6
    assert doc["adjacency"] == ("zero_out" if aggregation == "secure" else "add_remove_one")
    assert doc["events"]["events"][0]["event"]["type"] == "SkellamDpEvent"
    want = "secure-sum" if aggregation == "secure" else "central"
    assert doc["model"] == want and user["model"] == want
    log = model.events.to_json()
    assert log["rounds"] == [0] and log["participants"] == {"0": train.shape[0]}
    if aggregation == "trusted":
        assert doc["threat_model"].startswith("central: a trusted curator sees every user's")
        assert "add/remove-one-user adjacency" in doc["threat_model"]
    if aggregation == "secure":
        assert doc["threat_model_assumptions"]["min_honest"] == train.shape[0]
        assert doc["threat_model_assumptions"]["server_proxy_collusion"] is False
        assert doc["secure_sum"]["gamma"] == 1.0 and doc["secure_sum"]["m"] >= 2
        assert doc["secure_sum"]["q"] >= 2 * train.shape[0]


def test_min_honest_scales_the_shares() -> None:
    train = _train()
    n = train.shape[0]
    model = DpPop("dp-pop", DpPopConfig(k=5, min_honest=n // 3)).fit(
        train, np.random.default_rng(0))
    info = model.diagnostics()
    assert info["total_mu"] == pytest.approx(info["mu"] * n / (n // 3))
    with pytest.raises(DprecError, match="secure only"):
        DpPopConfig(aggregation="trusted", min_honest=3)


def test_every_user_gets_the_same_list() -> None:
    train = _train()
    model = make_system("dp-pop", {"epsilon": "8"}).fit(train, np.random.default_rng(1))
    scores = model.score(train[:4], users=np.arange(4))
    assert np.all(scores == scores[0])
    np.testing.assert_array_equal(np.argsort(-scores[0], kind="stable"), model.ranking)


def test_ldp_pop_reports_one_pure_report_per_user() -> None:
    train = _train()
    model = LdpPop("ldp-pop", make_system("ldp-pop", {"epsilon": "1"}).config)
    model.fit(train, np.random.default_rng(0))
    doc = model.privacy_report().to_json()
    assert doc["levels"]["user"]["epsilon"] == 1.0
    assert doc["levels"]["user"]["delta"] == 0.0
    assert doc["mechanisms"][0]["q"] == pytest.approx(1 / (math.e + 1))


def test_ldp_pop_estimates_counts_without_bias() -> None:
    """pad = 1, one item per user: E[estimate_i] = number of users reporting i; the mean of
    the estimates over 200 runs is close to the true counts of one-item users."""
    n, d = 2_000, 5
    items = np.repeat(np.arange(d), [800, 600, 300, 200, 100])
    train = sp.csr_matrix((np.ones(n), (np.arange(n), items)), shape=(n, d))
    model = make_system("ldp-pop", {"epsilon": "2"})
    rng = np.random.default_rng(7)
    est = np.mean([model.fit(train, rng).noisy_counts for _ in range(200)], axis=0)
    np.testing.assert_allclose(est, [800, 600, 300, 200, 100], atol=25)
