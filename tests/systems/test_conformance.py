"""The contract every registered system passes (LensKit's ScorerTests, for dprec).

Ranking: output shapes (all items and candidates), candidates equal to the full scores,
same seed gives the same scores, an empty history, an unknown user (a fold-in where the
system supports it, a clear error where not), and a quality floor on a small synthetic set.
Rating: shapes, determinism, unknown users and items, a quality floor.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.registry import load_dataset
from dprec.data.synthetic import synthetic
from dprec.evaluation.runner import Experiment
from dprec.systems.base import Ranker, RatingPredictor, UnknownUserError
from dprec.systems.registry import SYSTEMS, make_system

RANKING = [n for n, s in SYSTEMS.items() if s.task == "ranking" and s.protocol == "default"]
"""Side-feature systems (the PrivRec protocol) have their own contract: tests/systems/
test_privrec_contract.py."""
RATING = [n for n, s in SYSTEMS.items() if s.task == "rating"]

FLOOR_DATASET = "synthetic-400x300"
RANDOM_HR10 = 0.10
"""Sampled HR@10 of any ranking that ignores the data: 10 of 100 candidates."""
ABOVE_RANDOM = RANDOM_HR10 + 0.06
"""The least floor: random's HR@10 over the 400 test users has standard deviation
sqrt(0.1 * 0.9 / 400) = 0.015, so a floor 4 of them above it cannot be reached by chance
(a constant model scores 0.10)."""
HR10_FLOOR = {
    # sampled HR@10 on synthetic-400x300 (latest split, seed 0) must reach these; measured
    # values at the refactor are in tests/golden/synthetic_400x300_metrics.json
    "random": RANDOM_HR10,  # not a floor: random must stay within 0.06 of it (4 sd)
    "popularity": 0.40, "lcf-ub": 0.55, "lcf-sp": 0.35, "lcf-ap": 0.45,
    "dplcf-sp": 0.18,  # measured 0.2175
    "dplcf-ap": 0.22, "dplcf-eb": 0.40,
    "dplcf-oue": 0.45,  # at eps 4 (FLOOR_PARAMS): measured 0.53; at eps 1 0.0925 (random)
    "bpr-mf": 0.16,  # measured 0.17
    "gmf": 0.20,  # measured 0.295 when added (not in the golden file)
    "mf-np": 0.38, "fcf": 0.42, "fmf-ldp": 0.30,
    "dp-pop": 0.35,  # measured 0.51 at eps 1 when added
    "ldp-pop": 0.30,  # at eps 4 (FLOOR_PARAMS): measured 0.375; at eps 1 0.0975 (random)
    "dpals": 0.16,  # measured 0.1825 at eps 1 when added (400 users: little signal at eps 1)
    "dp-fedavg": 0.42,  # measured 0.5225 at eps 1 when added (popularity: 0.5375)
    "ease": 0.60,  # measured 0.685 at lambda 500 when added (full-ranking HR@10 0.49)
    "item-knn": 0.60,  # measured 0.6775 at 100 neighbours, shrinkage 0 when added
}
FLOOR_PARAMS: dict[str, dict[str, object]] = {
    "dplcf-oue": {"epsilon": 4.0}, "ldp-pop": {"epsilon": 4.0},
}
"""Settings of the floor run where the default's eps 1 does not beat random on 400 users
(their HR@10 at eps 1 is random's: one OUE report per user is too noisy at this size)."""
FAST = {"epochs": 3}


def _small(name: str) -> dict[str, object]:
    keys = SYSTEMS[name].settable()
    return {k: v for k, v in FAST.items() if k in keys}


@functools.cache
def _train() -> sp.csr_matrix:
    return synthetic(120, 50, 2_600, rng=4).binary()


@functools.cache
def _fitted(name: str, seed: int = 0) -> Ranker:
    model = make_system(name, _small(name))
    assert isinstance(model, Ranker)
    return model.fit(_train(), np.random.default_rng(seed))


def test_every_system_is_covered():
    assert set(HR10_FLOOR) == set(RANKING)
    assert RATING, "at least one rating system is registered"


@pytest.mark.parametrize("name", RANKING)
def test_shapes_and_candidates(name):
    model, train = _fitted(name), _train()
    users = np.arange(7)
    full = model.score(train[users], users=users)
    assert full.shape == (7, train.shape[1]) and np.all(np.isfinite(full))
    cands = np.random.default_rng(1).integers(0, train.shape[1], size=(7, 11))
    part = model.score(train[users], items=cands, users=users)
    assert part.shape == (7, 11)
    # float32 similarity kernels: the full sweep and the candidate path agree to float32
    np.testing.assert_allclose(part, np.take_along_axis(full, cands, 1), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", RANKING)
def test_same_seed_same_scores(name):
    train, users = _train(), np.arange(20)
    a = make_system(name, _small(name)).fit(train, np.random.default_rng(3))
    b = make_system(name, _small(name)).fit(train, np.random.default_rng(3))
    np.testing.assert_array_equal(a.score(train[users], users=users),
                                  b.score(train[users], users=users))


@pytest.mark.parametrize("name", RANKING)
def test_empty_history(name):
    model, n_items = _fitted(name), _train().shape[1]
    empty = sp.csr_matrix((2, n_items))
    s = model.score(empty, users=np.array([0, 1]))
    assert s.shape == (2, n_items) and np.all(np.isfinite(s))


@pytest.mark.parametrize("name", RANKING)
def test_unknown_user_folds_in_or_fails_clearly(name):
    model, train = _fitted(name), _train()
    history = train[[3]]
    if model.supports_unknown_users:
        s = model.score(history, users=np.array([-1]))
        assert s.shape == (1, train.shape[1]) and np.all(np.isfinite(s))
        np.testing.assert_array_equal(s, model.score(history))
    else:
        with pytest.raises(UnknownUserError, match=name):
            model.score(history, users=np.array([-1]))


def test_fold_in_gives_a_known_users_scores_from_the_history():
    """History-only systems score a user the same whether or not they were seen at training."""
    train, users = _train(), np.arange(5)
    for name in ("dplcf-sp", "fmf-ldp", "popularity"):
        model = _fitted(name)
        np.testing.assert_allclose(model.score(train[users], users=users),
                                   model.score(train[users]), rtol=1e-12)


@pytest.mark.parametrize("name", RANKING)
def test_bad_score_arguments_are_refused(name):
    from dprec.errors import DprecError
    model, train = _fitted(name), _train()
    with pytest.raises(DprecError, match="item columns"):
        model.score(train[:2, :-1], users=np.arange(2))
    with pytest.raises(DprecError, match="items must be in"):
        model.score(train[:2], items=np.full((2, 3), train.shape[1]), users=np.arange(2))
    with pytest.raises(DprecError, match="users must have shape"):
        model.score(train[:2], users=np.arange(3))


@pytest.fixture(scope="module")
def floor_experiment():
    return Experiment(load_dataset(FLOOR_DATASET), [0])


def test_every_floor_is_above_random():
    for name, floor in HR10_FLOOR.items():
        assert name == "random" or floor >= ABOVE_RANDOM, name


@pytest.mark.parametrize("name", RANKING)
def test_quality_floor(name, floor_experiment):
    params = FLOOR_PARAMS.get(name, {})
    hr = floor_experiment.run(lambda: make_system(name, params)).metrics["sampled"]["HR@10"][
        "mean"]
    if name == "random":
        assert abs(hr - RANDOM_HR10) <= ABOVE_RANDOM - RANDOM_HR10
    else:
        assert hr >= HR10_FLOOR[name]


# -- implicit's checkerboard known answer ----------------------------------------------------

CONSTANT = {"random", "popularity", "dp-pop", "ldp-pop"}
"""Systems that rank the items the same for every user (random: independently of the data),
which the checkerboard refuses by design."""
CHECKERBOARD_HITS = 0.8
"""A personalised system must rank each user's held-back item first among the items it has
not seen for at least this share of the users; any constant ranking reaches at most 0.5."""


def checkerboard(n_users: int = 120, n_items: int = 40) -> tuple[sp.csr_matrix, np.ndarray]:
    """benfred/implicit's checkerboard: user u likes item i when u + i is even; one liked item
    per user, ``held[u]``, is held back from the training matrix (3 users per item)."""
    u, i = np.meshgrid(np.arange(n_users), np.arange(n_items), indexing="ij")
    liked = (u + i) % 2 == 0
    users = np.arange(n_users)
    held = 2 * (users % (n_items // 2)) + users % 2
    liked[users, held] = False
    return sp.csr_matrix(liked.astype(np.float64)), held


def checkerboard_hits(scores: np.ndarray, train: sp.csr_matrix, held: np.ndarray) -> float:
    """The share of users whose best-scored unseen item is their held-back one. The best item
    of a constant ranking is unseen and of the wrong parity for every user of the other
    parity (half of them), so a constant model scores at most 0.5."""
    unseen = np.where(train.toarray() > 0, -np.inf, scores)
    return float(np.mean(unseen.argmax(axis=1) == held))


def test_the_checkerboard_refuses_any_constant_ranking():
    train, held = checkerboard()
    n_users, n_items = train.shape
    for ranking in (np.arange(n_items), np.argsort(np.arange(n_items) % 2, kind="stable"),
                    np.random.default_rng(0).permutation(n_items)):
        scores = np.empty(n_items)
        scores[ranking] = -np.arange(n_items, dtype=np.float64)
        assert checkerboard_hits(np.tile(scores, (n_users, 1)), train, held) <= 0.5


@pytest.mark.parametrize("name", RANKING)
def test_checkerboard_known_answer(name):
    """Each user's top recommendation is the item held back (implicit's test), at eps 8
    where the system has one (a test of the algorithm, not of the privacy)."""
    train, held = checkerboard()
    params = {"epsilon": 8.0} if "epsilon" in SYSTEMS[name].settable() else {}
    model = make_system(name, params).fit(train, np.random.default_rng(0))
    users = np.arange(train.shape[0])
    hits = checkerboard_hits(model.score(train, users=users), train, held)
    if name in CONSTANT:
        assert hits <= 0.5
    else:
        assert hits >= CHECKERBOARD_HITS, f"{name}: {hits:.2f}"


@pytest.fixture(scope="module")
def ratings():
    rng = np.random.default_rng(0)
    n_users, n_items = 150, 60
    u = rng.integers(0, n_users, 4_000)
    i = rng.integers(0, n_items, 4_000)
    bu, bi = rng.normal(0, 0.6, n_users), rng.normal(0, 0.6, n_items)
    r = np.clip(np.rint(3.5 + bu[u] + bi[i] + rng.normal(0, 0.5, u.size)), 1, 5)
    m = sp.coo_matrix((r, (u, i)), shape=(n_users, n_items)).tocsr()
    m.sum_duplicates()
    m.data = np.clip(m.data, 1, 5)
    return m


def _rating_system(name: str):
    """A fresh rating system, handed the data's declared 1..5 scale as an experiment does."""
    model = make_system(name)
    if model.uses_rating_scale:
        model.set_rating_scale((1.0, 5.0))
    return model


@pytest.mark.parametrize("name", RATING)
def test_rating_contract(name, ratings):
    a = _rating_system(name).fit(ratings, np.random.default_rng(0))
    b = _rating_system(name).fit(ratings, np.random.default_rng(0))
    assert isinstance(a, RatingPredictor)
    users, items = np.array([0, 1, 2, 10**6, -1]), np.array([0, 5, 10**6, 1, 2])
    p = a.predict(users, items)
    assert p.shape == (5,) and np.all(np.isfinite(p))
    np.testing.assert_array_equal(p, b.predict(users, items))
    assert a.predict(np.array([], np.int64), np.array([], np.int64)).shape == (0,)


@pytest.mark.parametrize("name", RATING)
def test_rating_quality_floor(name, ratings):
    """Non-private systems beat the global mean on their training data; private ones at their
    default eps must at least not diverge (dpsgd-mf at eps 1 cannot beat the mean on 4,000
    ratings: its noisy mean alone has sd ~0.3)."""
    model = _rating_system(name).fit(ratings, np.random.default_rng(0))
    coo = ratings.tocoo()
    rmse = float(np.sqrt(np.mean((model.predict(coo.row, coo.col) - coo.data) ** 2)))
    factor = 1.5 if SYSTEMS[name].private else 1.01
    assert rmse < float(np.std(coo.data)) * factor
