import numpy as np
import pytest
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.models.itemknn import score_user_neighbourhood, top_k_neighbours
from dprec.systems.dplcf import client, server
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits
from dprec.systems.dplcf.system import LocalItemCF, LocalItemCFConfig


def _random_binary(n_users=300, n_items=40, density=0.2, seed=0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    return sp.csr_matrix((rng.random((n_users, n_items)) < density).astype(np.float32))


def _counts(x: sp.csr_matrix, mech, rng, batch=64) -> server.PairCounts:
    c = server.PairCounts(x.shape[1])
    for s in range(0, x.shape[0], batch):
        c.add(client.obfuscate(x[s:s + batch], mech, rng))
    return c


def test_exact_jaccard_without_noise():
    x = _random_binary()
    est = server.estimate_similarity(_counts(x, None, None), None, "naive")
    d = x.toarray()
    inter = d.T @ d
    union = d.sum(0)[:, None] + d.sum(0)[None, :] - inter
    assert np.allclose(est.sim, inter / union, atol=1e-6)
    assert est.clipped == 0


def test_batched_counts_equal_one_client_at_a_time():
    x = _random_binary(50, 20)
    mech = BitFlip.symmetric(1.0)
    msgs = client.obfuscate(x, mech, np.random.default_rng(5))
    bits = msgs.unpack()
    batched = server.PairCounts(20)
    batched.add(msgs)
    single = server.PairCounts(20)
    for row in bits:
        single.add(ObfuscatedBits.pack(row[None, :]))
    assert np.array_equal(batched.symmetric_block(0, 20), single.symmetric_block(0, 20))
    assert np.array_equal(batched.col, single.col)


@pytest.mark.parametrize("flip", ["symmetric", "asymmetric", "oue"])
def test_unbiased_pair_counts(flip):
    """Mean of n_hat = A^-1 m over repeated obfuscations recovers the true counts."""
    x = _random_binary(200, 6, 0.3, seed=1)
    d = x.toarray()
    true11 = d.T @ d
    mech = getattr(BitFlip, flip)(1.0)
    rng = np.random.default_rng(0)
    inv = mech.inverse_transition()
    draws = []
    for _ in range(400):
        c = _counts(x, mech, rng, batch=200)
        m = server._pair_state_counts(c, 0, 6)
        draws.append(np.einsum("ts,sbn->tbn", inv, m)[3])
    draws = np.array(draws)
    se = draws.std(0) / np.sqrt(len(draws))
    off = ~np.eye(6, dtype=bool)
    z = np.abs(draws.mean(0) - true11)[off] / se[off]
    assert z.max() < 5


def test_eb_variance_formula_matches_simulation():
    """The known sampling variance used by dplcf-eb matches the empirical variance."""
    x = _random_binary(300, 4, 0.25, seed=2)
    mech = BitFlip.symmetric(1.0)
    rng = np.random.default_rng(1)
    inv, a = mech.inverse_transition(), mech.transition_matrix()
    w = (inv[3] ** 2) @ a - np.array([0, 0, 0, 1.0])
    d = x.toarray()
    true_counts = np.stack([((1 - d).T @ (1 - d)), ((1 - d).T @ d), (d.T @ (1 - d)), d.T @ d])
    predicted = np.einsum("t,tbn->bn", w, true_counts)
    draws = [np.einsum("ts,sbn->tbn", inv, server._pair_state_counts(
        _counts(x, mech, rng, 300), 0, 4))[3] for _ in range(600)]
    emp = np.var(draws, axis=0, ddof=1)
    off = ~np.eye(4, dtype=bool)
    assert np.allclose(emp[off], predicted[off], rtol=0.2)


def test_messages_round_trip():
    x = _random_binary(7, 13)
    msg = client.obfuscate(x, BitFlip.oue(1.0), np.random.default_rng(0))
    back = ObfuscatedBits.from_bytes(msg.to_bytes())
    assert np.array_equal(back.unpack(), msg.unpack())
    sim = np.random.default_rng(0).random((13, 13)).astype(np.float32)
    nl = server.publish(sim, 4, include_full=True)
    assert nl.nbytes == len(nl.to_bytes())
    nl2 = NeighbourLists.from_bytes(nl.to_bytes())
    assert np.array_equal(nl.indices, nl2.indices) and np.array_equal(nl.full, nl2.full)


def test_top_k_excludes_self_and_is_sorted():
    sim = np.random.default_rng(0).random((30, 30)).astype(np.float32)
    sim = (sim + sim.T) / 2
    idx, val = top_k_neighbours(sim, 5, block=7)
    for i in range(30):
        assert i not in idx[i]
        others = np.delete(sim[i], i)
        assert np.allclose(np.sort(val[i])[::-1], np.sort(others)[::-1][:5])
        assert np.all(np.diff(val[i]) <= 0)


def test_user_neighbourhood_matches_definition():
    rng = np.random.default_rng(0)
    sim = rng.random((12, 12)).astype(np.float32)
    hist = _random_binary(5, 12, 0.4, seed=3)
    got = score_user_neighbourhood(hist, sim, 3)
    for u in range(5):
        h = hist[u].indices
        for i in range(12):
            vals = np.sort([sim[i, j] for j in h if j != i])[::-1][:3]
            assert got[u, i] == pytest.approx(vals.sum(), rel=1e-5)


def test_private_systems_learn_and_noise_hurts():
    from dprec.data.synthetic import synthetic
    from dprec.evaluation.runner import Experiment

    ds = synthetic(800, 300, 40_000, rng=3)
    exp = Experiment(ds, [0])

    def hr(flip, est, eps):
        cfg = LocalItemCFConfig(flip=flip, estimator=est, epsilon=eps, neighbours=20)
        return exp.run(lambda: LocalItemCF("x", cfg)).metrics["sampled"]["HR@10"]["mean"]

    ub = hr("none", "naive", 1.0)
    assert ub > 0.3
    assert hr("symmetric", "unbiased", 8.0) > ub - 0.05
    assert hr("symmetric", "unbiased", 0.05) < ub - 0.1


def test_config_validation():
    with pytest.raises(DprecError, match="epsilon must be > 0"):
        LocalItemCFConfig(epsilon=0.0)
    with pytest.raises(DprecError, match="neighbourhood"):
        LocalItemCFConfig(neighbourhood="global")  # type: ignore[arg-type]


def test_privacy_report_is_honest_about_asymmetric_flip():
    x = _random_binary(30, 10)
    m = LocalItemCF("dplcf-ap", LocalItemCFConfig(flip="asymmetric", neighbours=3))
    m.fit(x, np.random.default_rng(0))
    rep = m.privacy_report().to_json()
    assert rep["claimed"]["epsilon"] == 1.0
    assert rep["true"]["sides"] == "one"
    assert rep["levels"]["user"]["sides"] == "one"
    assert rep["levels"]["user_basic"]["epsilon"] == pytest.approx(10.0)
    d = m.diagnostics()
    assert d["clipped_fraction"] == pytest.approx(d["clipped_pairs"] / 100.0)


def _pair_counts_both_ways(x: np.ndarray, batch: int):
    out = {}
    for method in ("bits", "syrk"):
        c = server.PairCounts(x.shape[1], method)
        for s in range(0, x.shape[0], batch):
            c.add(ObfuscatedBits.pack(x[s:s + batch]))
        out[method] = c
    return out


@pytest.mark.parametrize(("n_users", "n_items"),
                         [(1, 1), (1, 9), (63, 1), (64, 5), (65, 70), (130, 17), (300, 64)])
def test_bit_counts_equal_syrk_counts(n_users, n_items):
    """The popcount path gives today's syrk counts exactly, batched or not."""
    x = (np.random.default_rng(n_users + n_items).random((n_users, n_items)) < 0.3)
    for batch in (1, 7, 64, n_users):
        c = _pair_counts_both_ways(x.astype(np.uint8), batch)
        bits, syrk = c["bits"], c["syrk"]
        assert bits.m11.dtype == np.int32 and syrk.m11.dtype == np.float32
        np.testing.assert_array_equal(bits.m11, syrk.m11.astype(np.int64))
        np.testing.assert_array_equal(bits.m11, x.T.astype(np.int64) @ x)
        np.testing.assert_array_equal(bits.col, syrk.col)
        assert bits.n_users == syrk.n_users == n_users
        np.testing.assert_array_equal(bits.symmetric_block(0, n_items),
                                      syrk.symmetric_block(0, n_items))


def test_pair_counts_from_summed_counts_read_as_accumulated():
    x = (np.random.default_rng(3).random((90, 12)) < 0.4).astype(np.uint8)
    whole = _pair_counts_both_ways(x, 90)["bits"]
    halves = [_pair_counts_both_ways(x[s], 45)["bits"] for s in (slice(0, 45), slice(45, 90))]
    given = server.PairCounts.from_counts(halves[0].m11 + halves[1].m11, 90)
    np.testing.assert_array_equal(given.m11, whole.m11)
    np.testing.assert_array_equal(given.col, whole.col)
    assert given.n_users == 90
    mech = BitFlip.symmetric(1.0)
    np.testing.assert_array_equal(server.estimate_similarity(given, mech, "unbiased").sim,
                                  server.estimate_similarity(whole, mech, "unbiased").sim)
    with pytest.raises(DprecError, match="square integer"):
        server.PairCounts.from_counts(np.zeros((3, 4), np.int32), 5)
    with pytest.raises(DprecError, match="n_users"):
        server.PairCounts.from_counts(np.zeros((3, 3), np.int32), -1)


def _numpy_similarity(counts, mechanism, estimator):
    """The blockwise numpy estimate the fused kernel replaced: (4, b, N) counts, A^-1, Jaccard."""
    from dprec.models.itemknn import jaccard_from_counts

    m = server._pair_state_counts(counts, 0, counts.n_items)
    if mechanism is not None and estimator == "unbiased":
        m = np.einsum("ts,sbn->tbn", mechanism.inverse_transition(), m)
    return jaccard_from_counts(m[3], float(counts.n_users) - m[0])


@pytest.mark.parametrize("flip", ["none", "symmetric", "asymmetric", "oue"])
@pytest.mark.parametrize("estimator", ["naive", "unbiased"])
@pytest.mark.parametrize("method", ["bits", "syrk"])
def test_fused_similarity_is_bit_identical_to_numpy(flip, estimator, method):
    x = _random_binary(257, 45, 0.15, seed=4)
    mech = None if flip == "none" else getattr(BitFlip, flip)(0.7)
    counts = server.PairCounts(45, method)
    rng = np.random.default_rng(5)
    for s in range(0, 257, 100):
        counts.add(client.obfuscate(x[s:s + 100], mech, rng))
    est = server.estimate_similarity(counts, mech, estimator)
    sim, clipped = _numpy_similarity(counts, mech, estimator)
    np.testing.assert_array_equal(est.sim, sim)
    assert est.clipped == clipped
    if mech is not None and estimator == "unbiased":
        assert clipped > 0  # the clipping branch is exercised


def test_server_count_methods_publish_the_same_lists():
    x = _random_binary(200, 30, 0.2, seed=6)
    mech = BitFlip.symmetric(1.0)
    msgs = [client.obfuscate(x[s:s + 50], mech, np.random.default_rng(s))
            for s in range(0, 200, 50)]
    lists = {}
    for method in ("bits", "syrk"):
        srv = server.SimilarityServer(30, mech, "unbiased", 5, True, count_method=method)
        lists[method] = srv.aggregate(iter(msgs), 0)
        assert srv.users_received == 200
    np.testing.assert_array_equal(lists["bits"].indices, lists["syrk"].indices)
    np.testing.assert_array_equal(lists["bits"].full, lists["syrk"].full)
    with pytest.raises(DprecError, match="count_method must be 'bits' or 'syrk', got 'gemm'"):
        server.SimilarityServer(30, mech, "unbiased", 5, True, count_method="gemm")  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="an upload has 31 items, expected 30"):
        server.PairCounts(30).add(ObfuscatedBits.pack(np.ones((2, 31), np.uint8)))
