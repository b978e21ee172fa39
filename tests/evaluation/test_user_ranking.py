import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit, LeaveOneOutSplit, UserFold, UserSplit
from dprec.evaluation.user_ranking import (
    UserRankingEvaluator,
    evaluate_user_ranking,
    user_targets,
)
from dprec.systems.base import Ranker, check_history
from dprec.systems.baselines import Popularity
from dprec.systems.registry import make_system

N_USERS, N_ITEMS = 5, 8


def _csr(entries: dict[tuple[int, int], float], shape=(N_USERS, N_ITEMS)) -> sp.csr_matrix:
    (rows, cols), vals = zip(*entries.keys(), strict=True), list(entries.values())
    m = sp.csr_matrix((np.asarray(vals, np.float32), (rows, cols)), shape=shape)
    m.sort_indices()
    return m


TRAIN_USERS = {(0, 0): 5, (0, 1): 2, (0, 2): 4, (1, 3): 3, (1, 4): 4, (1, 7): 5}
FINE = {(2, 0): 5, (2, 1): 2, (3, 7): 4, (4, 3): 5}
# user 2: targets 2, 3, 5 and a negative (4); never interacted: 6, 7
# user 3: target 0 and a negative (rating 3 is not > 3); never interacted: 1, 2, 3, 4, 5
# user 4: only a negative held out: not averaged
TEST = [(2, 2, 5), (2, 3, 4), (2, 4, 1), (2, 5, 5), (3, 0, 5), (3, 6, 3), (4, 4, 2)]


def _tiny_fold() -> UserFold:
    users, items, ratings = (np.asarray(c) for c in zip(*TEST, strict=True))
    return UserFold(index=0, train=_csr({**TRAIN_USERS, **FINE}), test_users=users,
                    test_items=items, test_ratings=ratings.astype(np.float32),
                    train_users=np.array([0, 1]), test_user_ids=np.array([2, 3, 4]),
                    fine_tune=_csr(FINE), moved_to_train=0)


# explicit scores: high scores on everything that must not be a candidate
SCORES = {
    2: [10, 10, 0.9, 0.4, 10, 0.1, 0.5, 0.3],   # ranks of targets 2, 3, 5: 0, 1, 2
    3: [0.2, 0.3, 0.1, 0.0, 0.05, 0.25, 9, 9],  # rank of target 0: 2
}


class Scripted(Ranker):
    """Scores test users in the order ``order`` from ``table`` (n_users x n_items); records
    every (history, users) it is called with."""

    name = "scripted"

    def __init__(self, table: np.ndarray, order: np.ndarray, uses_ratings: bool = False):
        self.table, self.order, self.uses_ratings = table, list(order), uses_ratings
        self.calls: list[tuple[sp.csr_matrix, np.ndarray]] = []
        self.scored: list[int] = []

    def fit(self, train, rng, on_iteration=None):
        return self

    def score(self, history, items=None, users=None):
        history, items, users = check_history(history, self.table.shape[1], items, users)
        self.calls.append((history, users))
        b = history.shape[0]
        who, self.order = self.order[:b], self.order[b:]
        self.scored.extend(who)
        return self.table[who].copy()


def _scripted(table: dict[int, list[float]] | np.ndarray, order=(2, 3), **kw) -> Scripted:
    if isinstance(table, dict):
        full = np.zeros((N_USERS, N_ITEMS))
        for u, row in table.items():
            full[u] = row
        table = full
    return Scripted(np.asarray(table, np.float64), np.asarray(order), **kw)


def _evaluate(model, fold=None, ks=(1, 2, 3), seed=0):
    fold = fold if fold is not None else _tiny_fold()
    ev = UserRankingEvaluator(ks)
    return ev.evaluate(model, fold, None, np.random.default_rng(seed))["full"]


def test_hand_computed_hits_and_ndcg_are_per_user_means():
    m = _evaluate(_scripted(SCORES))
    l3 = 1 / np.log2(3)
    # user 2 ranks (0, 1, 2), user 3 rank 2; each user weighs 1/2 whatever their targets
    want = {
        "HR@1": (1 / 3 + 0) / 2, "HR@2": (2 / 3 + 0) / 2, "HR@3": (1 + 1) / 2,
        "NDCG@1": (1 / 3 + 0) / 2, "NDCG@2": ((1 + l3) / 3 + 0) / 2,
        "NDCG@3": ((1 + l3 + 0.5) / 3 + 0.5) / 2,
    }
    assert m == pytest.approx(want, rel=1e-12, abs=0)
    assert list(m) == ["HR@1", "HR@2", "HR@3", "NDCG@1", "NDCG@2", "NDCG@3"]
    # pooling the 4 targets instead would give HR@2 = 2/4
    assert m["HR@2"] != pytest.approx(0.5)


