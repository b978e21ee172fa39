import numpy as np
import pytest
import scipy.sparse as sp

from dprec.errors import DataError, DprecError
from dprec.models import BPRMF, BPRConfig


def block_data(seed=0, n_users=120, n_items=160, n_blocks=4, p_in=0.5, p_out=0.02):
    """Users like items of their own block; one positive per user is held out."""
    rng = np.random.default_rng(seed)
    gu = np.arange(n_users) % n_blocks
    gi = np.arange(n_items) % n_blocks
    prob = np.where(gu[:, None] == gi[None, :], p_in, p_out)
    D = rng.random((n_users, n_items)) < prob
    held = np.array([rng.choice(np.flatnonzero(row)) for row in D])
    train = D.copy()
    train[np.arange(n_users), held] = False
    return sp.csr_matrix(train.astype(np.float64)), held


def held_out_auc(scores, train, held):
    """Mean over users of the fraction of unseen items scored below the held-out item."""
    seen = train.toarray() > 0
    aucs = []
    for u, h in enumerate(held):
        negatives = ~seen[u]
        negatives[h] = False
        aucs.append(np.mean(scores[u, negatives] < scores[u, h]))
    return float(np.mean(aucs))


def test_held_out_auc_on_block_data():
    R, held = block_data()
    model = BPRMF(BPRConfig(factors=16, epochs=30)).fit(R, np.random.default_rng(1))
    scores = model.score(np.arange(R.shape[0]))
    assert scores.shape == R.shape
    assert held_out_auc(scores, R, held) > 0.8
    # a random model scores about 0.5: the check above can fail
    rand = np.random.default_rng(2).normal(size=scores.shape)
    assert held_out_auc(rand, R, held) < 0.6


def test_fit_is_deterministic_given_the_seed():
    R, _ = block_data(seed=3, n_users=40, n_items=50)
    cfg = BPRConfig(factors=4, epochs=3)
    a = BPRMF(cfg).fit(R, np.random.default_rng(4))
    b = BPRMF(cfg).fit(R, np.random.default_rng(4))
    c = BPRMF(cfg).fit(R, np.random.default_rng(5))
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert not np.allclose(a.item_factors, c.item_factors)


def test_tracking_the_loss_does_not_change_the_model():
    R, _ = block_data(seed=6, n_users=40, n_items=50)
    cfg = BPRConfig(factors=4, epochs=3)
    a = BPRMF(cfg).fit(R, np.random.default_rng(7))
    b = BPRMF(cfg).fit(R, np.random.default_rng(7), track_loss=True)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert len(b.loss_history) == 3 and a.loss_history == []


def test_bpr_loss_decreases_over_epochs():
    R, _ = block_data(seed=8)
    model = BPRMF(BPRConfig(factors=16, epochs=20)).fit(
        R, np.random.default_rng(9), track_loss=True)
    losses = np.array(model.loss_history)
    assert losses[0] > 0.6  # close to ln 2 for tiny initial factors
    assert losses[-1] < 0.5 * losses[0]
    assert np.all(np.diff(losses) < 0), losses


def test_dense_obfuscated_input_and_full_rows():
    """30% ones (as after bit flipping) plus a user who has every item and one with none."""
    rng = np.random.default_rng(10)
    D = (rng.random((50, 40)) < 0.3).astype(float)
    D[0] = 1.0
    D[1] = 0.0
    model = BPRMF(BPRConfig(factors=8, epochs=5)).fit(sp.csr_matrix(D), rng)
    assert model.user_factors.shape == (50, 8)
    assert np.all(np.isfinite(model.user_factors)) and np.all(np.isfinite(model.item_factors))


def test_full_user_is_never_updated():
    rng = np.random.default_rng(11)
    D = (rng.random((20, 15)) < 0.3).astype(float)
    D[0] = 1.0
    cfg = BPRConfig(factors=3, epochs=4, init_scale=0.1)
    model = BPRMF(cfg).fit(sp.csr_matrix(D), np.random.default_rng(12))
    W_init = cfg.init_scale * np.random.default_rng(12).standard_normal((20, 3))
    np.testing.assert_array_equal(model.user_factors[0], W_init[0])
    assert not np.allclose(model.user_factors[2:], W_init[2:])


def test_only_positive_entries_count():
    """Explicit zeros and negative values are not positives."""
    R = sp.csr_matrix(
        (np.array([1.0, 0.0, -2.0, 3.0]), np.array([0, 1, 2, 3]), np.array([0, 4])),
        shape=(1, 5))
    with pytest.raises(DataError, match="no user with both a positive and a negative"):
        BPRMF().fit(sp.csr_matrix(np.ones((3, 4))), np.random.default_rng(0))
    model = BPRMF(BPRConfig(factors=2, epochs=1)).fit(R, np.random.default_rng(0))
    assert model.score(np.array([0])).shape == (1, 5)