def test_only_never_interacted_items_are_candidates():
    base = _evaluate(_scripted(SCORES))
    # raising every non-candidate (fine-tune items, held-out negatives, the other targets)
    # above all targets changes nothing
    table = {u: list(r) for u, r in SCORES.items()}
    for i in (0, 1, 4):
        table[2][i] = 100.0
    for i in (6, 7):
        table[3][i] = 100.0
    assert _evaluate(_scripted(table)) == base
    # ... while raising a never-interacted item above a target costs a rank
    table[3][3] = 0.21
    moved = _evaluate(_scripted(table))
    assert moved["HR@3"] == pytest.approx(0.5) and base["HR@3"] == 1.0


def test_a_target_is_not_ranked_against_the_users_other_targets():
    # user 2's three targets all score above every never-interacted item: each ranks 0
    table = {2: [0, 0, 0.9, 0.8, 0, 0.7, 0.1, 0.1], 3: SCORES[3]}
    m = _evaluate(_scripted(table))
    assert m["HR@1"] == pytest.approx((1 + 0) / 2)
    assert m["NDCG@1"] == pytest.approx(0.5)


def test_users_without_a_positive_are_counted_not_averaged():
    fold = _tiny_fold()
    t = user_targets(fold, 3.0)
    assert t.users.tolist() == [2, 3]
    assert t.describe() == {"test_users": 3, "test_users_with_targets": 2,
                            "test_users_without_targets": 1, "targets": 4}
    assert [t.targets[r].indices.tolist() for r in range(2)] == [[2, 3, 5], [0]]
    assert [t.seen[r].indices.tolist() for r in range(2)] == [[0, 1, 2, 3, 4, 5], [0, 6, 7]]
    model = _scripted(SCORES)
    _evaluate(model, fold)
    assert model.scored == [2, 3]  # user 4 is not scored
    ev = UserRankingEvaluator()
    assert ev.describe_fold(fold, t) == t.describe()


@pytest.mark.parametrize("uses_ratings", [False, True])
def test_history_is_the_fine_tune_half_with_unknown_users(uses_ratings: bool):
    model = _scripted(SCORES, uses_ratings=uses_ratings)
    _evaluate(model)
    [(history, users)] = model.calls
    assert users.tolist() == [-1, -1]
    want = _csr(FINE)[[2, 3]]
    if not uses_ratings:
        want = _csr({(2, 0): 1, (3, 7): 1}, shape=(N_USERS, N_ITEMS))[[2, 3]]
    assert history.shape == want.shape
    assert (history != want).nnz == 0
    assert history.nnz == want.nnz


def test_train_matrix_empties_test_users_and_follows_uses_ratings():
    fold, ev = _tiny_fold(), UserRankingEvaluator()
    binary = ev.train_matrix(fold, _scripted(SCORES))
    ratings = ev.train_matrix(fold, _scripted(SCORES, uses_ratings=True))
    for m in (binary, ratings):
        assert m.shape == (N_USERS, N_ITEMS) and m.dtype == np.float32
        assert m.has_canonical_format and m[2:].nnz == 0
    assert (ratings != _csr(TRAIN_USERS)).nnz == 0
    assert binary.data.tolist() == [1.0] * 4
    assert {tuple(x) for x in zip(*binary.nonzero(), strict=True)} == {
        (0, 0), (0, 2), (1, 4), (1, 7)}
    assert (ev.train_matrix(fold) != binary).nnz == 0  # no model: positives


@pytest.fixture(scope="module")
def big():
    ds = synthetic(2000, 100, 90_000, rng=5)
    [fold] = UserSplit(0.5).folds(ds, np.random.default_rng(0))
    return ds, fold


def _order(fold: UserFold, threshold: float = 3.0) -> np.ndarray:
    return np.unique(fold.test_users[fold.test_ratings > threshold])


def test_oracle_scorer_is_perfect(big):
    _, fold = big
    table = np.zeros(fold.train.shape)
    pos = fold.test_ratings > 3
    table[fold.test_users[pos], fold.test_items[pos]] = 1.0
    m = _evaluate(Scripted(table, _order(fold)), fold, ks=(1, 5))
    assert m == {"HR@1": 1.0, "HR@5": 1.0, "NDCG@1": 1.0, "NDCG@5": 1.0}


def test_constant_scorer_ranks_uniformly_among_the_candidates(big):
    _, fold = big
    ks = (1, 5, 10)
    m = _evaluate(Scripted(np.zeros(fold.train.shape), _order(fold)), fold, ks=ks, seed=3)
    t = user_targets(fold, 3.0)
    cands = fold.train.shape[1] - np.diff(t.seen.indptr) + 1  # never-interacted + target
    n_targets = np.diff(t.targets.indptr)
    N = len(t.users)
    assert N > 600
    for k in ks:
        p = np.minimum(k, cands) / cands
        gain = np.array([np.sum(1 / np.log2(np.arange(min(k, c)) + 2)) / c for c in cands])
        gain2 = np.array([np.sum(1 / np.log2(np.arange(min(k, c)) + 2) ** 2) / c
                          for c in cands])
        # per-user mean of independent uniform ranks; 6 standard deviations of the mean
        sd_hr = np.sqrt(np.sum(p * (1 - p) / n_targets)) / N
        sd_ndcg = np.sqrt(np.sum((gain2 - gain ** 2) / n_targets)) / N
        assert m[f"HR@{k}"] == pytest.approx(p.mean(), abs=6 * sd_hr)
        assert m[f"NDCG@{k}"] == pytest.approx(gain.mean(), abs=6 * sd_ndcg)
        if k >= 5:  # the check has teeth: all items as candidates would be caught
            wrong = np.minimum(k, fold.train.shape[1]) / fold.train.shape[1]
            assert abs(p.mean() - wrong) > 12 * sd_hr, (k, p.mean(), wrong, sd_hr)


def test_batching_does_not_change_the_result(big):
    _, fold = big
    t = user_targets(fold, 3.0)
    ks = (5, 10)
    a = evaluate_user_ranking(Scripted(np.zeros(fold.train.shape), t.users), fold, t,
                              np.random.default_rng(1), ks, 3.0)
    b = evaluate_user_ranking(Scripted(np.zeros(fold.train.shape), t.users), fold, t,
                              np.random.default_rng(1), ks, 3.0, batch_users=7)
    assert a == b


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_scores_are_an_error_naming_the_system(bad):
    table = {u: list(r) for u, r in SCORES.items()}
    table[3][6] = bad  # even on an item that is not a candidate
    with pytest.raises(DprecError, match=r"scripted\.score returned 1 NaN or infinite"):
        _evaluate(_scripted(table))


def test_wrong_score_shape_is_an_error():
    class Short(Scripted):
        def score(self, history, items=None, users=None):
            return super().score(history, items, users)[:, :-1]

    with pytest.raises(DprecError, match=r"scripted\.score returned shape \(2, 7\), "
                                         r"expected \(2, 8\)"):
        _evaluate(Short(np.zeros((N_USERS, N_ITEMS)), np.array([2, 3])))


def test_wrong_split_or_system_is_an_error():
    ds = synthetic(60, 100, 1_500, rng=0)
    for split in (LeaveOneOutSplit("random"), KFoldSplit(3)):
        with pytest.raises(DprecError, match="needs a user split"):
            Experiment(ds, [0], split, UserRankingEvaluator()).run(
                lambda: make_system("random"))
    [kfold] = KFoldSplit(3).folds(ds, np.random.default_rng(0))[:1]
    with pytest.raises(DprecError, match="needs a user split .*got k-fold"):
        UserRankingEvaluator().train_matrix(kfold)
    with pytest.raises(DprecError, match="needs a user split"):
        UserRankingEvaluator().evaluate(_scripted(SCORES), kfold, None,
                                        np.random.default_rng(0))
    with pytest.raises(DprecError, match="ranking needs a ranker"):
        Experiment(ds, [0], UserSplit(0.2), UserRankingEvaluator()).run(
            lambda: make_system("bias"))

    class NoFoldIn(Scripted):
        supports_unknown_users = False

    with pytest.raises(DprecError, match="scripted cannot score users unseen at training"):
        _evaluate(NoFoldIn(np.zeros((N_USERS, N_ITEMS)), np.array([2, 3])))


def test_implicit_data_under_the_default_threshold_is_an_error():
    ds = synthetic(60, 100, 1_500, rng=0)
    ds.matrix.data[:] = 1.0
    with pytest.raises(DprecError, match=r"held-out rating > threshold \(3\)"):
        Experiment(ds, [0], UserSplit(0.2), UserRankingEvaluator()).folds(0)