def test_bad_input_and_unfitted():
    with pytest.raises(DprecError, match="scipy.sparse"):
        BPRMF().fit(np.ones((2, 2)), np.random.default_rng(0))
    with pytest.raises(DprecError, match="not fitted"):
        BPRMF().score(np.array([0]))
    with pytest.raises(DprecError, match="lower lr"):
        BPRMF(BPRConfig(lr=1e300, epochs=2)).fit(block_data(n_users=8, n_items=8)[0],
                                                 np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factors": 0}, "factors must be an integer >= 1, got 0"),
        ({"lr": 0.0}, "lr must be > 0, got 0.0"),
        ({"regularization": -0.1}, "regularization must be finite and >= 0, got -0.1"),
        ({"epochs": True}, "epochs must be an integer >= 1, got True"),
        ({"init_scale": 0}, "init_scale must be > 0, got 0"),
        ({"threads": -1}, "threads must be an integer >= 0, got -1"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(DprecError, match=match):
        BPRConfig(**kwargs)


def test_alias_table_reproduces_the_weights():
    from dprec.models.bpr import _alias_table

    w = np.array([0.0, 5.0, 1.0, 0.0, 10.0, 3.0, 1.0])
    prob, alias = _alias_table(w)
    implied = prob.copy()
    np.add.at(implied, alias, 1.0 - prob)
    np.testing.assert_allclose(implied / len(w), w / w.sum(), atol=1e-12)


@pytest.mark.parametrize("source", ["generator", "xoshiro"])
@pytest.mark.parametrize("bitset", [True, False])
def test_triple_sampler_is_uniform(monkeypatch, bitset, source):
    """(u, i) uniform over usable positives and j uniform over u's non-positives (chi-square)."""
    from scipy.stats import chisquare

    from dprec.models import bpr

    if not bitset:
        monkeypatch.setattr(bpr, "_BITSET_MAX_BYTES", 0)
    D = (np.random.default_rng(20).random((6, 70)) < 0.3).astype(float)
    D[0] = 1.0  # full: never sampled
    D[1] = 0.0  # empty: never sampled
    sampler = bpr._TripleSampler.build(bpr._positives(sp.csr_matrix(D)))
    assert (sampler.bits.size > 0) == bitset
    n = 200_000
    if source == "generator":
        t = sampler.sample(n, np.random.default_rng(21))
    else:  # a Hogwild thread's stream
        t = np.empty((n, 3), np.int64)
        bpr._sample_triples(*sampler.arrays(), bpr.thread_states(21, 1)[0], t)
    u, i, j = t[:, 0], t[:, 1], t[:, 2]
    assert np.all(D[u, i] == 1.0) and np.all(D[u, j] == 0.0)
    assert not np.isin(u, [0, 1]).any()
    usable = D.copy()
    usable[:2] = 0.0
    pairs = np.flatnonzero(usable.ravel())
    observed = np.bincount(u * 70 + i, minlength=D.size)[pairs]
    assert chisquare(observed).pvalue > 1e-4
    counts_u = np.bincount(u, minlength=6)
    negatives = (D == 0) & (np.arange(6) >= 2)[:, None]
    expected = (counts_u[:, None] / negatives.sum(axis=1).clip(min=1)[:, None] * negatives).ravel()
    observed_j = np.bincount(u * 70 + j, minlength=D.size)
    cells = np.flatnonzero(negatives.ravel())
    assert chisquare(observed_j[cells], expected[cells]).pvalue > 1e-4


def test_xoshiro_matches_the_reference_outputs():
    """xoshiro256** from state (1, 2, 3, 4): the first outputs of Blackman and Vigna's C code
    (the test vector of the rand_xoshiro crate)."""
    from dprec.models.bpr import xoshiro256ss

    state = np.array([1, 2, 3, 4], np.uint64)
    assert [int(xoshiro256ss(state)) for _ in range(10)] == [
        11520, 0, 1509978240, 1215971899390074240, 1216172134540287360, 607988272756665600,
        16172922978634559625, 8476171486693032832, 10595114339597558777, 2904607092377533576]


def test_thread_states_are_distinct_and_derived_from_the_seed():
    from dprec.models.bpr import thread_states

    a = thread_states(5, 4)
    assert a.shape == (4, 4) and a.dtype == np.uint64
    assert len({tuple(row) for row in a}) == 4
    np.testing.assert_array_equal(a, thread_states(5, 4))
    assert not np.array_equal(a, thread_states(6, 4))


def test_one_thread_is_the_serial_loop():
    """threads=1 is the default: the bit-reproducible serial loop (golden tests rely on it)."""
    R, _ = block_data(seed=8, n_users=40, n_items=50)
    a = BPRMF(BPRConfig(factors=4, epochs=3)).fit(R, np.random.default_rng(9))
    b = BPRMF(BPRConfig(factors=4, epochs=3, threads=1)).fit(R, np.random.default_rng(9))
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert BPRConfig().threads == 1


def test_hogwild_learns_as_well_as_the_serial_loop():
    """Two Hogwild threads: same quality at equal epochs (bits differ, races allowed)."""
    R, held = block_data()
    aucs = {}
    for threads in (1, 2):
        model = BPRMF(BPRConfig(factors=16, epochs=30, threads=threads)).fit(
            R, np.random.default_rng(1))
        aucs[threads] = held_out_auc(model.score(np.arange(R.shape[0])), R, held)
    assert aucs[2] > 0.8
    assert abs(aucs[2] - aucs[1]) < 0.05
    # all threads' steps happen: the loss falls as much as the serial loop's
    losses = {t: BPRMF(BPRConfig(factors=16, epochs=5, threads=t)).fit(
        R, np.random.default_rng(3), track_loss=True).loss_history for t in (1, 2)}
    assert losses[2][-1] < 0.9 * losses[2][0]
    assert losses[2][-1] == pytest.approx(losses[1][-1], rel=0.1)


def test_all_threads_setting_restores_numba_threads():
    import numba

    before = numba.get_num_threads()
    R, _ = block_data(seed=10, n_users=30, n_items=40)
    model = BPRMF(BPRConfig(factors=4, epochs=2, threads=0)).fit(R, np.random.default_rng(0))
    assert np.all(np.isfinite(model.item_factors))
    assert numba.get_num_threads() == before