@pytest.mark.parametrize("kwargs, message", [
    ({"ks": ()}, "ks must be a non-empty list of integers >= 1"),
    ({"ks": (0, 5)}, "ks must be a non-empty list of integers >= 1"),
    ({"ks": (2.5,)}, "ks must be a non-empty list of integers >= 1"),
    ({"ks": ("5",)}, "ks must be a non-empty list of integers >= 1"),
    ({"ks": 5}, "ks must be a non-empty list of integers >= 1"),
    ({"ks": (True,)}, "ks must be a non-empty list of integers >= 1"),
    ({"threshold": float("nan")}, "threshold must be a finite number"),
    ({"threshold": "3"}, "threshold must be a finite number"),
])
def test_bad_configs(kwargs, message):
    with pytest.raises(DprecError, match=message):
        UserRankingEvaluator(**kwargs)


def test_numpy_numbers_are_accepted():
    ev = UserRankingEvaluator([np.int64(5), 10], np.float32(3.5))
    assert ev.ks == (5, 10) and type(ev.ks[0]) is int and ev.threshold == 3.5


def test_describe():
    d = UserRankingEvaluator().describe()
    assert d["task"] == "ranking" and d["ks"] == [5, 10, 20, 30] and d["threshold"] == 3.0
    assert "never-interacted" in d["protocol"] and "per-user mean" in d["protocol"]
    assert "random" in d["ties"]


@pytest.fixture(scope="module")
def ds():
    return synthetic(300, 200, 12_000, rng=2)


def test_end_to_end_popularity_beats_random(ds):
    exp = Experiment(ds, [0, 1, 2], UserSplit(0.2), UserRankingEvaluator())
    pop = exp.run(lambda: make_system("popularity"))
    rnd = exp.run(lambda: make_system("random"))
    keys = [f"{m}@{k}" for m in ("HR", "NDCG") for k in (5, 10, 20, 30)]
    assert list(pop.metrics["full"]) == keys
    for key in keys:
        assert pop.metrics["full"][key]["mean"] > 2 * rnd.metrics["full"][key]["mean"]
    assert pop.protocol["evaluated"]["test_users"] == 60
    assert pop.protocol["protocol"].startswith("user split")
    assert len(pop.per_seed) == 3


class _SideStub(Popularity):
    name = "side-stub"
    uses_side_features = True
    log: list[tuple[str, object]] = []

    def set_side_features(self, features):
        self.log.append(("set", features))
        self._features = features

    def fit(self, train, rng, on_iteration=None):
        self.log.append(("fit", getattr(self, "_features", None)))
        return super().fit(train, rng, on_iteration)


class _PlainStub(_SideStub):
    name = "plain-stub"
    uses_side_features = False


def test_runner_hands_side_features_once_per_fit(ds, monkeypatch):
    computed: list[object] = []
    sentinel = object()

    def side_features(dataset):
        computed.append(dataset)
        return sentinel

    fake = types.ModuleType("dprec.data.features")
    fake.side_features = side_features
    monkeypatch.setitem(sys.modules, "dprec.data.features", fake)
    exp = Experiment(ds, [0, 1, 2], UserSplit(0.2), UserRankingEvaluator())
    _SideStub.log = []
    exp.run(_SideStub)
    exp.run(_SideStub)
    assert _SideStub.log == [("set", sentinel), ("fit", sentinel)] * 6
    assert computed == [ds]  # computed once per experiment
    _PlainStub.log = []
    exp.run(_PlainStub)
    assert _PlainStub.log == [("fit", None)] * 3


def test_set_side_features_is_refused_by_default():
    with pytest.raises(DprecError, match="random does not use side features"):
        make_system("random").set_side_features(object())
    assert not make_system("random").uses_side_features
    assert not make_system("random").uses_ratings


def test_runner_passes_the_model_to_train_matrix(ds):
    seen: list[sp.csr_matrix] = []

    class RatingsPop(Popularity):
        uses_ratings = True

        def fit(self, train, rng, on_iteration=None):
            seen.append(train)
            return super().fit(train, rng, on_iteration)

    exp = Experiment(ds, [0], UserSplit(0.2), UserRankingEvaluator())
    exp.run(RatingsPop)
    [fold, _] = exp.folds(0)[0]
    [train] = seen
    assert train.data.max() == 5.0 and train.data.min() == 1.0
    assert train[fold.test_user_ids].nnz == 0
    assert train.nnz == fold.train.nnz - fold.fine_tune.nnz
